"""Status write-back: PodGroup phases and Volcano Job statuses. Only the groups and jobs that
may have changed since the last write are looked at, and one is written only when what it
would say differs from what was last written."""

from __future__ import annotations

from typing import Any

from berth.api.objects import GroupPhase, PodGroup
from berth.controllers.job import JobController
from berth.framework.scheduler import Scheduler
from berth.k8s.cache import KubeStore
from berth.k8s.convert import job_status


class StatusWriter:
    def __init__(self, store: KubeStore, scheduler: Scheduler, controller: JobController) -> None:
        self.store = store
        self.scheduler = scheduler
        self.controller = controller
        #: PodGroups and Jobs whose status may have changed since it was last written.
        self.groups: set[str] = set()
        self.jobs: set[str] = set()
        self._groups_written: dict[str, GroupPhase] = {}
        self._jobs_written: dict[str, tuple[Any, ...]] = {}

    def group_written(self, group: PodGroup) -> None:
        """The group's phase is in the API as it stands (read from it, or written by berth)."""
        self._groups_written[group.key] = group.phase

    def group_gone(self, key: str) -> None:
        self._groups_written.pop(key, None)

    def write(self) -> None:
        """Write what changed (PUT with the cached resourceVersion; the store retries
        conflicts)."""
        for key in self.groups:
            job = self.scheduler.jobs.get(key)
            if job is None:
                continue
            group = job.group
            if group.implicit or job.placeholder or self.store.get("PodGroup", key) is not group:
                continue
            if self._groups_written.get(key) != group.phase:
                self.store.update("PodGroup", group)
                self.group_written(group)
        self.groups.clear()
        for key in self.jobs:
            run = self.controller.runs.get(key)
            if run is None:
                continue
            job = run.job
            mark = (job.phase, job.retries, tuple(sorted(job.counts.items())), len(job.conditions))
            if self._jobs_written.get(key) != mark and self.store.get("Job", key) is job:
                self.store.write_status("Job", key, job_status(job))
                self._jobs_written[key] = mark
        self.jobs.clear()
