"""reservation: the job that has starved longest gets nodes held for it until it can start;
other pods use held nodes only if they will be gone by then."""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.objects import Pod, PodGroup
from berth.framework.config import ConfigError, parse_config
from berth.framework.config_files import load_config
from berth.framework.scheduler import Scheduler
from berth.plugins.reservation import Reservation, earliest_fit
from tests.builders import best_effort, config, node, pod, run, scheduler

BASE = ["priority", "gang", "resource-fit", "least-allocated"]
OFF = config(BASE, actions="allocate, backfill")


def reserving(wait: str | int = "0", actions: str = "allocate, backfill"):
    return config(
        BASE + [{"name": "reservation", "arguments": {"reservation.waitTime": wait}}],
        actions=actions,
    )


def plugin(s: Scheduler) -> Reservation:
    return next(p for p in s.framework.plugins if isinstance(p, Reservation))


def held(s: Scheduler) -> tuple[list[str], float]:
    """The nodes the standing hold keeps, and its shadow time."""
    hold = plugin(s).hold
    assert hold is not None
    return [s.state.names[r] for r in np.flatnonzero(hold.held)], hold.shadow


def cluster(cfg, extra_nodes=()):
    """Two 4-CPU nodes, each half taken by a pod that ends at t=50 (n0) or t=100 (n1), and a
    gang of two 4-CPU pods that needs both nodes empty, running for 100 s once started."""
    s = scheduler(
        [node("n0", cpu=4000), node("n1", cpu=4000), *extra_nodes],
        cfg,
        groups=[PodGroup("big", min_member=2)],
        bound=[
            (pod("r0", cpu=2000, duration=50.0, start_time=0.0), "n0"),
            (pod("r1", cpu=2000, duration=100.0, start_time=0.0), "n1"),
        ],
    )
    big = [pod(f"big-{i}", cpu=4000, group="big", duration=100.0) for i in range(2)]
    return s, big


def drive(s: Scheduler, arrivals: list[Pod], until: float) -> dict[str, tuple[str, float]]:
    """A minimal node agent: a session at every arrival and every expected end, pods start at
    their bind and leave their node at start + duration. Returns {pod: (node, bind time)}."""
    running = [p for row in s.state.pods_on for p in row.values()]
    times = {p.submit_time for p in arrivals} | {p.start_time + p.duration for p in running}
    placed = {}
    while times and (now := min(times)) <= until:
        times.discard(now)
        for p in [p for p in running if p.start_time + p.duration <= now]:
            s.release(p)
            running.remove(p)
        for p in arrivals:
            if p.submit_time == now:
                s.submit(p)
        for b in s.run_session(now):
            b.pod.start_time = now
            placed[b.pod.name] = (b.node, now)
            if b.pod.duration is not None:
                running.append(b.pod)
                times.add(now + b.pod.duration)
    return placed


def stream() -> list[Pod]:
    """Small 2-CPU pods of 100 s, one every 40 s from t=10: at every moment one of them holds
    part of a node."""
    return [pod(f"s{i}", cpu=2000, duration=100.0, submit_time=10.0 + 40 * i) for i in range(6)]


STREAM_CASES = {
    # Without a reservation the small pods keep taking the half-free nodes.
    "off: the gang starves": (
        OFF,
        {
            "s0": ("n0", 10.0),
            "s1": ("n0", 50.0),
            "s2": ("n1", 90.0),
            "s3": ("n0", 130.0),
            "s4": ("n0", 170.0),
            "s5": ("n1", 210.0),
        },
    ),
    # Starving at once: both nodes held until r1 ends at t=100; the small pods would run past
    # that, so they wait, and go after the gang (t=200), in arrival order.
    "waitTime 0: held from t=0": (
        reserving("0"),
        {
            "big-0": ("n0", 100.0),
            "big-1": ("n1", 100.0),
            "s0": ("n0", 200.0),
            "s1": ("n1", 200.0),
            "s2": ("n0", 200.0),
            "s3": ("n1", 200.0),
        },
    ),
    # Starving from the session at t=90 (after s2 took n1): held until s2 ends at t=190.
    "waitTime 1m: held from t=90": (
        reserving("1m"),
        {
            "s0": ("n0", 10.0),
            "s1": ("n0", 50.0),
            "s2": ("n1", 90.0),
            "big-0": ("n0", 190.0),
            "big-1": ("n1", 190.0),
        },
    ),
}


