"""Node search: the sampled-mode target, sampled placement honouring filters, and the
per-class cache (a patched or reused evaluation must equal a fresh one)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.api.selectors import (
    Affinity,
    NodeSelectorTerm,
    PreferredNodeTerm,
    SpreadConstraint,
    Taint,
)
from berth.framework.config_files import load_config
from berth.framework.scheduler import Scheduler
from berth.framework.search import NodeSearch, SearchConfig, sample_target
from tests.builders import (
    HOST,
    ZONE,
    feasible,
    node,
    pod,
    req,
    run,
    scheduler,
    sel,
    term,
    weighted,
)

# ---------------------------------------------------------------------------- sample_target


def formula(n: int) -> int:
    return min(n, max(100, int(n * max(50 - n / 125, 5) / 100)))


@pytest.mark.parametrize(
    "n,expected",
    [
        (1, 1),
        (50, 50),
        (100, 100),
        (200, 100),
        (250, 120),
        (1000, 420),
        (2500, 750),
        (5000, 500),
        (6250, 312),
        (10000, 500),
        (100000, 5000),
    ],
)
def test_sample_target_table(n, expected):
    assert sample_target(n, SearchConfig()) == expected
    assert formula(n) == expected


@pytest.mark.parametrize("n", [2, 99, 101, 333, 777, 1250, 3125, 4999, 5001, 20000])
def test_sample_target_matches_the_formula(n):
    assert sample_target(n, SearchConfig()) == formula(n)


@pytest.mark.parametrize(
    "n,percentage,min_feasible,expected",
    [
        (1000, 10.0, 100, 100),
        (1000, 30.0, 100, 300),
        (1000, 100.0, 100, 1000),
        (50, 0.0, 10, 24),
        (5000, 0.0, 10, 500),
    ],
)
def test_sample_target_overrides(n, percentage, min_feasible, expected):
    config = SearchConfig(percentage=percentage, min_feasible=min_feasible)
    assert sample_target(n, config) == expected


# ---------------------------------------------------------------------------- sampled mode


def mixed_cluster(count: int = 150):
    """Every 3rd node is in pool x, every 5th tainted, every 7th nearly full of cpu."""
    nodes = []
    for i in range(count):
        nodes.append(
            node(
                f"n{i:03d}",
                zone=f"z{i % 4}",
                labels={"pool": "x"} if i % 3 == 0 else None,
                taints=[Taint("dedicated", "yes")] if i % 5 == 0 else (),
                cpu=500 if i % 7 == 0 else 4000,
            )
        )
    return nodes


def sampled(min_feasible: int | None = None) -> Scheduler:
    cfg = load_config(None)
    cfg.search.mode = "sampled"
    if min_feasible is not None:
        cfg.search.min_feasible = min_feasible
    s = Scheduler(cfg)
    for n in mixed_cluster():
        s.add_node(n)
    return s


PROBES = {
    "plain": {},
    "pool selector": {"node_selector": {"pool": "x"}},
    "required affinity": {
        "affinity": Affinity(node_required=(NodeSelectorTerm((req(ZONE, "In", "z1", "z2"),)),))
    },
    "hostname anti-affinity": {
        "labels": {"app": "w"},
        "affinity": Affinity(anti_required=(term(sel(app="w")),)),
    },
    "zone spread": {
        "labels": {"app": "s"},
        "spread": (SpreadConstraint(1, ZONE, "DoNotSchedule", sel(app="s")),),
    },
}


@pytest.mark.parametrize("min_feasible", [None, 10], ids=["default", "small-target"])
@pytest.mark.parametrize("fields", PROBES.values(), ids=PROBES.keys())
def test_sampled_mode_places_only_on_feasible_nodes(fields, min_feasible):
    s = sampled(min_feasible)
    for i in range(12):
        p = pod(f"p{i}", cpu=1000, **fields)
        allowed = feasible(s, p)
        assert allowed  # the probe is satisfiable
        binds = run(s, [p], now=float(i))
        assert binds[p.name] in allowed


def test_sampled_mode_with_nothing_feasible():
    s = sampled()
    p = pod("p", cpu=1000, node_selector={"pool": "none"})
    assert run(s, [p]) == {}
    assert s.pending_reason(p) == "0/150 nodes available: 150 node affinity/selector mismatch"


def test_sampled_place_via_node_search():
    s = sampled(min_feasible=5)
    search = s.search
    p = pod("p", cpu=1000, node_selector={"pool": "x"})
    allowed = {s.state.rows[name] for name in feasible(s, p)}
    cls = search.compile(p)
    for _ in range(40):  # the start rotates; every answer is still feasible
        assert search.place(cls) in allowed


def test_full_and_sampled_agree_on_infeasibility():
    for mode in ("full", "sampled"):
        cfg = load_config(None)
        cfg.search.mode = mode
        s = Scheduler(cfg)
        for n in mixed_cluster():
            s.add_node(n)
        big = pod("big", cpu=5000)
        assert run(s, [big]) == {}, mode


# ---------------------------------------------------------------------------- class cache


def zoned(count: int = 12):
    return [
        node(
            f"n{i:02d}",
            zone=f"z{i % 3}",
            labels={"pool": "x"} if i % 2 else None,
            taints=[Taint("soft", "", "PreferNoSchedule")] if i % 4 == 0 else (),
        )
        for i in range(count)
    ]


CACHE_PROBES = {
    # node-local classes: cached and patched row by row
    "plain": pod("c-plain", cpu=1500, mem=2048),
    "selector": pod("c-sel", cpu=1500, node_selector={"pool": "x"}),
    "preferred node": pod(
        "c-pref",
        affinity=Affinity(
            node_preferred=(PreferredNodeTerm(5, NodeSelectorTerm((req("pool", "Exists"),))),)
        ),
    ),
    "hostname anti-affinity": pod(
        "c-anti", labels={"app": "w"}, affinity=Affinity(anti_required=(term(sel(app="w")),))
    ),
    "hostname affinity": pod(
        "c-aff", labels={"app": "c"}, affinity=Affinity(pod_required=(term(sel(app="w")),))
    ),
    # non-local classes: rebuilt when anything changed
    "zone anti-affinity": pod(
        "c-zanti", labels={"app": "c"}, affinity=Affinity(anti_required=(term(sel(app="w"), ZONE),))
    ),
    "zone spread": pod(
        "c-spread",
        labels={"app": "w"},
        spread=(SpreadConstraint(1, ZONE, "DoNotSchedule", sel(app="w")),),
    ),
    "preferred pod affinity": pod(
        "c-ppref", affinity=Affinity(pod_preferred=(weighted(3, sel(app="w"), ZONE),))
    ),
}


def assert_cache_matches_fresh(s: Scheduler, probe):
    cls = s.search.compile(probe)
    cached = s.search.evaluate(cls).copy()
    fresh_search = NodeSearch(s.state, s.framework.filters, s.framework.scorers)
    fresh_cls = fresh_search.compile(probe)
    fresh = fresh_search.evaluate(fresh_cls)
    np.testing.assert_array_equal(np.isneginf(cached), np.isneginf(fresh))
    finite = ~np.isneginf(fresh)
    np.testing.assert_allclose(cached[finite], fresh[finite], rtol=0, atol=1e-9)
    # The whole placement (global plugins included) agrees as well.
    assert s.search.place(cls) == fresh_search.place(fresh_cls)


def workload(count: int, start: int = 0):
    return [
        pod(f"w{i}", cpu=300, mem=300, labels={"app": "w"}, submit_time=i)
        for i in range(start, start + count)
    ]


@pytest.mark.parametrize("probe", CACHE_PROBES.values(), ids=CACHE_PROBES.keys())
@pytest.mark.parametrize("binds,patched", [(3, True), (80, False)], ids=["patched", "rebuilt"])
def test_cached_evaluation_equals_fresh_after_binds(probe, binds, patched):
    s = scheduler(zoned())
    cls = s.search.compile(probe)
    s.search.evaluate(cls)  # warm the cache before anything is bound
    assert len(run(s, workload(binds))) == binds
    # 3 binds are patched into the cached rows; 80 exceed the patch limit and force a rebuild.
    assert (s.state.changed_rows(cls.log_position) is not None) == patched
    assert_cache_matches_fresh(s, probe)


@pytest.mark.parametrize("probe", CACHE_PROBES.values(), ids=CACHE_PROBES.keys())
def test_cached_evaluation_equals_fresh_after_release(probe):
    s = scheduler(zoned())
    pods = workload(6)
    run(s, pods)
    s.search.evaluate(s.search.compile(probe))
    for p in pods[::2]:
        s.release(p)
    assert_cache_matches_fresh(s, probe)


def test_cached_evaluation_equals_fresh_for_hostname_self_affinity():
    probe = pod(
        "c-self", labels={"app": "w"}, affinity=Affinity(pod_required=(term(sel(app="w"), HOST),))
    )
    s = scheduler(zoned())
    s.search.evaluate(s.search.compile(probe))
    run(s, workload(1))
    assert_cache_matches_fresh(s, probe)


OPS = st.lists(st.tuples(st.booleans(), st.integers(0, 11), st.integers(0, 2)), max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_cache_stays_equal_to_fresh_under_random_binds_and_releases(ops):
    s = scheduler(zoned())
    probes = list(CACHE_PROBES.values())
    for probe in probes:
        s.search.evaluate(s.search.compile(probe))
    live = []
    for i, (bind, row, shape) in enumerate(ops):
        if bind or not live:
            p = pod(
                f"r{i}", cpu=(200, 900, 1700)[shape], mem=300 * (shape + 1), labels={"app": "w"}
            )
            s.place_bound(p, f"n{row:02d}")
            live.append(p)
        else:
            s.release(live.pop(row % len(live)))
        if i % 5 == 0:
            for probe in probes[:3]:
                s.search.evaluate(s.search.compile(probe))
    for probe in probes:
        assert_cache_matches_fresh(s, probe)


def narrowed_place(search: NodeSearch, cls) -> int | None:
    """The best row found by narrowing the locally feasible rows with the global filters
    first, then scoring those: the reference for ``NodeSearch.place``."""
    base = search.evaluate(cls)
    idx = search.narrow(cls, np.flatnonzero(base > -np.inf), cls.global_filters)
    if not len(idx):
        return None
    total = search.scores(cls, idx, cls.global_scorers, base[idx])
    return int(idx[int(np.argmax(total))])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_place_equals_narrowing_the_feasible_rows(ops):
    """Filters asked of every row at once (``filters_in_one_pass``) allow the same best row
    as narrowing the feasible rows would, ties to the lowest row included."""
    s = scheduler(zoned())
    probes = [p for name, p in CACHE_PROBES.items() if name != "preferred pod affinity"]
    probes.append(
        pod(
            "c-both",
            labels={"app": "w"},
            node_selector={"pool": "x"},
            spread=(SpreadConstraint(1, ZONE, "DoNotSchedule", sel(app="w")),),
            affinity=Affinity(anti_required=(term(sel(app="x"), HOST),)),
        )
    )
    live = []
    for i, (bind, row, shape) in enumerate(ops):
        if bind or not live:
            p = pod(f"r{i}", cpu=(200, 900, 1700)[shape], labels={"app": ("w", "x")[shape % 2]})
            s.place_bound(p, f"n{row:02d}")
            live.append(p)
        else:
            s.release(live.pop(row % len(live)))
        for probe in probes:
            cls = s.search.compile(probe)
            assert s.search.place(cls) == narrowed_place(s.search, cls), probe.name
