"""Pods of the workload files whose controller's object is in the same input (their controller
ownerReference, ``berth.api.owners``; what ``berth snapshot`` writes of a running workload):
that controller adopts them, as berth serve's controllers adopt the pods the API lists after a
restart, instead of creating them a second time.

The two ways are berth serve's:

- a workload controller (CloneSet, Advanced StatefulSet, BroadcastJob, LeaderWorkerSet) knows
  its pods by owner: each pod enters the store when its owner arrives (after the owner object,
  before the controller's first pass), so the controller counts it and makes only what is
  missing, then scales, rolls out and replaces as it would have;
- the batch Job controller (Volcano Job, PyTorchJob, TrainingJob) knows its pods by name: the
  pod is held until the controller creates the pod of that name for its slot, which then takes
  the held pod's node, as berth serve's store hands a controller the pod of that name the API
  has already.

Either way a pod keeps its name and its node (``spec.nodeName``) and exists once. This happens
at load and at the owner's arrival; nothing is added to the simulation's per-event work.
"""

from __future__ import annotations

from functools import partial

from berth.api.loaded import Manifests
from berth.api.objects import Pod
from berth.api.owners import JOB_OWNER_KINDS
from berth.sim.events import Ev, EventQueue
from berth.store import MemoryStore


class Adoption:
    def __init__(self, manifests: Manifests) -> None:
        #: The pods no controller of the input owns: submitted as they are.
        self.plain: list[Pod] = []
        #: Pods of workload controllers, created in the store when their owner arrives.
        self._by_owner: list[Pod] = []
        #: Pod key → a batch Job's pod, for the controller's pod of that name.
        self._by_name: dict[str, Pod] = {}
        for pod in manifests.pods:
            if not pod.owner:  # check_owners has cleared the owners not in the input
                self.plain.append(pod)
            elif pod.owner_kind in JOB_OWNER_KINDS:
                self._by_name[pod.key] = pod
            else:
                self._by_owner.append(pod)
        self._arrivals: dict[tuple[str, str], float] = {}
        for workload in manifests.workloads:
            key = (workload.kind, workload.key)
            self._arrivals[key] = min(
                self._arrivals.get(key, workload.submit_time), workload.submit_time
            )

    def start(self, store: MemoryStore, queue: EventQueue) -> None:
        """Queue each workload controller's pod for its owner's arrival (a timer runs after the
        objects and before the controllers' passes of that instant); hand each batch Job's pod
        to its controller's pod of the same name."""
        for pod in self._by_owner:
            at = max(pod.submit_time, self._arrivals.get((pod.owner_kind, pod.owner), 0.0))
            pod.submit_time = at
            queue.push(at, Ev.TIMER, partial(store.create, "Pod", pod))
        if self._by_name:
            store.admit("Pod", self._adopt)

    def _adopt(self, pod: Pod) -> None:
        held = self._by_name.get(pod.key)
        if held is not None and held.owner == pod.owner:
            del self._by_name[pod.key]
            pod.node_name = held.node_name