@pytest.mark.parametrize("cfg,expected", STREAM_CASES.values(), ids=STREAM_CASES.keys())
def test_a_gang_behind_a_stream_of_small_pods(cfg, expected):
    s, big = cluster(cfg)
    assert drive(s, big + stream(), until=250.0) == expected


# A pod arriving at t=10 while both 4-CPU nodes are held for big until t=100; n2 (2 CPUs) is
# too small for big's tasks, so it is never held.
ARRIVAL_CASES = {
    "ends exactly at the shadow time": (
        pod("p", cpu=2000, duration=90.0, submit_time=10.0),
        "n0",
        None,
    ),
    "ends after it": (
        pod("p", cpu=2000, duration=91.0, submit_time=10.0),
        None,
        "nodes n0, n1 held for starving job default/big until t=100s",
    ),
    "no duration": (
        pod("p", cpu=2000, submit_time=10.0),
        None,
        "nodes n0, n1 held for starving job default/big until t=100s",
    ),
    "best-effort, short": (best_effort("p", duration=30.0, submit_time=10.0), "n0", None),
    "best-effort, no duration": (
        best_effort("p", submit_time=10.0),
        None,
        "nodes n0, n1 held for starving job default/big until t=100s",
    ),
}


@pytest.mark.parametrize("new,where,reason", ARRIVAL_CASES.values(), ids=ARRIVAL_CASES.keys())
def test_only_pods_gone_by_the_shadow_time_use_held_nodes(new, where, reason):
    s, big = cluster(reserving())
    assert run(s, big, now=0.0) == {}
    assert run(s, [new], now=10.0) == ({"p": where} if where else {})
    if reason:
        assert s.pending_reason(new) == reason


def test_pods_elsewhere_schedule_normally():
    s, big = cluster(reserving(), extra_nodes=[node("n2", cpu=2000)])
    run(s, big, now=0.0)
    assert run(s, [pod("long", cpu=2000, submit_time=10.0)], now=10.0) == {"long": "n2"}


def test_the_held_job_says_it_holds_a_reservation():
    s, big = cluster(reserving())
    run(s, big, now=0.0)
    assert s.pending_reason(big[0]) == (
        "holds a reservation (nodes n0, n1) until t=100s; 0/2 nodes available: 2 insufficient cpu"
    )


def test_the_reservation_is_released_once_the_job_starts():
    s, big = cluster(reserving())
    run(s, big, now=0.0)
    waiting = best_effort("be", submit_time=10.0)
    assert run(s, [waiting], now=10.0) == {}
    assert plugin(s).hold is not None
    for p in [p for row in s.state.pods_on for p in row.values()]:
        s.release(p)
    # The gang starts in allocate; backfill, in the same session, may use its nodes again.
    assert run(s, now=100.0) == {"big-0": "n0", "big-1": "n1", "be": "n0"}
    assert plugin(s).hold is None
    assert run(s, [pod("later", cpu=0, mem=1)], now=101.0) == {"later": "n0"}


def test_only_the_first_starving_job_in_job_order_holds_nodes():
    s, big = cluster(reserving())
    s.add_group(PodGroup("other", min_member=2, priority=-1))
    other = [pod(f"other-{i}", cpu=4000, group="other") for i in range(2)]
    run(s, big + other, now=0.0)
    assert plugin(s).hold.job == "default/big"
    assert s.pending_reason(other[0]) == "0/2 nodes available: 2 insufficient cpu"


def test_a_job_that_has_not_waited_long_enough_holds_nothing():
    s, big = cluster(reserving("30m"))
    run(s, big, now=0.0)
    assert run(s, [pod("long", cpu=2000, submit_time=1799.0)], now=1799.0) == {"long": "n0"}
    assert plugin(s).hold is None


