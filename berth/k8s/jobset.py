"""JobSets in ``berth serve --jobset``: the simulator's JobSet controller against the API server.

``JobSets`` runs ``berth.controllers.jobset`` and, for the ``batch/v1`` Jobs it makes,
``berth.controllers.kube_job``, over the cache on the serve loop's clock and timers
(``ServeRuntime``). The Jobs stay in the cache (``KubeStore.LOCAL_KINDS``): were they written
to the API, kube-controller-manager's Job controller would create their pods a second time.
berth creates the pods itself, from the replicated Job's pod template as the API holds it, with
the names and labels JobSet's Jobs give them (``<jobset>-<replicated job>-<index>-<5
characters>``, an Indexed Job's with its completion index before the suffix;
``jobset.sigs.k8s.io/*``, ``batch.kubernetes.io/job-name``), owned by the JobSet. With
``alpha.jobset.sigs.k8s.io/exclusive-topology`` they carry upstream's affinity terms. Each
JobSet's status (``restarts``, ``replicatedJobsStatus``, ``terminalState``, a ``Completed`` or
``Failed`` condition) is written through ``/status`` when it changes.

A restarted berth has none of those Jobs: before the controller's first pass over a JobSet
whose pods exist, its Jobs are made again from the pods' replicated Job and index labels (the
pods of the JobSet's current restart attempt), each with the PodGroup its pods joined, and the
pods are given back to them; the restarts and verdict the API's status holds are taken back.
So no pod is made twice.
"""

from __future__ import annotations

from typing import Any

from berth.api.jobset import (
    EXCLUSIVE_KEY,
    JOB_INDEX_KEY,
    JOB_KEY,
    JOBSET_NAME_KEY,
    REPLICATED_JOB_NAME_KEY,
    RESTART_ATTEMPT_KEY,
)
from berth.api.objects import Pod, PodGroup
from berth.api.workloads import JOB_SET, KUBE_JOB, Workload
from berth.controllers.jobset import COMPLETE, FAILED, JobSetController
from berth.controllers.kube_job import KubeJobController
from berth.k8s.convert import owner_reference, stamp
from berth.k8s.kinds import BY_KIND
from berth.k8s.lws import GroupWorkloads, group_pod
from berth.store import NotFound, WatchEvent

_TERMINAL = {"Completed": "AllJobsCompleted", "Failed": "FailedJobs"}


