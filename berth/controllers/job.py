"""The batch Job controller: Volcano's job lifecycle, written against the object store.

A Job becomes a PodGroup at once, but its pods only once the scheduler has admitted the group
(Inqueue), so a queue full of waiting gangs does not fill the cluster with pending pods. Each
task replica is a *slot* ``(task, index)`` whose current pod is named ``<job>-<task>-<index>``;
a slot refilled after an eviction or a restart gets a new pod object (``<job>-<task>-<index>.<n>``
for the n-th replacement) so every pod that ever existed stays visible with its own end.

Pod phase changes become lifecycle events (PodRunning, PodFailed with its exit code, PodEvicted,
TaskCompleted, PodPending after a timeout); the first matching policy of the pod's task, else of
the job, picks the action. Without a policy an evicted pod is replaced, a failed one stays failed,
and the job completes or fails when every slot has ended, as Volcano decides it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from berth.api.keys import (
    GROUP_NAME_ANNOTATION,
    JOB_NAME_LABEL,
    TASK_INDEX_ANNOTATION,
    TASK_NAME_LABEL,
)
from berth.api.objects import (
    FINAL_JOB_PHASES,
    FINAL_POD_PHASES,
    BatchJob,
    Command,
    GroupPhase,
    JobAction,
    JobEvent,
    JobPhase,
    LifecyclePolicy,
    Pod,
    PodGroup,
    PodPhase,
    TaskSpec,
)
from berth.controllers.job_status import (
    Slot,
    job_counts,
    min_resources,
    running_or_pending,
    task_ready,
    task_succeeded,
    verdict,
)
from berth.controllers.runtime import Runtime, register
from berth.store import ObjectStore, WatchEvent

_ADMITTED = (GroupPhase.INQUEUE, GroupPhase.RUNNING)
#: Phases in which the controller keeps every slot filled.
_ACTIVE = (JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING)
_LIVE = (PodPhase.PENDING, PodPhase.BOUND, PodPhase.RUNNING)
_EVENT_OF_PHASE = {
    PodPhase.RUNNING: JobEvent.POD_RUNNING,
    PodPhase.FAILED: JobEvent.POD_FAILED,
    PodPhase.EVICTED: JobEvent.POD_EVICTED,
}


@dataclass(slots=True)
class _Run:
    job: BatchJob
    group: PodGroup
    tasks: dict[str, TaskSpec]
    slots: dict[Slot, Pod] = field(default_factory=dict)  # the current pod of each slot
    attempts: dict[Slot, int] = field(default_factory=dict)  # pods made for each slot so far
    #: Slots whose pods were made before the controller started, none made here yet (None:
    #: not looked for yet; they are looked for when the job's first pod is to be made).
    before: set[Slot] | None = None
    #: Bumped by every restart, abort and resume, so a delayed action or a pending-timeout
    #: check that was armed before it does nothing.
    version: int = 0


class JobController:
    """``now`` reads the clock; ``schedule(at, callback)`` runs ``callback`` at time ``at``
    (the simulator's event queue, a requeue-after on Kubernetes); ``soon(callback)``, when
    given, runs it once everything at this instant has happened (a work queue's next pass):
    a job's status and missing pods are then brought up to date once for all its pods that
    changed at one instant, not once per pod (which is quadratic in a job's pods)."""

    def __init__(
        self,
        store: ObjectStore,
        now: Callable[[], float],
        schedule: Callable[[float, Callable[[], None]], None],
        soon: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self.store = store
        self.now = now
        self.schedule = schedule
        self.soon = soon
        self._changed: dict[str, _Run] = {}  # jobs whose pods changed, for the next pass
        self.runs: dict[str, _Run] = {}
        self._owned: dict[str, tuple[_Run, Slot]] = {}  # pod key → its job and slot
        self._seen: dict[str, PodPhase] = {}  # pod key → phase last handled
        #: pod ref → why the controller deleted the pod (restart, abort, ...).
        self.deleted: dict[str, str] = {}
        #: The pods a job's slots already had before this controller started (a backend that
        #: restarts with them running: berth serve), as the attempts made for each slot; a
        #: slot's first pod here takes the name of the latest one, which adopts it (asked
        #: once per job, before its first pod is made here).
        self.made_before: Callable[[BatchJob], dict[Slot, int]] = lambda job: {}
        store.watch("Job", self._on_job)
        store.watch("PodGroup", self._on_group)
        store.watch("Pod", self._on_pod)
        store.watch("Command", self._on_command)

    # ------------------------------------------------------------------ watch handlers

    def _on_job(self, event: WatchEvent, job: BatchJob) -> None:
        if event != WatchEvent.ADDED:
            return
        group = PodGroup(
            name=job.name,
            namespace=job.namespace,
            min_member=job.min_available,
            min_resources=min_resources(job),
            queue=job.queue,
            priority_class_name=job.priority_class_name,
            priority=job.priority,
            submit_time=job.submit_time,
            annotations=dict(job.annotations),
            preemptable=job.preemptable,
            network_topology=job.network_topology,
            owned=True,
            min_task_member={
                task.name: task.min_available
                for task in job.tasks
                if task.min_available is not None
            },
        )
        run = self.runs[job.key] = _Run(job, group, {task.name: task for task in job.tasks})
        self._set_phase(run, JobPhase.PENDING, "created; pods wait for the PodGroup's admission")
        self.store.create("PodGroup", group)

    def _on_group(self, event: WatchEvent, group: PodGroup) -> None:
        run = self.runs.get(group.key)
        if event == WatchEvent.MODIFIED and run is not None and run.group is group:
            self._sync(run)

    def _on_command(self, event: WatchEvent, command: Command) -> None:
        if event != WatchEvent.ADDED:
            return
        run = self.runs.get(f"{command.namespace}/{command.target}")
        if run is None:
            return  # the loader refuses Commands whose Job is not defined
        why = f"Command {command.name}" + (f": {command.reason}" if command.reason else "")
        self._act(run, command.action, None, why)

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        owned = self._owned.get(pod.key)
        if owned is None:
            return
        if event == WatchEvent.DELETED:
            # Deleted by someone else (kubectl delete, a drain) while it held its slot:
            # Volcano's controller takes that as the pod's PodEvicted event.
            run, slot = owned
            if run.slots.get(slot) is not pod or run.job.phase not in _ACTIVE:
                return
            if pod.ref in self.deleted or pod.phase not in (*_LIVE, PodPhase.DELETED):
                return  # this controller's own deletion, or a pod that had ended
            pod.phase = PodPhase.EVICTED
        elif event != WatchEvent.MODIFIED:
            return
        phase = pod.phase
        if self._seen.get(pod.key) == phase:
            return
        self._seen[pod.key] = phase
        run, slot = owned
        if run.slots.get(slot) is not pod or run.job.phase not in _ACTIVE:
            return
        self._pod_event(run, slot, pod)
        if run.job.phase not in _ACTIVE:
            return
        if self.soon is None:
            self._update_status(run)
            self._sync(run)
            return
        if not self._changed:
            self.soon(self._pass)
        self._changed[run.job.key] = run

    def _pass(self) -> None:
        """Status and missing pods of every job whose pods changed since the last pass."""
        changed, self._changed = self._changed, {}
        for run in changed.values():
            if run.job.phase in _ACTIVE:
                self._update_status(run)
                self._sync(run)

    # ------------------------------------------------------------------ events and policies

    def _pod_event(self, run: _Run, slot: Slot, pod: Pod) -> None:
        task = run.tasks[slot[0]]
        events = []
        if pod.phase in _EVENT_OF_PHASE:
            events.append(_EVENT_OF_PHASE[pod.phase])
        if pod.phase == PodPhase.SUCCEEDED and task_succeeded(run.slots, task):
            events.append(JobEvent.TASK_COMPLETED)
        for event in events:
            policy = self._policy(run, task, event, pod.exit_code)
            if policy is not None:
                self._apply(run, policy, pod, f"{event} of pod {pod.name}")
                return

    @staticmethod
    def _policy(
        run: _Run, task: TaskSpec, event: JobEvent, exit_code: int | None
    ) -> LifecyclePolicy | None:
        for policy in (*task.policies, *run.job.policies):
            if policy.matches(event, exit_code):
                return policy
        return None

    def _apply(self, run: _Run, policy: LifecyclePolicy, pod: Pod, why: str) -> None:
        if not policy.timeout:
            self._act(run, policy.action, pod, why)
            return
        version = run.version

        def later() -> None:
            if run.version == version and run.job.phase in _ACTIVE:
                self._act(run, policy.action, pod, f"{why}, {policy.timeout:g}s before")

        self.schedule(self.now() + policy.timeout, later)

    def _arm_pending_timeouts(self, run: _Run, task: TaskSpec, pod: Pod) -> None:
        """PodPending policies with a timeout fire if the pod is still pending by then."""
        for policy in (*task.policies, *run.job.policies):
            if policy.timeout and policy.matches(JobEvent.POD_PENDING, None):
                version = run.version

                def check(policy: LifecyclePolicy = policy, version: int = version) -> None:
                    if (
                        run.version == version
                        and run.job.phase in _ACTIVE
                        and pod.phase == PodPhase.PENDING
                    ):
                        why = f"PodPending of pod {pod.name} for {policy.timeout:g}s"
                        self._act(run, policy.action, pod, why)

                self.schedule(self.now() + policy.timeout, check)
                return

    def _act(self, run: _Run, action: JobAction, pod: Pod | None, why: str) -> None:
        job = run.job
        if job.phase in FINAL_JOB_PHASES:
            return
        if action == JobAction.RESUME_JOB:
            if job.phase == JobPhase.ABORTED:
                self._resume(run, why)
            return
        if job.phase == JobPhase.ABORTED:
            if action == JobAction.TERMINATE_JOB:
                self._finish(run, JobPhase.TERMINATED, f"TerminateJob after {why}")
            return
        if action == JobAction.RESTART_JOB:
            self._restart(run, list(run.slots), f"RestartJob after {why}", JobPhase.PENDING)
        elif action == JobAction.RESTART_TASK:
            if pod is None:
                return  # a Command has no task; Volcano refuses RestartTask on a Job too
            task = self._owned[pod.key][1][0]
            slots = [slot for slot in run.slots if slot[0] == task]
            self._restart(run, slots, f"RestartTask {task} after {why}", None)
        elif action == JobAction.RESTART_POD:
            if pod is None:
                return
            self._restart(run, [self._owned[pod.key][1]], f"RestartPod after {why}", None)
        elif action == JobAction.ABORT_JOB:
            self._abort(run, f"AbortJob after {why}")
        elif action == JobAction.TERMINATE_JOB:
            self._finish(run, JobPhase.TERMINATED, f"TerminateJob after {why}")
        elif action == JobAction.COMPLETE_JOB:
            self._finish(run, JobPhase.COMPLETED, f"CompleteJob after {why}")

    # ------------------------------------------------------------------ actions

    def _restart(self, run: _Run, slots: list[Slot], why: str, then: JobPhase | None) -> None:
        """Kill the slots' pods and refill them; the job fails instead once its restarts
        reach maxRetry (Volcano counts the restart that reaches it as the failing one)."""
        if not self._retry(run, why):
            return
        run.version += 1
        self._set_phase(run, JobPhase.RESTARTING, why)
        self._kill([run.slots.pop(slot) for slot in slots if slot in run.slots], why)
        self._set_phase(run, then or running_or_pending(run.job, run.slots), "pods recreated")
        self._sync(run)

    def _retry(self, run: _Run, why: str) -> bool:
        """Count a restart; False (and the job Failed) once the count reaches maxRetry."""
        job = run.job
        job.retries += 1
        if job.retries < job.max_retry:
            return True
        self._finish(run, JobPhase.FAILED, f"{why}: restarts reached maxRetry {job.max_retry}")
        return False

    def _abort(self, run: _Run, why: str) -> None:
        """Suspend: unfinished pods go (finished ones are kept), the PodGroup leaves the
        scheduler; ResumeJob brings it back and refills the emptied slots."""
        run.version += 1
        self._set_phase(run, JobPhase.ABORTING, why)
        self._kill([pod for pod in run.slots.values() if pod.phase not in FINAL_POD_PHASES], why)
        run.group.phase = GroupPhase.PENDING
        self.store.delete("PodGroup", run.group.key)
        self._set_phase(run, JobPhase.ABORTED, why)

    def _resume(self, run: _Run, why: str) -> None:
        """Resuming counts as a restart, as in Volcano: past maxRetry the job fails instead."""
        if not self._retry(run, f"ResumeJob by {why}"):
            return
        run.version += 1
        run.group.phase = GroupPhase.PENDING
        run.group.end_time = None
        self._set_phase(run, JobPhase.RESTARTING, f"ResumeJob by {why}")
        self._set_phase(run, JobPhase.PENDING, "pods wait for the PodGroup's admission")
        self.store.create("PodGroup", run.group)

    def _finish(self, run: _Run, phase: JobPhase, why: str) -> None:
        """A final phase: pods still running are killed, finished ones are kept."""
        run.version += 1
        alive = [pod for pod in run.slots.values() if pod.phase not in FINAL_POD_PHASES]
        transient = {
            JobPhase.COMPLETED: JobPhase.COMPLETING,
            JobPhase.TERMINATED: JobPhase.TERMINATING,
        }.get(phase)
        if transient is not None and alive:
            self._set_phase(run, transient, why)
        self._kill(alive, why)
        group = run.group
        group.phase = GroupPhase.COMPLETED if phase == JobPhase.COMPLETED else GroupPhase.FAILED
        group.end_time = self.now()
        self._set_phase(run, phase, why)

    def _kill(self, pods: list[Pod], why: str) -> None:
        for pod in pods:
            if pod.phase in FINAL_POD_PHASES:
                continue
            self.deleted[pod.ref] = f"deleted by job controller: {why}"
            self.store.delete("Pod", pod.key)

    # ------------------------------------------------------------------ pods and status

    def _sync(self, run: _Run) -> None:
        """Fill every empty slot of the tasks whose dependencies are ready, once admitted."""
        if run.job.phase not in _ACTIVE or run.group.phase not in _ADMITTED:
            return
        for task in run.job.tasks:
            if not self._dependencies_ready(run, task):
                continue
            for index in range(task.replicas):
                pod = run.slots.get((task.name, index))
                if pod is None or pod.phase in (PodPhase.EVICTED, PodPhase.DELETED):
                    self._create(run, task, index)

    def _create(self, run: _Run, task: TaskSpec, index: int) -> None:
        job, slot = run.job, (task.name, index)
        if run.before is None:
            made = self.made_before(job)
            run.attempts.update(made)
            run.before = set(made)
        attempt = run.attempts.get(slot, 0)
        if slot in run.before:
            run.before.discard(slot)
            attempt -= 1  # the name of the slot's latest pod, made before: it is adopted
        run.attempts[slot] = attempt + 1
        name = f"{job.name}-{task.name}-{index}" + (f".{attempt}" if attempt else "")
        template = task.template
        pod = replace(
            template,
            name=name,
            labels={**template.labels, JOB_NAME_LABEL: job.name, TASK_NAME_LABEL: task.name},
            annotations={
                **template.annotations,
                GROUP_NAME_ANNOTATION: job.name,
                TASK_INDEX_ANNOTATION: str(index),
            },
            group=job.name,
            submit_time=self.now(),
            owner=job.key,
            preemptable=template.preemptable and job.preemptable,
        )
        run.slots[slot] = pod
        self._owned[pod.key] = (run, slot)
        self._seen[pod.key] = PodPhase.PENDING
        self.store.create("Pod", pod)
        self._arm_pending_timeouts(run, task, pod)

    def _dependencies_ready(self, run: _Run, task: TaskSpec) -> bool:
        if not task.depends_on:
            return True
        ready = [task_ready(run.slots, run.tasks[name]) for name in task.depends_on]
        return any(ready) if task.depends_on_any else all(ready)

    def _update_status(self, run: _Run) -> None:
        job = run.job
        counts = job_counts(run.slots.values())
        job.counts = counts
        succeeded, failed = counts["succeeded"], counts["failed"]
        if job.min_success is not None and succeeded >= job.min_success:
            self._finish(run, JobPhase.COMPLETED, f"{succeeded} pods succeeded (minSuccess)")
            return
        if succeeded + failed >= job.replicas:
            self._finish(run, *verdict(run.job, run.slots, succeeded))
            return
        phase = running_or_pending(run.job, run.slots)
        if phase != job.phase:
            self._set_phase(run, phase, f"{counts['running']} pods running")

    def _set_phase(self, run: _Run, phase: JobPhase, why: str) -> None:
        job = run.job
        if job.phase == phase and job.conditions:
            return
        job.phase = phase
        job.conditions.append((self.now(), phase, why))


@register("volcano-job")
def _start(runtime: Runtime) -> JobController:
    return JobController(runtime.store, runtime.now, runtime.at, runtime.soon)
