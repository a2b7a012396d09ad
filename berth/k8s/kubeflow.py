"""Kubeflow's PyTorchJob in ``berth serve --kubeflow``: the simulator's Job controller against
the API server, writing what the training operator writes.

A PyTorchJob converts, as in a simulation (``berth.api.kubeflow``), to a batch Job with a
``master`` and a ``worker`` task; ``KubeflowJobs`` runs berth's Job controller
(``berth.controllers.job``) on it through a view of the cache in which the PyTorchJob kind
stands where Volcano's Job does. The controller makes the job's PodGroup (named after the job,
owned by it: the operator's Volcano gang) and, once the group is admitted, its pods;
``KubeflowJobs`` is the cache's writer for those pods (``berth.k8s.pytorch``: the operator's
names, labels, environment, ownerReference) and creates each replica's headless Service. The
job's status (conditions Created, Running, Succeeded, Failed; ``replicaStatuses``; start and
completion times) goes through ``/status`` when it changes. Under a scaling policy, an elastic
job's target of workers is written into ``spec.pytorchReplicaSpecs.Worker.replicas`` through
the scale subresource.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from berth.api.keys import TASK_INDEX_ANNOTATION
from berth.api.objects import BatchJob, JobPhase, Pod, PodPhase, task_name
from berth.controllers.job import JobController
from berth.k8s import pytorch
from berth.k8s.cache import Handler, KubeStore
from berth.k8s.client import ApiError
from berth.k8s.convert import owner_reference, stamp
from berth.k8s.kinds import PYTORCH_JOB, SERVICE
from berth.store import NotFound, WatchEvent

log = logging.getLogger("berth.k8s")

KIND = PYTORCH_JOB.kind
MERGE_PATCH = "application/merge-patch+json"
_FAILED = (JobPhase.FAILED, JobPhase.TERMINATED, JobPhase.ABORTED)


class JobKindView:
    """The cache as berth's Job controller sees it, with ``kind`` where Volcano's Job is.
    Volcano's Commands name Volcano Jobs, so the controller hears of none here."""

    def __init__(self, store: KubeStore, kind: str) -> None:
        self.store = store
        self.kind = kind

    def _kind(self, kind: str) -> str:
        return self.kind if kind == "Job" else kind

    def get(self, kind: str, key: str) -> Any | None:
        return self.store.get(self._kind(kind), key)

    def list(self, kind: str) -> list[Any]:
        return self.store.list(self._kind(kind))

    def watch(self, kind: str, handler: Handler) -> None:
        if kind != "Command":
            self.store.watch(self._kind(kind), handler)

    def create(self, kind: str, obj: Any) -> None:
        self.store.create(self._kind(kind), obj)

    def update(self, kind: str, obj: Any) -> None:
        self.store.update(self._kind(kind), obj)

    def delete(self, kind: str, key: str) -> Any:
        return self.store.delete(self._kind(kind), key)