def test_pods_that_never_end_leave_nothing_to_reserve():
    s = scheduler(
        [node("n0", cpu=4000)],
        reserving(),
        groups=[PodGroup("big")],
        bound=[(pod("service", cpu=2000), "n0")],
    )
    run(s, [pod("big-0", cpu=4000, group="big")], now=0.0)
    assert plugin(s).hold is None


def test_reservations_are_deterministic():
    def once():
        s, big = cluster(reserving())
        return drive(s, big + stream(), until=400.0)

    assert once() == once()


FIT_CASES = {
    # free now (nodes × 1 resource), pods (node, end, released), slot, need → (time, nodes)
    "fits now": ([[4], [4]], [], 4, 2, (-np.inf, [0, 1])),
    "waits for the later end": ([[2], [2]], [(0, 50, 2), (1, 100, 2)], 4, 2, (100.0, [0, 1])),
    "one node is enough": ([[2], [0]], [(0, 70, 2), (1, 60, 4)], 4, 1, (60.0, [1])),
    "bigger gain first at equal times": ([[0], [0]], [(0, 10, 8), (1, 10, 4)], 4, 2, (10.0, [0])),
    "two pods on one node": ([[0]], [(0, 30, 2), (0, 20, 2)], 4, 1, (30.0, [0])),
    "never": ([[0]], [(0, 30, 2)], 4, 1, None),
}


@pytest.mark.parametrize("free,pods,slot,need,expected", FIT_CASES.values(), ids=FIT_CASES.keys())
def test_earliest_fit(free, pods, slot, need, expected):
    node = np.array([p[0] for p in pods], dtype=np.intp)
    end = np.array([p[1] for p in pods], dtype=np.float64)
    released = np.array([[p[2]] for p in pods], dtype=np.int64).reshape(len(pods), 1)
    plan = earliest_fit(np.array(free, dtype=np.int64), node, end, released, np.array([slot]), need)
    if expected is None:
        assert plan is None
    else:
        assert plan is not None
        assert (plan[0], plan[1].tolist()) == expected


ARGUMENT_ERRORS = {
    "not a duration": (
        "soon",
        "plugin reservation: argument reservation.waitTime: 'soon' is "
        "not a duration (expected e.g. 30m, 1h, 1h30m)",
    ),
    "negative": (
        "-5m",
        "plugin reservation: argument reservation.waitTime: must not be negative (got '-5m')",
    ),
    "a boolean": (
        True,
        "plugin reservation: argument reservation.waitTime: True is not a "
        "duration (expected e.g. 30m)",
    ),
    "a list": (
        ["1h"],
        "plugin reservation: argument reservation.waitTime: ['1h'] is not a "
        "duration (expected e.g. 30m)",
    ),
}


@pytest.mark.parametrize("value,message", ARGUMENT_ERRORS.values(), ids=ARGUMENT_ERRORS.keys())
def test_bad_wait_time(value, message):
    with pytest.raises(ConfigError) as err:
        reserving(value)
    assert str(err.value) == f"test: tiers[0].plugins[{len(BASE)}]: {message}"


def test_wait_time_defaults_to_half_an_hour():
    assert plugin(Scheduler(config(["reservation"]))).wait_time == 1800.0


def test_volcano_reservation_actions_are_skipped_with_a_pointer_to_the_plugin():
    cfg = parse_config({"actions": "enqueue, elect, allocate, backfill, reserve"}, "v.conf")
    assert cfg.actions == ["enqueue", "allocate", "backfill"]
    assert cfg.warnings == [
        "v.conf: actions: elect is done by the reservation plugin in berth; skipped",
        "v.conf: actions: reserve is done by the reservation plugin in berth; skipped",
    ]


def test_off_by_default():
    assert not any(
        isinstance(p, Reservation) for p in Scheduler(load_config(None)).framework.plugins
    )


# Two 4-CPU nodes: n0 half taken by a pod ending at t=100, n1 by the pods of ``bound``; the gang
# ``big`` of one 4-CPU pod starves at once.
def one_slot(cfg, bound, n1_labels=None, groups=()):
    return scheduler(
        [node("n0", cpu=4000), node("n1", cpu=4000, labels=n1_labels)],
        cfg,
        groups=[PodGroup("big"), *groups],
        bound=[(pod("r0", cpu=2000, duration=100.0, start_time=0.0), "n0"), *bound],
    )


