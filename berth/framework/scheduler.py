"""The long-lived scheduler: owns ClusterState, the waiting jobs and the plugin set, and runs
sessions. Backends (the simulator, Kubernetes) feed it nodes, groups and pods, apply the binds a
session returns, and tell it when pods leave their nodes."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

import numpy as np

from berth.api.keys import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION
from berth.api.objects import GroupPhase, Namespace, Node, Pod, PodGroup, Queue
from berth.cluster.devices import record_devices
from berth.cluster.state import ClusterState
from berth.framework.backlog import Backlog, JobReasons
from berth.framework.config import SchedulerConfig
from berth.framework.demand import Demand
from berth.framework.explain import Explainer
from berth.framework.framework import Framework
from berth.framework.job_info import JobInfo, charge
from berth.framework.plugin import Reason, overrides
from berth.framework.podclass import PodClass
from berth.framework.reasons import NoNode, Overused
from berth.framework.registry import action_builder
from berth.framework.search import NodeSearch
from berth.framework.session import Session
from berth.framework.statement import Bind, Eviction


class Scheduler:
    def __init__(self, config: SchedulerConfig, seed: int = 0) -> None:
        self.config = config
        self.state = ClusterState(seed=seed)
        #: Bumped whenever a refused PodGroup might now be admitted: capacity freed, nodes or
        #: queues added. Enqueue re-examines old refusals only when it moved.
        self.admission_epoch = 0
        self.framework = Framework(config)
        self.search = NodeSearch(
            self.state, self.framework.filters, self.framework.scorers, config.search, seed
        )
        self.actions = [
            action_builder(name)(config.action_arguments.get(name, {})) for name in config.actions
        ]
        self.queues: dict[str, Queue] = {DEFAULT_QUEUE: Queue(DEFAULT_QUEUE)}
        #: Plugins whose answers change with time alone, and the earliest such change after the
        #: last session (``Plugin.next_change``): the backend runs a session then.
        self._timed = [p for p in self.framework.plugins if overrides(p, "next_change")]
        #: Whether departing pods are measured for their owners' profiles: only for a plugin
        #: that reads them (a measurement per pod that ends, on traces of millions).
        self.profiled = any(p.reads_owner_profiles for p in self.framework.plugins)
        self.wake_at: float | None = None
        self.jobs: dict[str, JobInfo] = {}
        #: Jobs with bound pods, and perhaps some whose last pods a session evicted until the
        #: session is over: where victims come from, without walking every job ever known.
        self.holding: dict[str, JobInfo] = {}
        self._serial = 0  # jobs known so far (JobInfo.serial)
        #: Jobs with pending pods, and PodGroups awaiting admission, in arrival order.
        self.waiting: dict[str, JobInfo] = {}
        self._waits = 0  # jobs that started waiting so far (JobInfo.since)
        #: Of the waiting jobs, those awaiting admission (with an enqueue action), and the
        #: others: the ones the placing actions serve.
        self.backlog = (
            Backlog(self.state, self.framework.per_job_admission)
            if "enqueue" in config.actions
            else None
        )
        self.servable: dict[str, JobInfo] = {} if self.backlog is not None else self.waiting
        #: What each queue's waiting jobs ask for.
        self.demand = Demand()
        self.last_reasons = JobReasons(self.backlog)
        #: Pods the last session took off their nodes (already released from ClusterState).
        self.evictions: list[Eviction] = []
        #: Resources held by bound pods, per queue (for queue shares and capability).
        self.queue_allocated: dict[str, np.ndarray] = {}
        #: Controller-owned PodGroups the last session admitted: their pods can be created now.
        self.admitted: list[PodGroup] = []
        #: The pending pods (by identity: a pending pod is referenced here only while the
        #: scheduler holds it) that arrived since the last session, and those from before it:
        #: a pod bound by a later session than the first one after its arrival has waited.
        #: Sets, not a session count per pod: a backlog holds a pod's entry, nothing more.
        self._arrived: set[int] = set()
        self._arrived_before: set[int] = set()
        #: Why each waiting job waited in the last session that left it waiting; a pod that
        #: waited and then runs keeps it as ``waited_for``.
        self.waited_for: dict[str, Reason] = {}
        #: The jobs among those whose last reason is the node search's (``NoNode``).
        self._node_waits: set[str] = set()
        #: Keys of the jobs that changed (pods came, left or were placed; group replaced; a
        #: reason given) since allocate last read it: the jobs it left out of its line as
        #: fitting nowhere that must be lined up again (``berth.actions.parking``).
        self.touched: set[str] = set()
        #: Keys of the jobs a best-effort pod was submitted to, until backfill finds they
        #: have none left: the only jobs backfill serves (a superset, checked as it goes).
        self.best_effort: set[str] = set()
        self._reads_touched = any(getattr(a, "reads_touched", False) for a in self.actions)
        #: Explains the decisions for the pods asked about, when some are (``explain``).
        self.explainer: Explainer | None = None

    def explain(self, patterns: list[str]) -> Explainer:
        """Record, from now on, why each pod matching one of ``patterns`` was placed where it
        was or refused (see berth.framework.explain)."""
        self.explainer = Explainer(patterns)
        return self.explainer

    # ------------------------------------------------------------------ inputs

    def add_node(self, node: Node) -> None:
        self.state.add_node(node)
        self.admission_epoch += 1

    def add_namespace(self, namespace: Namespace) -> None:
        """A namespace's labels, for affinity terms that select namespaces by label."""
        self.state.set_namespace(namespace)

    def update_node(self, node: Node) -> None:
        """A node's labels, taints, capacity or cordon changed (see ClusterState.update_node)."""
        self.state.update_node(node)
        self.admission_epoch += 1

    def set_schedulable(self, node: str, schedulable: bool) -> None:
        """Cordon or uncordon a node (a failure, a recovery)."""
        self.state.set_schedulable(node, schedulable)
        self.admission_epoch += 1

    def set_dra(self, objects: list[object], gpus: bool = True) -> None:
        """Take the cluster's DRA objects (ResourceSlices, DeviceClasses, ResourceClaims and
        templates): claims are allocated from now on, and the dynamic-resources filter is on.
        ``gpus``: whether DRA GPUs count as ``nvidia.com/gpu`` (see ``ClusterState.set_dra``)."""
        self.state.set_dra(objects, gpus)
        self.framework.enable_dynamic_resources()
        self.search.classes.clear()

    def add_queue(self, queue: Queue) -> None:
        self.queues[queue.name] = queue
        self.admission_epoch += 1

    def add_group(self, group: PodGroup) -> JobInfo:
        self.touched.add(group.key)
        job = self.jobs.get(group.key)
        if job is None:
            job = self.jobs[group.key] = JobInfo(group, serial=self._serial)
            self._serial += 1
        else:
            job.group = group
            job.placeholder = False
            job._min_request = None
        # Admission does not wait for its pods (a Job's come only after it).
        if self._awaits_admission(job) or job.key in self.waiting:
            self._wait(job, regrouped=True)
        return job

    def remove_group(self, key: str) -> None:
        """A PodGroup deleted by its controller (a suspended Job); its pods are gone already."""
        self._unwait(key)
        self.jobs.pop(key, None)
        self.holding.pop(key, None)
        self.touched.add(key)

    def handles(self, pod: Pod) -> bool:
        names = self.config.scheduler_names
        return not names or pod.scheduler_name in names

    def submit(self, pod: Pod) -> JobInfo:
        """Queue a pod for scheduling. A pod without a group gets an implicit group of one, so
        single pods and gangs take the same path."""
        if pod.resource_claims and self.state.dra is not None:
            self.state.dra.map_pod(pod)
        if not pod.group:
            pod.group = pod.name
            queue = pod.annotations.get(QUEUE_NAME_ANNOTATION, DEFAULT_QUEUE)
            self.add_group(
                PodGroup(
                    pod.name,
                    pod.namespace,
                    1,
                    {},
                    queue,
                    pod.priority_class_name,
                    pod.priority,
                    pod.submit_time,
                    implicit=True,
                    annotations=dict(pod.annotations),
                )
            )
        key = pod.job_key
        self.touched.add(key)
        job = self.jobs.get(key)
        if job is None:  # the group has not arrived (yet); the pod waits for it
            job = self.add_group(
                PodGroup(
                    pod.group, pod.namespace, 1, {}, DEFAULT_QUEUE, submit_time=pod.submit_time
                )
            )
            job.placeholder = True
        job.add_pending(pod, self.state.request_row(pod.requests))
        if pod.best_effort:
            self.best_effort.add(key)
        self._wait(job)
        self._arrived.add(id(pod))
        return job

    def respecified(self, job: JobInfo) -> None:
        """A waiting pod of ``job`` had its spec changed in place (``JobInfo.respecified``)."""
        job.respecified()
        self.touched.add(job.key)

    def place_bound(self, pod: Pod, node: str) -> None:
        """Account a pod that is already on a node (cluster start-up, benchmarks)."""
        job = self.submit(pod)
        self._arrived.remove(id(pod))
        request = self.state.request_row(pod.requests)
        job.remove_pending(pod, request)
        if not job.pending:
            self._unwait(job.key)
        else:
            self.demand.changed(job)
        placement = self.state.bind(pod, self.state.rows[node], request)
        charge(self.queue_allocated, job, request, 1)
        pod.bound_node = node
        if placement is not None:
            record_devices(pod, node, placement)
        if pod.resource_claims and self.state.dra is not None:
            pod.gpu_devices = self.state.dra.devices_text(pod, self.state.rows[node])
        job.bound[pod.key] = pod
        self.holding[job.key] = job

    def withdraw(self, pod: Pod) -> None:
        """A pending pod deleted before it was placed."""
        key = pod.job_key
        self.touched.add(key)
        job = self.jobs.get(key)
        if job is None:
            return
        self._arrived.discard(id(pod))
        self._arrived_before.discard(id(pod))
        job.remove_pending(pod, self.state.request_row(pod.requests))
        if not job.pending and not self._awaits_admission(job):
            self._unwait(key)
        elif key in self.waiting:
            self._wait(job)

    def _wait(self, job: JobInfo, regrouped: bool = False) -> None:
        """The job has pending pods or awaits admission, or changed while it waits (its
        PodGroup replaced: ``regrouped``)."""
        if job.key not in self.waiting:
            self._waits += 1
            job.since = self._waits
            self.waiting[job.key] = job
        self.demand.changed(job)
        backlog = self.backlog
        if backlog is None:
            return
        if job.key in backlog and not regrouped:
            backlog.touch(job)
        elif job.group.phase == GroupPhase.PENDING:
            backlog.file(job)
            self.servable.pop(job.key, None)
        else:
            backlog.drop(job.key)
            self.servable[job.key] = job

    def _unwait(self, key: str) -> None:
        job = self.waiting.pop(key, None)
        if job is not None:
            self.demand.stopped_waiting(job)
        if self.backlog is not None:
            self.backlog.drop(key)
            self.servable.pop(key, None)

    @staticmethod
    def _awaits_admission(job: JobInfo) -> bool:
        """A PodGroup enqueue has not admitted yet (implicit groups of single pods come with
        their pod)."""
        return not job.group.implicit and job.group.phase == GroupPhase.PENDING

    def release(self, pod: Pod) -> None:
        """A bound pod left its node (finished, failed, evicted)."""
        request = self.state.request_row(pod.requests)
        self.state.unbind(pod, self.state.rows[pod.bound_node], request)
        if self.profiled:
            self.state.profiles.record(pod)
        self.admission_epoch += 1
        key = pod.job_key
        self.touched.add(key)
        job = self.jobs.get(key)
        if job is not None:
            del job.bound[pod.key]
            if not job.bound:
                job.bound = {}  # the table a large job's pods grew goes with them
                self.holding.pop(job.key, None)
            charge(self.queue_allocated, job, request, -1)

    # ------------------------------------------------------------------ cycles

    @property
    def has_waiting(self) -> bool:
        return bool(self.waiting)

    def run_session(self, now: float) -> list[Bind]:
        """One cycle. Returns the binds; pods it evicted are in ``self.evictions``."""
        session = Session(
            self.state,
            self.framework,
            self.search,
            self.waiting,
            self.queues,
            now,
            has_enqueue="enqueue" in self.config.actions,
            queue_allocated=self.queue_allocated,
            all_jobs=self.jobs,
            holding=self.holding,
            admission_epoch=self.admission_epoch,
            backlog=self.backlog,
            servable=self.servable,
            demand=self.demand.current(self.waiting, self.state),
            explained=self._node_waits,
            touched=self.touched,
            best_effort=self.best_effort,
        )
        session.explainer = self.explainer
        for action in self.actions:
            action.execute(session)
        self.wake_at = min(
            (t for p in self._timed if (t := p.next_change(session)) is not None), default=None
        )
        if self.explainer is not None:
            self.explainer.settle(session, session.binds)
        admitted = sorted(session.admissions, key=lambda job: job.since)
        self.admitted = [
            job.group for job in admitted if job.group.owned and not job.group.implicit
        ]
        self._note_waits(session)
        # Only binds take pending pods away in a session, and only admissions end a wait for
        # admission.
        changed = {job.key: job for job in admitted}
        for bind in session.binds:
            bound = session.job_of(bind.pod)
            assert bound is not None  # a bound pod's job is the session's
            changed[bound.key] = bound
            self.demand.changed(bound)
        for key, job in changed.items():
            if key in self.waiting and not job.pending and not self._awaits_admission(job):
                self._unwait(key)
                self.waited_for.pop(key, None)
                if self._node_waits:
                    self._node_waits.discard(key)
        self.last_reasons = session.job_reasons
        if session.evictions:
            self.admission_epoch += 1
            for eviction in session.evictions:
                evicted = self.jobs.get(eviction.pod.job_key)
                if evicted is not None and not evicted.bound:
                    self.holding.pop(evicted.key, None)
        self.evictions = session.evictions
        if not self._reads_touched:
            self.touched.clear()
        self.state.trim_log()
        return session.binds

    def _note_waits(self, session: Session) -> None:
        """Give each pod the session bound that had waited its job's last reason, then keep
        this session's reasons for the jobs it leaves waiting. A job left waiting for nodes is
        explained once, when it starts waiting for them (once per pod class in a cycle), not
        again every cycle."""
        if self.backlog is not None and self.backlog.left:
            self.waited_for.update(self.backlog.left)
            self.backlog.left.clear()
        arrived, before = self._arrived, self._arrived_before
        for bind in session.binds:
            pod = bind.pod
            if id(pod) in before:
                before.remove(id(pod))
                reason = self.waited_for.get(pod.job_key)
                pod.waited_for = "" if reason is None else str(reason)
            else:
                arrived.discard(id(pod))
        if arrived:
            before |= arrived
            arrived.clear()
        waited = self.waited_for
        given = session.job_reasons.given
        waited.update(given)
        self.touched.update(given)
        node_waits = self._node_waits
        if node_waits:
            node_waits.difference_update(given)
        explained: dict[tuple, NoNode] = {}
        for key, cls in session.unplaced.items():
            if key in node_waits or key in session.job_reasons:
                continue
            job = self.waiting.get(key)
            if job is None or not job.pending:
                continue
            reason = explained.get(cls.key)
            if reason is None:
                text = self._search_reason(job, cls)
                reason = explained[cls.key] = NoNode(partial(str, text))
            waited[key] = reason
            node_waits.add(key)

    def pending_reason(self, pod: Pod) -> str:
        """Why a pod is still waiting, in the terms of what stops it now."""
        key = pod.job_key
        job = self.jobs.get(key)
        if job is None or job.placeholder:
            return f"podgroup {pod.group} not found"
        if not self.handles(pod):
            return f"schedulerName {pod.scheduler_name} is not handled by berth"
        reason = self.last_reasons.get(key)
        if isinstance(reason, Overused):
            # A pod no node could hold even empty (a resource no node has, in which its queue
            # deserves nothing) waits for a node, not for its queue.
            cls = self.search.compile(pod)
            state = self.state
            cols = cls.nonzero
            room = state.allocatable[: state.n][state.schedulable[: state.n]][:, cols]
            if not (room >= cls.request[cols]).all(axis=1).any():
                return self.search.explain(cls)
        if reason is not None:
            return str(reason)
        return self._search_reason(job, self.search.compile(pod))

    def pending_reasons(self, pods: Iterable[Pod]) -> dict[str, str]:
        """``pending_reason`` of many pods, by ``pod.ref``. Nothing changes while they are
        asked, so pods of one job that compile to one class share one answer (a Deployment
        of a million replicas waiting on a small cluster is asked once, not a million times)."""
        if self.search.config.mode != "full":  # a sampled search moves on with every ask
            return {pod.ref: self.pending_reason(pod) for pod in pods}
        memo: dict[tuple, str] = {}
        reasons = {}
        for pod in pods:
            job = self.jobs.get(pod.job_key)
            if job is None or job.placeholder or not self.handles(pod):
                reasons[pod.ref] = self.pending_reason(pod)
                continue
            key = (job.key, self.search.compile(pod).key)
            reason = memo.get(key)
            if reason is None:
                reason = memo[key] = self.pending_reason(pod)
            reasons[pod.ref] = reason
        return reasons

    def _search_reason(self, job: JobInfo, cls: PodClass) -> str:
        """Why a pod (of class ``cls``) of a job with no reason of its own waits: no node fits
        it, or its gang does not fit at once."""
        if self.search.place(cls) is None:
            return self.search.explain(cls)
        min_member = job.group.min_member
        if job.active < min_member:
            return f"gang {job.active}/{min_member}: not enough nodes for the whole group at once"
        return "waiting for the next scheduling cycle"
