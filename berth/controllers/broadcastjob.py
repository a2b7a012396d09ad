"""The BroadcastJob controller (OpenKruise ``apps.kruise.io/v1alpha1``): one pod on every node
the template fits (``node_fit``), run to completion.

Each pod is pinned to its node by a required node affinity on ``metadata.name`` and goes
through the scheduler like any pod, so a busy node makes it wait. At most ``parallelism`` pods
(a count, or a percentage of the eligible nodes) are active at once. ``completionPolicy``
``Always`` completes the job once every eligible node has a pod that ended, and fails it after
``activeDeadlineSeconds``; ``Never`` keeps it running and places pods on nodes that become
eligible later. A failed pod is not retried: ``failurePolicy`` ``FailFast`` fails the job,
``Continue`` goes on, ``Pause`` pauses it. A pod whose node no longer fits is deleted.
"""

from __future__ import annotations

from dataclasses import replace

from berth.api.objects import Node, Pod, PodPhase
from berth.api.selectors import NodeSelectorTerm, Requirement
from berth.api.workloads import BROADCAST_JOB, Workload, scaled
from berth.controllers.node_fit import why_not
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import ACTIVE, WorkloadController
from berth.store import WatchEvent

JOB_NAME_LABEL = "broadcastjob-name"
_UNLIMITED = 2**31 - 1


def pinned_node(pod: Pod) -> str:
    """The node a BroadcastJob pod was made for (its node-name affinity)."""
    for term in pod.affinity.node_required:
        for requirement in term.fields:
            if requirement.key == "metadata.name" and requirement.values:
                return requirement.values[0]
    return pod.node_name


class BroadcastJobController(WorkloadController):
    kind = BROADCAST_JOB

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        self.store.watch("Node", self._on_node)

    def _on_node(self, event: WatchEvent, node: Node) -> None:
        for job in self.store.list(BROADCAST_JOB):
            if job.status.phase not in ("Completed", "Failed"):
                self.enqueue(job.key)

    def reconcile(self, job: Workload) -> None:
        spec, status = job.spec, job.status
        self.ensure_group(job, spec.template)
        if status.phase in ("Completed", "Failed"):
            return
        now = self.runtime.now()
        pods = self.pods_of(job)
        on_node = {pinned_node(pod): pod for pod in pods}
        desired: dict[str, Pod | None] = {}
        eligible: list[str] = []
        misfits: list[Pod] = []
        for node in sorted(self.store.list("Node"), key=lambda n: n.name):
            pod = on_node.get(node.name)
            if pod is not None:
                if why_not(replace(spec.template.pod, node_name=node.name), node):
                    if pod.phase in ACTIVE:
                        misfits.append(pod)
                    continue
                desired[node.name] = pod
            elif not why_not(replace(spec.template.pod, node_name=node.name), node):
                eligible.append(node.name)
                desired[node.name] = None
        active = [pod for pod in pods if pod.phase in ACTIVE]
        failed = [pod for pod in pods if pod.phase == PodPhase.FAILED]
        status.desired, status.replicas = len(desired), len(active)
        status.succeeded = sum(1 for pod in pods if pod.phase == PodPhase.SUCCEEDED)
        status.failed = len(failed)
        if spec.paused:
            self._phase(job, "Paused", "paused")
            return
        reason = ""
        if failed and spec.failure_type == "Pause":
            self._phase(job, "Paused", f"pod {failed[0].name} failed (failurePolicy Pause)")
            return
        if failed and spec.failure_type == "FailFast":
            reason = f"pod {failed[0].name} failed (failurePolicy FailFast)"
        deadline = spec.active_deadline
        if not reason and spec.completion_type == "Always" and deadline is not None:
            if now >= job.submit_time + deadline:
                reason = "DeadlineExceeded: job was active longer than activeDeadlineSeconds"
            else:
                self.wake(job.key, job.submit_time + deadline)
        if reason:
            for pod in active:
                self.delete_pod(job, pod, reason)
            self._finish(job, "Failed", reason)
            return
        self._phase(job, "Running", "running")
        for pod in misfits:
            self.delete_pod(job, pod, f"node {pinned_node(pod)} no longer fits the template")
        limit = scaled(
            _UNLIMITED if spec.parallelism is None else spec.parallelism, len(desired), True
        )
        room = max(limit - (len(active) - len(misfits)), 0)
        for node in eligible[:room]:
            self._create(job, node)
        if spec.completion_type == "Always" and desired:
            if all(pod is not None and pod.phase not in ACTIVE for pod in desired.values()):
                ok, bad = status.succeeded, status.failed
                self._finish(job, "Completed", f"{ok} pods succeeded, {bad} pods failed")

    def _create(self, job: Workload, node: str) -> None:
        template = job.spec.template
        term = NodeSelectorTerm(fields=(Requirement("metadata.name", "In", (node,)),))
        affinity = replace(template.pod.affinity, node_required=(term,))
        name = self.generate_name(job, job.name)
        self.create_pod(job, template, name, {JOB_NAME_LABEL: job.name}, affinity=affinity)

    def _phase(self, job: Workload, phase: str, why: str) -> None:
        if job.status.phase != phase:
            job.status.phase = phase
            self.condition(job, f"{phase}: {why}")

    def _finish(self, job: Workload, phase: str, why: str) -> None:
        self._phase(job, phase, why)
        self.finish_group(job, phase == "Completed")


@register("broadcastjob")
def _start(runtime: Runtime) -> BroadcastJobController:
    return BroadcastJobController(runtime)
