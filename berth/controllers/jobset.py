"""The JobSet controller: a ``batch/v1`` Job ``<jobset>-<replicatedJob>-<index>`` for every
replica of every replicated Job, labelled as JobSet labels them; the Jobs run under berth's Job
controller, which reports each verdict back.

The JobSet completes by its success policy (``All``: every Job of the target replicated Jobs
complete; ``Any``: one of them; targets default to all) and deletes the Jobs still running. A
failed Job restarts the JobSet while ``restarts < maxRestarts``: every Job and its pods are
deleted and the Jobs created again (restart-attempt label + 1); otherwise the JobSet fails and
its running Jobs are deleted. With ``alpha.jobset.sigs.k8s.io/exclusive-topology`` every pod
carries upstream's affinity to its own job-key and anti-affinity to any other job-key in that
topology key: one Job per domain, each Job within one.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from berth.api.jobset import (
    EXCLUSIVE_KEY,
    JOB_GLOBAL_INDEX_KEY,
    JOB_INDEX_KEY,
    JOB_KEY,
    JOBSET_NAME_KEY,
    REPLICATED_JOB_NAME_KEY,
    REPLICATED_JOB_REPLICAS_KEY,
    RESTART_ATTEMPT_KEY,
    JobSetSpec,
    ReplicatedJob,
)
from berth.api.keys import QUEUE_NAME_ANNOTATION
from berth.api.lws import exclusive_affinity
from berth.api.objects import FINAL_POD_PHASES, GroupPhase
from berth.api.workloads import JOB_SET, KUBE_JOB, PodTemplate, Workload
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import WorkloadController
from berth.store import NotFound, WatchEvent

COMPLETE, FAILED = "Complete", "Failed"  # the Job controller's verdicts


def job_key(namespace: str, name: str) -> str:
    """Upstream's job-key label: the SHA-1 of ``<namespace>/<job name>``."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def succeeded(spec: JobSetSpec, verdicts: dict[str, str], prefix: str) -> bool:
    """Whether the success policy is met; ``verdicts``: Job name → its phase."""
    targets = [
        r
        for r in spec.replicated_jobs
        if not spec.success_targets or r.name in spec.success_targets
    ]
    done = [
        verdicts.get(f"{prefix}-{r.name}-{i}") == COMPLETE
        for r in targets
        for i in range(r.replicas)
    ]
    return any(done) if spec.success_operator == "Any" else all(done)


