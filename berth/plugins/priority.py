"""priority: higher-priority jobs are scheduled first, and within a job higher-priority tasks."""

from __future__ import annotations

from berth.api.objects import Pod
from berth.framework.plugin import Plugin
from berth.framework.session import JobInfo


class Priority(Plugin):
    name = "priority"

    def job_order(self, job: JobInfo) -> int:
        return -job.group.priority

    def task_order(self, pod: Pod) -> int:
        return -pod.priority