def lent(wait: str = "0", **arguments):
    return config(
        BASE
        + [
            {
                "name": "reservation",
                "arguments": {"reservation.waitTime": wait, **arguments},
            }
        ],
        actions="allocate, backfill",
    )


LENT = {"berth.io/pool": "lent"}
# n1's pod ends at t=50, before n0's: the plan would take n1 unless it may not.
LENT_CASES = {
    "a training node": (reserving(), None, ("n1", 50.0)),
    "a lent node is never held": (reserving(), LENT, ("n0", 100.0)),
    "the inference pool's label is no lent one": (
        reserving(),
        {"berth.io/pool": "inference"},
        ("n1", 50.0),
    ),
    "lentNodes names another label": (
        lent(**{"reservation.lentNodes": {"pool": "borrowed"}}),
        {"pool": "borrowed"},
        ("n0", 100.0),
    ),
    "lentNodes names another label, not this one": (
        lent(**{"reservation.lentNodes": {"pool": "borrowed"}}),
        LENT,
        ("n1", 50.0),
    ),
    "lentNodes {}: lent nodes are held like any": (
        lent(**{"reservation.lentNodes": {}}),
        LENT,
        ("n1", 50.0),
    ),
}


@pytest.mark.parametrize("cfg,labels,expected", LENT_CASES.values(), ids=LENT_CASES.keys())
def test_lent_nodes_are_never_held(cfg, labels, expected):
    s = one_slot(cfg, [(pod("r1", cpu=2000, duration=50.0, start_time=0.0), "n1")], labels)
    run(s, [pod("big-0", cpu=4000, group="big")], now=0.0)
    assert held(s) == ([expected[0]], expected[1])


ELASTIC = {"berth.io/elastic": "true"}
#: The reservation with elastic workers above their job's minimum counted as room now.
SURPLUS = lent(**{"reservation.elasticSurplus": True})


def workers(count: int, bind_times=None) -> list[tuple[Pod, str]]:
    """``count`` 1-CPU workers of job ``el`` on n1, without a duration (an elastic job's)."""
    times = bind_times or [0.0] * count
    return [
        (pod(f"el-{i}", cpu=1000, group="el", bind_time=times[i], start_time=times[i]), "n1")
        for i in range(count)
    ]


# n1 holds job el's four 1-CPU workers, which never end on their own; n0 has 2 CPUs free until
# r0 ends at t=100. big's pod asks 3 CPUs.
SURPLUS_CASES = {
    # Three above the minimum of one: n1 has room for big once they are off, now.
    "elastic, above its minimum": (PodGroup("el", min_member=1, annotations=ELASTIC), ("n1", 5.0)),
    # At its minimum nothing may be taken off: n0, when r0 ends.
    "elastic, at its minimum": (PodGroup("el", min_member=4, annotations=ELASTIC), ("n0", 100.0)),
    # Two above the minimum are too little room on n1 (2 CPUs stay taken).
    "elastic, too little above its minimum": (
        PodGroup("el", min_member=2, annotations=ELASTIC),
        ("n0", 100.0),
    ),
    # A rigid job's pods above minMember are not taken off by anyone.
    "not elastic, above minMember": (PodGroup("el", min_member=1), ("n0", 100.0)),
}


@pytest.mark.parametrize("group,expected", SURPLUS_CASES.values(), ids=SURPLUS_CASES.keys())
def test_elastic_workers_above_their_minimum_are_room_now(group, expected):
    s = one_slot(SURPLUS, workers(4), groups=[group])
    run(s, [pod("big-0", cpu=3000, group="big")], now=5.0)
    assert held(s) == ([expected[0]], expected[1])