class JobSets(GroupWorkloads):
    """The JobSet and batch/v1 Job controllers of one serve loop, and the writer of their
    pods."""

    kind, pods_of = JOB_SET, KUBE_JOB
    controller: JobSetController

    def _start_controllers(self) -> JobSetController:
        self.jobs = KubeJobController(self.runtime)  # its Jobs' controller, started first
        return JobSetController(self.runtime)

    def _resync(self) -> None:
        self.jobs.resync()
        self.controller.resync()

    def _replicated_jobs_status(self, js: Workload, jobs: list[Workload]) -> list[dict[str, Any]]:
        """Per replicated Job, its Jobs as upstream counts them: succeeded and failed ones;
        of the others, those with an active pod, and those whose ready and succeeded pods
        reach their parallelism (or completions, when fewer). None is ever suspended."""
        rows = {
            r.name: {"name": r.name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0,
                     "suspended": 0}
            for r in js.spec.replicated_jobs
        }  # fmt: skip
        for job in jobs:
            row = rows.get(job.labels.get(REPLICATED_JOB_NAME_KEY, ""))
            if row is None:
                continue
            status, spec = job.status, job.spec
            if status.phase in (COMPLETE, FAILED):
                row["succeeded" if status.phase == COMPLETE else "failed"] += 1
                continue
            pods = spec.parallelism
            if spec.completions is not None:
                pods = min(pods, spec.completions)
            row["ready"] += status.succeeded + status.ready >= pods
            row["active"] += status.replicas > 0
        return list(rows.values())

    def _owner_key(self, group: PodGroup) -> str | None:
        for job in self.store.list(KUBE_JOB):
            if job.namespace == group.namespace and job.group == group.name:
                return job.owner or None
        return None

    def _first_sight(self, js: Workload) -> None:
        """Make the Jobs of a JobSet seen for the first time again from its pods (see the
        module's docstring); nothing when it has Jobs or no pods."""
        if any(job.owner == js.key for job in self.store.list(KUBE_JOB)):
            return
        status = (self.store.raw(JOB_SET, js.key) or {}).get("status") or {}
        restarts = status.get("restarts")
        if isinstance(restarts, int) and not isinstance(restarts, bool):
            js.status.restarts = max(js.status.restarts, restarts)
        if status.get("terminalState") in _TERMINAL and not js.status.phase:
            js.status.phase = status["terminalState"]
        attempt = str(js.status.restarts)
        found: dict[tuple[str, str], list[Pod]] = {}
        for pod in self.store.list("Pod"):
            labels = pod.labels
            if pod.namespace != js.namespace or pod.owner:
                continue
            if (
                labels.get(JOBSET_NAME_KEY) == js.name
                and labels.get(RESTART_ATTEMPT_KEY) == attempt
            ):
                at = (labels.get(REPLICATED_JOB_NAME_KEY, ""), labels.get(JOB_INDEX_KEY, ""))
                found.setdefault(at, []).append(pod)
        if not found:
            return
        glob = 0
        for rjob in js.spec.replicated_jobs:
            for index in range(rjob.replicas):
                pods = found.get((rjob.name, str(index)))
                if pods:
                    job = self.controller.create_job(js, rjob, index, glob)
                    job.group = pods[0].group
                    for pod in pods:
                        pod.owner, pod.owner_kind = job.key, KUBE_JOB
                        self.store.notify("Pod", WatchEvent.MODIFIED, pod)
                glob += 1

    # ------------------------------------------------------------------ the cache's pod writer

    def manifest(self, pod: Pod) -> dict[str, Any]:
        job = self.store.get(KUBE_JOB, pod.owner)
        raw = self.store.raw(JOB_SET, job.owner) if job is not None else None
        if job is None or raw is None:
            raise NotFound(f"the JobSet of pod {pod.key} is not in the cache")
        name = job.labels.get(REPLICATED_JOB_NAME_KEY)
        template: dict[str, Any] = {}
        for replicated in (raw.get("spec") or {}).get("replicatedJobs") or []:
            if replicated.get("name") == name:
                job_spec = (replicated.get("template") or {}).get("spec") or {}
                template = job_spec.get("template") or {}
        owner = owner_reference(raw, BY_KIND[JOB_SET])
        return group_pod(pod, template, owner, JOB_KEY, EXCLUSIVE_KEY)

    # ------------------------------------------------------------------ status

    def write(self) -> None:
        jobs: dict[str, list[Workload]] = {}
        for job in self.store.list(KUBE_JOB):
            jobs.setdefault(job.owner, []).append(job)
        for js in self.store.list(JOB_SET):
            key = js.key
            status: dict[str, Any] = {
                "restarts": js.status.restarts,
                "replicatedJobsStatus": self._replicated_jobs_status(js, jobs.get(key, [])),
            }
            reason = _TERMINAL.get(js.status.phase)
            if reason is not None:
                status["terminalState"] = js.status.phase
                condition = {
                    "type": js.status.phase,
                    "status": "True",
                    "reason": reason,
                    "message": f"the JobSet {js.status.phase.lower()}",
                    "lastTransitionTime": stamp(self.clock()),
                }
                status["conditions"] = [condition]
            if {k: v for k, v in status.items() if k != "conditions"} == self._written.get(key):
                continue
            self.store.write_status(JOB_SET, key, status)
            self._written[key] = {k: v for k, v in status.items() if k != "conditions"}
