"""Volcano's backfill test (pkg/scheduler/actions/backfill/backfill_test.go:
TestPickUpPendingTasks), ported: best-effort pods are taken queue by queue, job by job in job
order (priority: the higher first), and within a job in task order (the higher pod priority
first); the jobs' pods that request something are not backfill's."""

from __future__ import annotations

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import only, run, scheduler, tiers, vnode, vpod

BACKFILL = tiers(
    [only("priority", "Preemptable", "TaskOrder", "JobOrder"), only("drf", "QueueOrder")],
    actions="backfill",
)


def test_pick_up_pending_tasks_in_queue_job_and_task_order():
    groups = [
        PodGroup(g, min_member=1, queue="q1", priority=p, phase=GroupPhase.INQUEUE)
        for g, p in (("pg1", 1), ("pg2", 2))
    ]
    pods = [
        vpod(f"{g}-{kind}-task-{i}", cpu, "", g, priority=i)
        for g in ("pg1", "pg2")
        for i in (1, 2, 3, 4)
        for kind, cpu in (("besteffort", ""), ("unbesteffort", "500m"))
    ]
    s = scheduler([vnode("n", "8", "8Gi", 110)], BACKFILL, queues=[Queue("q1")], groups=groups)
    binds = run(s, pods)
    assert list(binds) == [
        "pg2-besteffort-task-4",
        "pg2-besteffort-task-3",
        "pg2-besteffort-task-2",
        "pg2-besteffort-task-1",
        "pg1-besteffort-task-4",
        "pg1-besteffort-task-3",
        "pg1-besteffort-task-2",
        "pg1-besteffort-task-1",
    ]