class JobSetController(WorkloadController):
    kind = JOB_SET

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        self.store.watch(KUBE_JOB, self._on_job)

    def _on_job(self, event: WatchEvent, job: Workload) -> None:
        if job.owner and event != WatchEvent.ADDED:
            if self.store.get(JOB_SET, job.owner) is not None:
                self.enqueue(job.owner)

    def reconcile(self, js: Workload) -> None:
        spec: JobSetSpec = js.spec
        status = js.status
        if status.phase in ("Completed", "Failed"):
            return
        if not status.phase:
            status.phase = "Running"
        jobs = self._jobs(js)
        verdicts = {name: job.status.phase for name, job in jobs.items()}
        failed = sorted(name for name, phase in verdicts.items() if phase == FAILED)
        if failed:
            if status.restarts < spec.max_restarts:
                for job in jobs.values():
                    self._delete_job(js, job, f"restarting the JobSet (job {failed[0]} failed)")
                status.restarts += 1
                self.condition(js, f"RestartingJobSet: job {failed[0]} failed")
                jobs, verdicts = {}, {}
            else:
                status.phase = "Failed"
                why = "reached the maximum number of restarts" if spec.max_restarts else "failed"
                self.condition(js, f"Failed: FailedJobs: job {failed[0]} failed, jobset {why}")
                self._finish(js, jobs)
                return
        elif succeeded(spec, verdicts, js.name):
            status.phase = "Completed"
            self.condition(js, "Completed: AllJobsCompleted")
            self._finish(js, jobs)
            return
        index = 0
        for rjob in spec.replicated_jobs:
            for i in range(rjob.replicas):
                name = f"{js.name}-{rjob.name}-{i}"
                if name not in jobs:
                    jobs[name] = self.create_job(js, rjob, i, index)
                index += 1
        status.desired = index
        status.replicas = sum(
            1 for job in jobs.values() if job.status.phase not in (COMPLETE, FAILED)
        )
        status.succeeded = sum(1 for job in jobs.values() if job.status.phase == COMPLETE)
        status.failed = sum(1 for job in jobs.values() if job.status.phase == FAILED)

    # ------------------------------------------------------------------ Jobs

    def _jobs(self, js: Workload) -> dict[str, Workload]:
        return {
            job.name: job
            for job in self.store.list(KUBE_JOB)
            if job.owner == js.key and job.namespace == js.namespace
        }

    def create_job(self, js: Workload, rjob: ReplicatedJob, index: int, glob: int) -> Workload:
        """Job ``index`` of ``rjob`` (``glob``: its index over every replicated Job), made
        in the store."""
        name = f"{js.name}-{rjob.name}-{index}"
        key = job_key(js.namespace, name)
        labels = {
            JOBSET_NAME_KEY: js.name,
            REPLICATED_JOB_NAME_KEY: rjob.name,
            REPLICATED_JOB_REPLICAS_KEY: str(rjob.replicas),
            JOB_INDEX_KEY: str(index),
            JOB_GLOBAL_INDEX_KEY: str(glob),
            RESTART_ATTEMPT_KEY: str(js.status.restarts),
            JOB_KEY: key,
        }
        annotations = dict(labels)
        topology = js.annotations.get(EXCLUSIVE_KEY)
        if topology:
            annotations[EXCLUSIVE_KEY] = topology
        proto = rjob.job.template.pod
        pod_annotations = {**proto.annotations, **annotations}
        queue = js.annotations.get(QUEUE_NAME_ANNOTATION)
        if queue and QUEUE_NAME_ANNOTATION not in proto.annotations:
            pod_annotations[QUEUE_NAME_ANNOTATION] = queue
        affinity = proto.affinity
        if topology:
            affinity = exclusive_affinity(affinity, JOB_KEY, key, topology)
        pod = replace(
            proto,
            labels={**proto.labels, **labels},
            annotations=pod_annotations,
            affinity=affinity,
        )
        template: PodTemplate = rjob.job.template
        job = Workload(
            kind=KUBE_JOB,
            name=name,
            namespace=js.namespace,
            spec=replace(rjob.job, template=replace(template, pod=pod)),
            labels={**rjob.labels, **labels},
            annotations={**rjob.annotations, **annotations},
            submit_time=self.runtime.now(),
            owner=js.key,
        )
        self.store.create(KUBE_JOB, job)
        js.status.created += 1
        return job

    def _delete_job(self, js: Workload, job: Workload, why: str, ok: bool = False) -> None:
        """Delete a Job and its pods (Kubernetes' garbage collector deletes them with it)."""
        for pod in self.store.list("Pod"):
            if pod.owner != job.key or pod.owner_kind != KUBE_JOB:
                continue
            if pod.phase not in FINAL_POD_PHASES:
                self.deleted[pod.ref] = f"deleted by the JobSet controller: {why}"
                js.status.deleted += 1
            try:
                self.store.delete("Pod", pod.key)
            except NotFound:
                pass
        group = self.store.get("PodGroup", f"{job.namespace}/{job.group}") if job.group else None
        if group is not None and group.end_time is None:
            group.phase = GroupPhase.COMPLETED if ok else GroupPhase.FAILED
            group.end_time = self.runtime.now()
        try:
            self.store.delete(KUBE_JOB, job.key)
        except NotFound:
            pass

    def _finish(self, js: Workload, jobs: dict[str, Workload]) -> None:
        """The JobSet ended: delete the Jobs still running."""
        for job in jobs.values():
            if job.status.phase not in (COMPLETE, FAILED):
                why = f"the JobSet {js.status.phase.lower()}"
                self._delete_job(js, job, why, js.status.phase == "Completed")
        js.status.replicas = 0


@register("jobset")
def _start(runtime: Runtime) -> JobSetController:
    return JobSetController(runtime)