def test_terminating_workers_leave_none_to_spare_below_the_minimum():
    # el (minimum 3) has four workers bound, two of them terminating: neither of the two left
    # may go, so n1 never has room for big, and n0's pod never ends.
    alive = [
        (pod(f"el-{i}", cpu=2000, group="el", bind_time=float(i), start_time=float(i)), "n1")
        for i in range(2)
    ]
    going = [(pod(f"el-{i}", cpu=0, group="el", terminating=True), "n1") for i in (2, 3)]
    s = scheduler(
        [node("n0", cpu=4000), node("n1", cpu=4000)],
        SURPLUS,
        groups=[PodGroup("big"), PodGroup("el", min_member=3, annotations=ELASTIC)],
        bound=[(pod("r0", cpu=4000), "n0"), *alive, *going],
    )
    run(s, [pod("big-0", cpu=2000, group="big")], now=5.0)
    assert plugin(s).hold is None


def test_elastic_workers_are_pods_that_never_end_by_default():
    # Nobody takes them off unless a scaling policy's guard runs: n0, when r0 ends.
    s = one_slot(
        reserving(), workers(4), groups=[PodGroup("el", min_member=1, annotations=ELASTIC)]
    )
    run(s, [pod("big-0", cpu=3000, group="big")], now=5.0)
    assert held(s) == (["n0"], 100.0)


def test_the_newest_elastic_workers_are_the_ones_counted_off():
    # el runs one 2-CPU worker on n0 (placed last) and three 1-CPU ones on n1, one above its
    # minimum of three: n0's worker is counted off, so n0 has room for big once r0 ends; n1
    # would have too little.
    s = scheduler(
        [node("n0", cpu=4000), node("n1", cpu=4000)],
        SURPLUS,
        groups=[PodGroup("big"), PodGroup("el", min_member=3, annotations=ELASTIC)],
        bound=[
            (pod("r0", cpu=2000, duration=100.0, start_time=0.0), "n0"),
            (pod("el-new", cpu=2000, group="el", bind_time=3.0, start_time=3.0), "n0"),
            *workers(3),
        ],
    )
    run(s, [pod("big-0", cpu=3000, group="big")], now=5.0)
    assert held(s) == (["n0"], 100.0)


def test_a_hold_whose_shadow_time_has_come_stands_until_a_pod_leaves():
    el = PodGroup("el", min_member=1, annotations=ELASTIC)
    tiny = pod("tiny", cpu=100, duration=1000.0, start_time=0.0)
    s = one_slot(SURPLUS, [*workers(4), (tiny, "n0")], groups=[el])
    run(s, [pod("big-0", cpu=3000, group="big")], now=5.0)
    first = plugin(s).hold
    assert first is not None and first.shadow == 5.0
    run(s, now=10.0)
    assert plugin(s).hold is first
    s.release(tiny)
    run(s, now=20.0)
    assert plugin(s).hold is not first and plugin(s).hold.shadow == 20.0


LENT_MESSAGE = "is not a mapping of labels to values (expected e.g. {berth.io/pool: lent})"
#: (argument, value, what the message says of it)
ARGUMENT_ERRORS = {
    "lentNodes, a string": ("reservation.lentNodes", "berth.io/pool=lent", LENT_MESSAGE),
    "lentNodes, a list": ("reservation.lentNodes", [{"berth.io/pool": "lent"}], LENT_MESSAGE),
    "lentNodes, a value not a string": (
        "reservation.lentNodes",
        {"berth.io/pool": 1},
        LENT_MESSAGE,
    ),
    "elasticSurplus, a string": ("reservation.elasticSurplus", "yes", "is not true or false"),
    "elasticSurplus, a number": ("reservation.elasticSurplus", 1, "is not true or false"),
    "elasticSurplus, empty": ("reservation.elasticSurplus", None, "is not true or false"),
}


@pytest.mark.parametrize(
    "argument,value,message", ARGUMENT_ERRORS.values(), ids=ARGUMENT_ERRORS.keys()
)
def test_bad_arguments(argument, value, message):
    with pytest.raises(ConfigError) as err:
        lent(**{argument: value})
    assert str(err.value) == (
        f"test: tiers[0].plugins[{len(BASE)}]: plugin reservation: argument "
        f"{argument}: {value!r} {message}"
    )