class KubeflowJobs:
    """The PyTorchJob controller of one serve loop, and the writer of its pods (subclassed,
    with ``resource``, for other training operators' jobs: ``berth.k8s.paddle``)."""

    resource = PYTORCH_JOB

    def __init__(
        self,
        store: KubeStore,
        clock: Callable[[], float],
        at: Callable[[float, Callable[[], None]], None],
    ) -> None:
        self.store = store
        self.clock = clock
        self.kind = kind = self.resource.kind
        self.controller = JobController(JobKindView(store, kind), clock, at)
        store.pod_writers[kind] = self
        store.watch(kind, self._on_job)
        store.watch("Pod", self._on_pod)
        #: Jobs whose status may have changed, and what was last written for each.
        self.dirty: set[str] = set()
        self._written: dict[str, dict[str, Any]] = {}
        self._conditions: dict[str, list[dict[str, Any]]] = {}
        self._times: dict[str, dict[str, str]] = {}
        self._services: set[str] = set()  # Services made (or found made), by namespace/name
        self._scaled: dict[str, int] = {}  # job → the Worker replicas berth last wrote

    @property
    def runs(self) -> Mapping[str, Any]:
        return self.controller.runs

    # ------------------------------------------------------------------ watches

    def _on_job(self, event: WatchEvent, job: BatchJob) -> None:
        key = job.key
        if event == WatchEvent.DELETED:
            for book in (self._written, self._conditions, self._times, self._scaled):
                book.pop(key, None)
            self.dirty.discard(key)
            return
        if key not in self._conditions:
            # After a restart the conditions go on from what the API has.
            status = (self.store.raw(self.kind, key) or {}).get("status") or {}
            self._conditions[key] = list(status.get("conditions") or [])
            self._times[key] = {
                name: status[name] for name in ("startTime", "completionTime") if name in status
            }
        self.dirty.add(key)

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        if pod.owner_kind == self.kind:
            self.dirty.add(pod.owner)

    # ------------------------------------------------------------------ the cache's pod writer

    def manifest(self, pod: Pod) -> dict[str, Any]:
        raw = self.store.raw(KIND, pod.owner)
        if raw is None:
            raise NotFound(f"{KIND} {pod.owner} of pod {pod.key} is not in the cache")
        return pytorch.pod_manifest(
            raw,
            task_name(pod),
            _index(pod),
            pod.name,
            pod.labels,
            pod.annotations,
            pod.scheduler_name,
            owner_reference(raw, PYTORCH_JOB),
        )

    def created(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any]:
        """A new pod: its replica's headless Service is made if it is not there yet."""
        job_raw = self.store.raw(KIND, pod.owner)
        if job_raw is None:
            return raw
        rtype, index = task_name(pod), _index(pod)
        name = pytorch.replica_name(job_raw["metadata"]["name"], rtype, index)
        key = f"{pod.namespace}/{name}"
        if key in self._services:
            return raw
        body = pytorch.service_manifest(
            job_raw, rtype, index, owner_reference(job_raw, PYTORCH_JOB)
        )
        try:
            self.store.client.request("POST", SERVICE.collection(pod.namespace), body=body)
        except ApiError as exc:
            if exc.status != 409:
                raise
        self._services.add(key)
        return raw

    def update(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any] | None:
        return None  # berth changes nothing on a training pod once it exists

    # ------------------------------------------------------------------ status

    def write(self) -> None:
        """Write the status of every job that may have changed, when it differs from what was
        last written."""
        dirty, self.dirty = self.dirty, set()
        for key in sorted(dirty):
            run = self.controller.runs.get(key)
            raw = self.store.raw(self.kind, key)
            if run is None or raw is None or self.store.get(self.kind, key) is not run.job:
                continue
            status = self._status(run, raw)
            if self._written.get(key) == status:
                continue
            self.store.write_status(self.kind, key, status)
            self._written[key] = status

    def _status(self, run: Any, raw: dict[str, Any]) -> dict[str, Any]:
        """The operator's JobStatus for what the controller has counted."""
        job: BatchJob = run.job
        key, now = job.key, self.clock()
        specs = pytorch.replica_specs(raw)
        counts: dict[str, dict[str, int]] = {name: {} for name in specs}
        for (task, _), pod in run.slots.items():
            counts.setdefault(pytorch.REPLICA_TYPES.get(task, task.capitalize()), {})
            state = {
                PodPhase.RUNNING: "active",
                PodPhase.SUCCEEDED: "succeeded",
                PodPhase.FAILED: "failed",
            }.get(pod.phase)
            if state == "active" and pod.terminating:
                state = None
            if state is not None:
                bucket = counts[pytorch.REPLICA_TYPES.get(task, task.capitalize())]
                bucket[state] = bucket.get(state, 0) + 1
        conditions = self._conditions.setdefault(key, [])
        times = self._times.setdefault(key, {})
        times.setdefault("startTime", stamp(now))
        conditions = pytorch.set_condition(
            conditions, "Created", "True", f"PyTorchJob {job.name} is created.", now
        )
        leader = "Master" if "Master" in specs else "Worker"
        if (counts.get(leader) or {}).get("active"):
            conditions = pytorch.set_condition(
                conditions, "Running", "True", f"PyTorchJob {job.name} is running.", now
            )
        if job.phase == JobPhase.COMPLETED:
            message = f"PyTorchJob {job.name} is successfully completed."
            conditions = pytorch.set_condition(conditions, "Succeeded", "True", message, now)
        elif job.phase in _FAILED:
            why = job.conditions[-1][2] if job.conditions else str(job.phase)
            message = f"PyTorchJob {job.name} is failed: {why}"
            conditions = pytorch.set_condition(conditions, "Failed", "True", message, now)
        if job.phase == JobPhase.COMPLETED or job.phase in _FAILED:
            times.setdefault("completionTime", stamp(now))
        self._conditions[key] = conditions
        replica_statuses = {
            name: {**bucket, "selector": pytorch.selector(job.name, name)}
            for name, bucket in counts.items()
        }
        return {"conditions": conditions, "replicaStatuses": replica_statuses, **times}

    # ------------------------------------------------------------------ scaling

    def scale(self, targets: Mapping[str, int]) -> None:
        """Write each elastic job's target (its pods; the master counts as one) into its
        Worker replicas through the scale subresource, when berth has not written it yet."""
        for key, target in targets.items():
            run = self.controller.runs.get(key)
            raw = self.store.raw(KIND, key)
            if run is None or raw is None or run.job.elastic is None:
                continue
            master = run.tasks.get("master")
            want = target - (master.replicas if master is not None else 0)
            have = pytorch.replicas(pytorch.replica_specs(raw).get("Worker") or {})
            if want == have or self._scaled.get(key) == want:
                continue
            meta = raw["metadata"]
            path = PYTORCH_JOB.item(meta.get("namespace"), meta["name"], "scale")
            try:
                self.store.client.request(
                    "PATCH", path, body={"spec": {"replicas": want}}, content_type=MERGE_PATCH
                )
            except ApiError as exc:
                if exc.status != 404:
                    raise
                continue
            self._scaled[key] = want
            log.info("scaled", extra={"job": key, "workers": want})


def _index(pod: Pod) -> int:
    try:
        return int(pod.annotations.get(TASK_INDEX_ANNOTATION, "0"))
    except ValueError:
        return 0
