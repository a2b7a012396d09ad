"""priority: higher-priority jobs first, and within a job higher-priority tasks first."""

from __future__ import annotations

import pytest

from berth.api.objects import PodGroup
from tests.builders import config, node, pod, run, scheduler

WITHOUT_PRIORITY = config(["gang", "resource-fit", "least-allocated"])

JOB_CASES = {
    "higher priority wins although submitted later": (
        [("lo", 0, 0.0), ("hi", 10, 5.0)],
        None,
        "hi",
    ),
    "negative priority loses": ([("neg", -5, 0.0), ("zero", 0, 1.0)], None, "zero"),
    "equal priority: earlier submission": ([("b", 3, 0.0), ("a", 3, 1.0)], None, "b"),
    "equal priority and time: name": ([("b", 3, 0.0), ("a", 3, 0.0)], None, "a"),
    "without the priority plugin: submission order": (
        [("lo", 0, 0.0), ("hi", 10, 5.0)],
        WITHOUT_PRIORITY,
        "lo",
    ),
}


@pytest.mark.parametrize("jobs,cfg,winner", JOB_CASES.values(), ids=JOB_CASES.keys())
def test_higher_priority_job_first_when_only_one_fits(jobs, cfg, winner):
    groups = [PodGroup(name, min_member=2, priority=prio, submit_time=t) for name, prio, t in jobs]
    s = scheduler([node("n", cpu=4000)], cfg, groups=groups)
    pods = [pod(f"{name}-{i}", cpu=2000, group=name) for name, _, _ in jobs for i in range(2)]
    binds = run(s, pods)
    assert binds == {f"{winner}-0": "n", f"{winner}-1": "n"}


TASK_CASES = {
    "highest priority task": ([("t0", 1, 0.0), ("t1", 5, 0.0), ("t2", 3, 0.0)], "t1"),
    "equal priority: earliest task": ([("t0", 1, 2.0), ("t1", 1, 1.0)], "t1"),
    "equal priority and time: name": ([("t1", 1, 0.0), ("t0", 1, 0.0)], "t0"),
}


@pytest.mark.parametrize("tasks,winner", TASK_CASES.values(), ids=TASK_CASES.keys())
def test_task_order_within_a_job(tasks, winner):
    s = scheduler([node("n", cpu=1000)], groups=[PodGroup("job", min_member=1)])
    pods = [
        pod(name, cpu=1000, group="job", priority=prio, submit_time=t) for name, prio, t in tasks
    ]
    assert run(s, pods) == {winner: "n"}
