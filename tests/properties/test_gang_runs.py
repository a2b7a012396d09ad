"""A gang's pods of one class are placed in runs on one search (``berth.actions.runs``), and
a ready job's turns go on in one statement while it would go next anyway
(``berth.actions.turns.NextTurn``). Both must come to what placing the pods one by one, a
turn each, comes to: the same binds in the same order, the same GPU devices and the same
reasons, session after session, whether the scores spread pods (least-allocated), pack them
(most-allocated) or mix both, with jobs of several priorities in two weighted queues, and when
a queue stops a job part way."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.actions import runs
from berth.api.dra import Device, NodeSelection, ResourceClaimTemplate, ResourceSlice
from berth.api.objects import PodGroup, Queue
from berth.plugins.gang import Gang
from tests.builders import GANG, config, node, pod, scheduler
from tests.plugins.test_dynamic_resources import CLASS, DRIVER, claim_pod, spec
from tests.properties.generators import sessions_agree

# Patches the compiled group (tests/conftest.py).
pytestmark = pytest.mark.from_source

GPU = 1000
# (cpu per pod, whole GPUs per pod, pods, minMember below the count (None: 1), a second
# class's pods, priority)
job = st.tuples(
    st.sampled_from([250, 500, 1000, 2000]),
    st.sampled_from([0, 0, 1, 2]),
    st.integers(2, 24),
    st.one_of(st.none(), st.integers(0, 3)),
    st.integers(0, 4),
    st.sampled_from([0, 0, 1]),
)
step = st.one_of(
    st.tuples(st.just("release"), st.integers(0, 500)),
    st.tuples(st.just("session"), st.just(0)),
)
PACKING = {"name": "gpu-packing", "arguments": {"weight": 10}}
scorers = st.sampled_from(
    [
        ["least-allocated", "balanced-allocation"],
        ["most-allocated"],
        ["least-allocated", {"name": "most-allocated", "arguments": {"weight": 2}}],
        ["least-allocated", "balanced-allocation", PACKING],
        [],
    ]
)


def build(
    nodes: list[tuple[int, int]], jobs: list, scoring: list, cap: int | None, queues: str = "ab"
) -> tuple:
    limit = {} if cap is None else {"cpu": cap}
    names = queues
    queues = [Queue("a", capability=limit), Queue("b", weight=2)]
    plugins = ["priority", GANG, "proportion", "resource-fit", *scoring]
    s = scheduler(
        [node(f"n{i}", cpu=cpu, mem=65536, gpu=gpus * GPU) for i, (cpu, gpus) in enumerate(nodes)],
        config(plugins, actions="enqueue, allocate"),
        queues=queues,
    )
    pods = []
    for index, (cpu, gpus, count, short, other, priority) in enumerate(jobs):
        name = f"j{index}"
        size = count + other
        least = 1 if short is None else max(1, size - short)
        group = PodGroup(name, min_member=least, queue=names[index % len(names)], priority=priority)
        s.add_group(group)
        for k in range(size):
            ask = cpu if k < count else cpu * 2  # the last ``other`` pods: a class of their own
            member = pod(f"{name}-{k:02d}", cpu=ask, mem=256, gpu=gpus * GPU, group=name)
            pods.append(member)
            s.submit(member)
    return s, pods


def outcome(s, pods, in_runs: bool, now: float) -> tuple:
    if in_runs:
        binds = s.run_session(now)
    else:  # one pod at a time, one turn each
        with (
            patch.object(runs, "pace", lambda cls: None),
            patch.object(Gang, "orders_see_placements", False),
        ):
            binds = s.run_session(now)
    return (
        [(b.pod.name, b.node) for b in binds],
        {key: str(reason) for key, reason in s.last_reasons.given.items()},
        sorted((p.name, p.gpu_devices) for p in pods if p.bound_node),
    )


@settings(max_examples=120, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(st.sampled_from([2000, 4000, 8000, 16000]), st.sampled_from([0, 4, 8])),
        min_size=1,
        max_size=12,
    ),
    jobs=st.lists(job, min_size=1, max_size=6),
    scoring=scorers,
    cap=st.one_of(st.none(), st.sampled_from([3000, 9000])),
    steps=st.lists(step, min_size=1, max_size=6),
    queues=st.sampled_from(["ab", "a"]),
)
def test_runs_place_a_gang_as_one_by_one_placement(nodes, jobs, scoring, cap, steps, queues):
    pair = [build(nodes, jobs, scoring, cap, queues) for _ in range(2)]
    sessions_agree(pair, steps, outcome)


def test_runs_are_placed_in_the_plain_case():
    """The property above would pass with runs never used: on spread-out scores they are, for
    a gang and for a job of one minMember taking turn after turn."""
    for short in (0, None):
        s, _ = build([(16000, 0)] * 8, [(500, 0, 16, short, 0, 0)], ["least-allocated"], None)
        with patch.object(runs, "place_run", wraps=runs.place_run) as placed:
            binds = s.run_session(0.0)
        assert len(binds) == 16
        assert sum(len(c.args[4]) for c in placed.call_args_list) >= 8


scores = st.lists(st.sampled_from([-np.inf, 0.0, 1.0, 2.0, 2.5, 3.0]), min_size=1, max_size=30)


@given(total=scores, most=st.integers(1, 40))
def test_best_rows_are_the_rows_argmax_picks_in_turn(total, most):
    total = np.array(total)
    left, picked = total.copy(), []
    for _ in range(min(most, len(total))):
        row = int(np.argmax(left))
        if left[row] == -np.inf:
            break
        picked.append(row)
        left[row] = -np.inf
    assert runs.best_rows(total, most).tolist() == picked


@given(total=scores, data=st.data())
def test_a_run_keeps_what_argmax_would_pick_after_each_placement(total, data):
    """One by one: argmax, then that row's score becomes its score with the pod. The run keeps
    the placements up to the first one that differs."""
    total = np.array(total)
    rows = runs.best_rows(total, len(total)).tolist()
    if not rows:
        return
    after = [data.draw(st.sampled_from([-np.inf, 0.0, 1.0, 2.0, 2.5, 3.0])) for _ in rows]
    scores, expected = total.copy(), 0
    for row, score in zip(rows, after, strict=True):
        if int(np.argmax(scores)) != row:
            break
        expected += 1
        scores[row] = score
    assert runs.agreeing(rows, total[rows].tolist(), after) == expected


def test_a_job_not_yet_served_goes_before_a_ready_one():
    """gang orders a ready job after those still short of minMember: once j0 has its one pod,
    j1 gets its first before j0 its second, in runs as one by one."""
    jobs = [(500, 0, 4, None, 0, 0), (500, 0, 4, None, 0, 0)]
    orders = []
    for in_runs in (True, False):
        s, pods = build([(16000, 0)] * 4, jobs, ["least-allocated"], None, queues="a")
        orders.append([name for name, _ in outcome(s, pods, in_runs, 0.0)[0]])
    assert orders[0] == orders[1]
    assert orders[0][:2] == ["j0-00", "j1-00"]


def test_no_runs_for_a_device_reachable_from_several_nodes():
    """A DRA device every node reaches: placing one pod changes every row, so the gang's pods
    are placed one by one (the one device holds one of them: the gang is not placed)."""
    outcomes = []
    for in_runs in (True, False):
        s = scheduler(
            [node(f"n{i}", cpu=8000) for i in range(3)],
            config(
                ["priority", GANG, "proportion", "resource-fit", "dynamic-resources",
                 "least-allocated"],
                actions="enqueue, allocate",
            ),
        )  # fmt: skip
        shared = ResourceSlice(
            "net", DRIVER, "netpool", selection=NodeSelection(all_nodes=True),
            devices=(Device("d0"),),
        )  # fmt: skip
        s.set_dra([CLASS, shared, ResourceClaimTemplate("t", spec=spec())])
        s.add_group(PodGroup("g", min_member=2))
        pods = [claim_pod(f"p{i}", template="t", cpu=100, group="g") for i in range(2)]
        for member in pods:
            s.submit(member)
        outcomes.append(outcome(s, pods, in_runs, 0.0))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == []
