"""themis: the shares that minimize the largest finish-time fairness (rho), and the order,
lease and evictions that follow from them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from berth.framework.scheduler import Scheduler
from berth.plugins.themis import Themis, fair_shares
from tests.builders import GANG, config, node, pod

GOLDEN = (math.sqrt(5) - 1) / 2  # a² + a − 1 = 0

SHARES = {
    # name: (gpus, age, remaining, isolated, total GPUs, expected x)
    "room for all: every job reaches the best rho at x <= 1": (
        [1, 1],
        [0, 0],
        [100, 100],
        [100, 100],
        4,
        [1.0, 1.0],
    ),
    "alike jobs split one GPU": ([1, 1], [0, 0], [100, 100], [100, 100], 1, [0.5, 0.5]),
    # (100 + 100 / a) / 100 = (100 / (1 − a)) / 100  gives a² + a − 1 = 0.
    "the job that has waited longer gets more": (
        [1, 1],
        [100, 0],
        [100, 100],
        [100, 100],
        1,
        [GOLDEN, 1 - GOLDEN],
    ),
    # Two GPUs for a 2-GPU job and a 1-GPU job, alike otherwise: 2a + b = 2 at equal rho
    # (a = b) gives 2/3 each.
    "a share counts the job's GPUs": ([2, 1], [0, 0], [100, 100], [100, 100], 2, [2 / 3, 2 / 3]),
    "a job with nothing left gets none": ([1, 1], [0, 0], [0, 100], [100, 100], 1, [0.0, 1.0]),
}


@pytest.mark.parametrize("name", list(SHARES))
def test_fair_shares(name: str) -> None:
    gpus, age, remaining, isolated, total, expected = SHARES[name]
    x = fair_shares(*(np.array(v, dtype=float) for v in (gpus, age, remaining, isolated)), total)
    assert x.tolist() == pytest.approx(expected, abs=1e-9)
    assert float((np.array(gpus) * x).sum()) <= total + 1e-9


def job(name: str, duration: float, submit: float = 0.0, start=None):
    return pod(
        name,
        cpu=100,
        mem=1,
        gpu=8000,
        submit_time=submit,
        start_time=start,
        duration=duration,
    )


def run(pending, bound, now: float, lease: float = 60.0):
    entry = {"name": "themis", "arguments": {"lease": lease}}
    s = Scheduler(config([entry, GANG, "resource-fit"], actions="allocate, preempt, backfill"))
    s.add_node(node("n0", cpu=64000, mem=65536, gpu=8000))
    for p, where in bound:
        s.place_bound(p, where)
    for p in pending:
        s.submit(p)
    binds = {b.pod.name for b in s.run_session(now)}
    plugin = next(p for p in s.framework.plugins if isinstance(p, Themis))
    return binds, {e.pod.name: e.reason for e in s.evictions}, plugin


def test_an_unfair_running_job_gives_way_after_its_lease() -> None:
    # long has run 100 s of 10,000; short (100 s) has waited 100 s: short's rho is worse.
    binds, evicted, plugin = run([job("short", 100)], [(job("long", 10_000, start=0), "n0")], 100)
    assert plugin.shares["default/short"] > plugin.shares["default/long"]
    assert binds == {"short"}
    assert evicted == {"long": "preempted by default/short"}


def test_a_lease_is_kept() -> None:
    binds, evicted, _ = run([job("short", 100)], [(job("long", 10_000, start=0), "n0")], 30)
    assert (binds, evicted) == (set(), {})


def test_the_next_session_is_the_next_lease() -> None:
    _, _, plugin = run([job("short", 100)], [(job("long", 10_000, start=0), "n0")], 30)
    assert plugin.next_change(plugin.session) == 60


def forever(name: str, start: float):
    """A job with no known run time (a service, a trace row without an end)."""
    return pod(name, cpu=100, mem=1, gpu=8000, start_time=start)


WAKES = {
    # name: (pending, bound, now, the next session themis asks for)
    "a lease still to run out": (
        [job("short", 100)],
        [(job("long", 10_000, start=0), "n0")],
        30,
        60,
    ),
    "a waiting job without a run time has no share to gain": (
        [forever("svc", None)],
        [(job("long", 10_000, start=0), "n0")],
        100,
        None,
    ),
    # The running job's lease is over and its share (none: no run time) is below the waiting
    # job's, which still cannot be placed: nothing a later lease changes, and a run whose pods
    # never end must not wake at every lease for ever.
    "every lease over and the order settled": (
        [pod("wide", cpu=100, mem=1, gpu=16_000, submit_time=0.0, duration=100)],
        [(forever("svc", 0), "n0")],
        600,
        None,
    ),
}


@pytest.mark.parametrize("name", list(WAKES))
def test_themis_wakes_the_run_only_when_a_lease_end_can_change_something(name: str) -> None:
    pending, bound, now, expected = WAKES[name]
    _, _, plugin = run(pending, bound, now)
    assert plugin.next_change(plugin.session) == expected


def test_lease_must_be_positive() -> None:
    with pytest.raises(ValueError, match="argument lease: expected seconds > 0"):
        run([], [], 0, lease=0)
