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
