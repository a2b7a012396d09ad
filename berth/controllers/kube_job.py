"""The Kubernetes ``batch/v1`` Job controller: run pods until ``completions`` of them have
succeeded, at most ``parallelism`` at a time.

Without ``completions`` the Job is a work queue: done once a pod has succeeded and none is left
running. ``Indexed`` Jobs need one success per index ``0 … completions-1``; their pods are
``<job>-<index>-<5 characters>`` and carry the index. A Job fails once more pods have failed
(an eviction counts) than ``backoffLimit``, or when it ran longer than
``activeDeadlineSeconds``; its remaining pods are deleted. A failed pod is replaced after a
back-off of 10 s doubled per failure, at most 10 minutes, from the last failure. Pods are
counted as Kubernetes counts them: one pass either creates or deletes pods, never both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from berth.api.objects import Pod, PodPhase
from berth.api.workloads import KUBE_JOB, KubeJobSpec, Workload
from berth.controllers.pod_order import is_ready, kube_active_order
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import ACTIVE, WorkloadController
from berth.store import WatchEvent

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
BACKOFF = 10.0
MAX_BACKOFF = 600.0


def backoff(failures: int) -> float:
    return 0.0 if failures <= 0 else min(BACKOFF * 2 ** (failures - 1), MAX_BACKOFF)


def pod_index(pod: Pod) -> int | None:
    text = pod.annotations.get(INDEX_KEY)
    return int(text) if text is not None and text.isdigit() else None


@dataclass
class JobPlan:
    """One pass of the controller over a Job's pods."""

    create: int = 0  # non-indexed pods to create
    indexes: list[int] = field(default_factory=list)  # indexed pods to create
    delete: list[Pod] = field(default_factory=list)
    active: int = 0  # active pods once the pass is done
    succeeded: int = 0
    failed: int = 0
    #: "Complete", "Failed: <reason>", or "" while running.
    verdict: str = ""
    completed_indexes: list[int] = field(default_factory=list)


def plan_job(spec: KubeJobSpec, pods: list[Pod], failed: int, expired: bool) -> JobPlan:
    """What the controller does with ``pods`` (its pods still in the store, ended ones
    included); ``failed`` counts every pod that failed so far, ``expired`` is whether
    activeDeadlineSeconds has passed."""
    active = [pod for pod in pods if pod.phase in ACTIVE]
    plan = JobPlan(failed=failed)
    indexed = spec.completion_mode == "Indexed"
    if indexed:
        done = sorted(
            {
                i
                for pod in pods
                if pod.phase == PodPhase.SUCCEEDED
                and (i := pod_index(pod)) is not None
                and i < (spec.completions or 0)
            }
        )
        plan.completed_indexes = done
        plan.succeeded = len(done)
    else:
        plan.succeeded = sum(1 for pod in pods if pod.phase == PodPhase.SUCCEEDED)
    reason = ""
    if failed > spec.backoff_limit:
        reason = "BackoffLimitExceeded: job has reached the specified backoff limit"
    elif expired:
        reason = "DeadlineExceeded: job was active longer than specified deadline"
    if reason:
        plan.verdict = f"Failed: {reason}"
        plan.delete = active
        return plan
    if spec.completions is None:
        if plan.succeeded > 0 and not active:
            plan.verdict = "Complete"
            return plan
        want = len(active) if plan.succeeded > 0 else spec.parallelism
    else:
        if plan.succeeded >= spec.completions:
            plan.verdict = "Complete"
            plan.delete = active
            return plan
        want = min(spec.parallelism, spec.completions - plan.succeeded)
    if indexed:
        _plan_indexed(spec, active, plan, want)
        return plan
    diff = len(active) - want
    if diff > 0:
        plan.delete = kube_active_order(active)[:diff]
    elif diff < 0:
        plan.create = -diff
    plan.active = len(active) - len(plan.delete) + plan.create
    return plan


def _plan_indexed(spec: KubeJobSpec, active: list[Pod], plan: JobPlan, want: int) -> None:
    """Delete pods whose index is out of range, duplicated or already done; otherwise create
    the lowest missing indexes."""
    completions = spec.completions or 0
    done = set(plan.completed_indexes)
    kept: dict[int, Pod] = {}
    for pod in kube_active_order(active)[::-1]:
        index = pod_index(pod)
        if index is None or index >= completions or index in done or index in kept:
            plan.delete.append(pod)
        else:
            kept[index] = pod
    if plan.delete:
        plan.active = len(kept)
        return
    missing = [i for i in range(completions) if i not in done and i not in kept]
    plan.indexes = missing[: max(want - len(kept), 0)]
    plan.active = len(kept) + len(plan.indexes)


class KubeJobController(WorkloadController):
    kind = KUBE_JOB

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        #: job key → uids of its pods that failed or were evicted, and when the last did.
        self._failed: dict[str, set[str]] = {}
        self._last_failure: dict[str, float] = {}

    def _on_object(self, event: WatchEvent, obj: Workload) -> None:
        if event == WatchEvent.DELETED:  # a Job of the same name later is a new one
            self._failed.pop(obj.key, None)
            self._last_failure.pop(obj.key, None)
        super()._on_object(event, obj)

    def reconcile(self, job: Workload) -> None:
        spec, status = job.spec, job.status
        self.ensure_group(job, spec.template)
        if status.phase in ("Complete", "Failed"):
            return
        now = self.runtime.now()
        if not status.phase:
            status.phase = "Running"
            self.condition(job, "Running")
        failed = self._failed.setdefault(job.key, set())
        for pod in self.owned.get(job.key, {}).values():
            if pod.phase in (PodPhase.FAILED, PodPhase.EVICTED) and pod.uid not in failed:
                failed.add(pod.uid)
                end = pod.end_time if pod.end_time is not None else now
                self._last_failure[job.key] = max(self._last_failure.get(job.key, end), end)
        pods = self.pods_of(job)
        deadline = spec.active_deadline
        expired = deadline is not None and now >= job.submit_time + deadline
        if deadline is not None and not expired:
            self.wake(job.key, job.submit_time + deadline)
        plan = plan_job(spec, pods, len(failed), expired)
        for pod in plan.delete:
            why = plan.verdict.partition(": ")[2] or f"more than the {spec.parallelism} wanted"
            self.delete_pod(job, pod, why)
        if plan.create or plan.indexes:
            ready_at = self._last_failure.get(job.key, 0.0) + backoff(len(failed))
            if failed and now < ready_at:
                self.wake(job.key, ready_at)
            else:
                for _ in range(plan.create):
                    self._create(job, None)
                for index in plan.indexes:
                    self._create(job, index)
        status.replicas = plan.active
        status.ready = status.available = sum(1 for pod in pods if is_ready(pod))
        status.desired = spec.completions if spec.completions is not None else spec.parallelism
        status.succeeded, status.failed = plan.succeeded, plan.failed
        if plan.verdict:
            status.phase = plan.verdict.partition(":")[0]
            self.condition(job, plan.verdict)
            self.finish_group(job, status.phase == "Complete")
            if job.owner:
                self.publish(job)  # its owner (a JobSet) acts on the verdict

    def _create(self, job: Workload, index: int | None) -> None:
        labels = {JOB_NAME_LABEL: job.name}
        annotations = {}
        prefix = job.name
        if index is not None:
            labels[INDEX_KEY] = annotations[INDEX_KEY] = str(index)
            prefix = f"{job.name}-{index}"
        self.create_pod(
            job, job.spec.template, self.generate_name(job, prefix), labels, annotations
        )


@register("kube-job")
def _start(runtime: Runtime) -> KubeJobController:
    return KubeJobController(runtime)
