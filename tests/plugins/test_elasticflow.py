"""elasticflow: the admission test of ElasticFlow (minimum satisfactory shares planned
backwards from each deadline, earliest deadline first) and what the plugin does with it."""

from __future__ import annotations

import pytest

from berth.api.deadline import DEADLINE_ANNOTATION, DROPPED_REASON
from berth.framework.scheduler import Scheduler
from berth.plugins.elasticflow import Demand, ElasticFlow, Plan, feasible
from tests.builders import GANG, config, node, pod

GPU = 1000


def rigid(key: str, deadline: float, work: float, gpus: int) -> Demand:
    return Demand(key, deadline, work, (gpus,), (1.0,))


#: Sizes 1, 2, 4, 8 GPUs at speeds 1, 1.8, 3.2, 5.6 (a throughput table's shape).
SIZES, SPEEDS = (1, 2, 4, 8), (1.0, 1.8, 3.2, 5.6)


def elastic(key: str, deadline: float, work: float) -> Demand:
    return Demand(key, deadline, work, SIZES, SPEEDS)


PLANS = {
    # name: (total GPUs, running (end, GPUs), demand, expected stretches or None)
    "room at once: the share is taken as late as the deadline allows": (
        8,
        [],
        rigid("a", 1000, 400, 8),
        [(600, 1000, 8)],
    ),
    "exactly the deadline's room fits": (8, [], rigid("a", 1000, 1000, 8), [(0, 1000, 8)]),
    "a second more does not": (8, [], rigid("a", 1000, 1001, 8), None),
    "a deadline passed fails": (8, [], rigid("a", 0, 1, 1), None),
    "running jobs hold GPUs until they end": (
        8,
        [(500, 8)],
        rigid("a", 1000, 500, 8),
        [(500, 1000, 8)],
    ),
    "... and a job needing their GPUs before then fails": (
        8,
        [(500, 8)],
        rigid("a", 1000, 501, 8),
        None,
    ),
    "a stretch without room is skipped backwards (the plan may pause a job)": (
        8,
        [(600, 6)],
        rigid("a", 1000, 500, 4),
        None,
    ),
    "more GPUs than the cluster has never fit": (8, [], rigid("a", 10**9, 1, 16), None),
    # Elastic: the smallest size whose backward fill meets the deadline (minimum
    # satisfactory share): 1 GPU would take 1,000 s, 2 GPUs 556 s.
    "minimum satisfactory share: the smallest size that meets the deadline": (
        8,
        [],
        elastic("e", 600, 1000),
        [(600 - 1000 / 1.8, 600, 2)],
    ),
    "the smallest size itself when it suffices": (
        8,
        [],
        elastic("e", 2000, 1000),
        [(1000, 2000, 1)],
    ),
    # Free GPUs below the quota: the largest allowed size within them (the artifact's
    # get_last_level): 3 free before 100 gives 2 there.
    "below the quota, the largest size the free GPUs hold": (
        8,
        [(100, 5)],
        elastic("e", 200, 100 * 3.2 + 100 * 1.8),
        [(100, 200, 4), (0, 100, 2)],
    ),
}


@pytest.mark.parametrize("name", list(PLANS))
def test_minimum_satisfactory_share(name: str) -> None:
    total, running, demand, expected = PLANS[name]
    plan = Plan(0.0, total, running)
    before = (list(plan.times), list(plan.free))
    got = plan.admit(demand)
    if expected is None:
        assert got is None
        assert (plan.times, plan.free) == before  # a failed test takes nothing
    else:
        assert got is not None
        assert [g for *_, g in got] == [g for *_, g in expected]
        flat = [t for start, end, _ in got for t in (start, end)]
        assert flat == pytest.approx([t for start, end, _ in expected for t in (start, end)])


def test_a_share_taken_is_not_free_for_the_next() -> None:
    plan = Plan(0.0, 8)
    plan.admit(rigid("a", 1000, 400, 8))
    assert (plan.times, plan.free) == ([0.0, 600.0, 1000.0], [8, 0, 8])
    assert plan.admit(rigid("b", 1000, 600, 8)) == [(0.0, 600.0, 8)]
    assert plan.admit(rigid("c", 1000, 1, 1)) is None


ADMISSION = {
    # name: (total GPUs, running, demands, admitted)
    "both fit one after the other": (
        8,
        [],
        [rigid("a", 1000, 500, 8), rigid("b", 1000, 500, 8)],
        True,
    ),
    "together they overrun": (8, [], [rigid("a", 1000, 500, 8), rigid("b", 1000, 501, 8)], False),
    # Planned earliest deadline first: a job with a later deadline given first in the list
    # still leaves the earlier one its room.
    "earliest deadline planned first": (
        8,
        [],
        [rigid("late", 2000, 1000, 8), rigid("soon", 1000, 1000, 8)],
        True,
    ),
    "side by side within the GPUs": (
        8,
        [],
        [rigid("a", 100, 100, 4), rigid("b", 100, 100, 4)],
        True,
    ),
    "a running job's GPUs are not free": (
        8,
        [(1000, 4)],
        [rigid("a", 100, 100, 4), rigid("b", 100, 100, 4)],
        False,
    ),
}


@pytest.mark.parametrize("name", list(ADMISSION))
def test_admission(name: str) -> None:
    total, running, demands, admitted = ADMISSION[name]
    assert feasible(Plan(0.0, total, running), demands) is admitted


def job(name: str, gpus: int, duration: float, deadline: float | None, submit: float = 0.0):
    annotations = {} if deadline is None else {DEADLINE_ANNOTATION: str(deadline)}
    return pod(
        name,
        cpu=100,
        mem=1,
        gpu=gpus * GPU,
        submit_time=submit,
        duration=duration,
        annotations=annotations,
    )


def scheduler() -> Scheduler:
    s = Scheduler(config(["elasticflow", GANG, "resource-fit"], actions="allocate, backfill"))
    s.add_node(node("n0", cpu=64000, mem=65536, gpu=8 * GPU))
    return s


def plugin(s: Scheduler) -> ElasticFlow:
    return next(p for p in s.framework.plugins if isinstance(p, ElasticFlow))


def test_a_job_that_cannot_meet_its_deadline_is_dropped_and_never_runs() -> None:
    s = scheduler()
    s.submit(job("fits", 8, 500, 1000))
    s.submit(job("cannot", 8, 600, 1000))  # 500 + 600 > 1,000 on one 8-GPU node
    s.submit(job("best-effort", 8, 600, None))
    binds = {b.pod.name for b in s.run_session(0.0)}
    assert binds == {"fits"}
    assert plugin(s).verdicts == {
        "default/fits": True,
        "default/cannot": False,
        "default/best-effort": True,
    }
    assert plugin(s).dropped == 1
    reasons = {key: str(reason) for key, reason in s.last_reasons.every()}
    assert reasons["default/cannot"] == DROPPED_REASON
    assert not reasons.get("default/best-effort", "").startswith(DROPPED_REASON)


def test_admitted_jobs_go_earliest_deadline_first() -> None:
    s = scheduler()
    s.submit(job("late", 8, 100, 5000))
    s.submit(job("soon", 8, 100, 300, submit=1))
    assert {b.pod.name for b in s.run_session(1.0)} == {"soon"}
