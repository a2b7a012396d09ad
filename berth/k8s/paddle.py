"""PaddlePaddle EDL's TrainingJob in ``berth serve --paddle``: the simulator's Job controller
against the API server, writing pods as EDL's controller writes them.

A TrainingJob converts, as in a simulation (``berth.api.paddle``), to a batch Job with
``master``, ``pserver`` and ``trainer`` tasks; ``PaddleJobs`` runs berth's Job controller on
it (the path ``berth.k8s.kubeflow`` runs PyTorchJobs on) and writes its pods: one container
named for the role, of the job's image (EDL's default when it names none), with the role's
resources, EDL's command (``paddle_k8s start_new_trainer`` and the like), ports and
environment (``PADDLE_JOB_NAME``, ``TRAINERS``, ``PSERVERS``, ``PADDLE_INIT_*``, ``NAMESPACE``
and ``POD_IP`` from the pod), labelled ``paddle-job``/``paddle-job-pserver``/
``paddle-job-master`` with the job's name, owned by the TrainingJob. EDL makes no Service.
The status is EDL's ``TrainingJobStatus``: ``phase`` (creating, running, succeeded, failed),
``reason`` and one ``replica_statuses`` entry per role with its pods counted by state. EDL's
autoscaler sets the parallelism of the trainers' batch Job, which berth does not make: under
a scaling policy the controller makes and removes trainer pods to its target, and the
TRAINER entry counts them. The facts follow EDL's ``pkg/updater/jobparser.go`` and
``pkg/apis/paddlepaddle/v1/types.go``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from berth.api.keys import DURATION_ANNOTATION
from berth.api.objects import BatchJob, JobPhase, Pod, PodPhase, task_name
from berth.api.paddle import DEFAULT_IMAGE, OLD_GPU, ROLE_LABELS
from berth.k8s.convert import owner_reference, pod_object
from berth.k8s.kinds import TRAINING_JOB
from berth.k8s.kubeflow import KubeflowJobs
from berth.resources import GPU, parse_quantity
from berth.store import NotFound

#: EDL's defaults for a job that gives none.
DEFAULT_PORT = 7164
DEFAULT_PORTS_NUM = 1
DEFAULT_PASSES = 1
#: The command EDL's images start each role with (a fault-tolerant job's, then another's).
COMMANDS = {
    "master": (["paddle_k8s", "start_master"], ["paddle_k8s", "start_master"]),
    "pserver": (["paddle_k8s", "start_new_pserver"], ["paddle_k8s", "start_pserver"]),
    "trainer": (["paddle_k8s", "start_new_trainer"], ["paddle_k8s", "start_trainer", "v2"]),
}
MASTER_PORTS = [
    {"name": "master-port", "containerPort": 8080},
    {"name": "etcd-port", "containerPort": 2379},
]
#: berth's roles → EDL's ``training_resource_type``.
RESOURCE_TYPES = {"master": "MASTER", "pserver": "PSERVER", "trainer": "TRAINER"}
_FAILED = (JobPhase.FAILED, JobPhase.TERMINATED, JobPhase.ABORTED)


def _spec(raw: dict[str, Any]) -> dict[str, Any]:
    return raw.get("spec") or {}


def _int(value: Any, default: int) -> int:
    return int(value) if value else default


def ports(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """A pserver's or trainer's ports: ``ports_num + ports_num_for_sparse`` of them from
    ``port``, each named ``jobport-<port>``."""
    spec = _spec(raw)
    base = _int(spec.get("port"), DEFAULT_PORT)
    total = _int(spec.get("ports_num"), DEFAULT_PORTS_NUM) + _int(
        spec.get("ports_num_for_sparse"), DEFAULT_PORTS_NUM
    )
    return [{"name": f"jobport-{p}", "containerPort": p} for p in range(base, base + total)]


def resources(raw: dict[str, Any], role: str) -> dict[str, Any]:
    """The role's resources, the old GPU name written as ``nvidia.com/gpu`` (the API server
    of today refuses the old one)."""
    given = (_spec(raw).get(role) or {}).get("resources") or {}
    out = {}
    for part in ("requests", "limits"):
        amounts = dict(given.get(part) or {})
        if OLD_GPU in amounts:
            amounts[GPU] = amounts.pop(OLD_GPU)
        if amounts:
            out[part] = amounts
    return out


def env(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """What EDL gives every container of the job, in its order."""
    meta, spec = raw.get("metadata") or {}, _spec(raw)
    trainer, pserver = spec.get("trainer") or {}, spec.get("pserver") or {}
    requests = (trainer.get("resources") or {}).get("requests") or {}
    gpus = _whole(requests.get(GPU) or requests.get(OLD_GPU))
    # One trainer process per GPU, else per whole core.
    count = gpus or _whole(requests.get("cpu"))
    trainers = str(trainer.get("min-instance", 0))
    return [
        {"name": "PADDLE_JOB_NAME", "value": meta.get("name", "")},
        {"name": "TRAINERS", "value": trainers},
        {"name": "PSERVERS", "value": str(pserver.get("min-instance", 0))},
        {"name": "ENTRY", "value": trainer.get("entrypoint", "")},
        {"name": "TOPOLOGY", "value": trainer.get("entrypoint", "")},
        {"name": "TRAINER_PACKAGE", "value": trainer.get("workspace", "")},
        {"name": "PADDLE_INIT_PORT", "value": str(_int(spec.get("port"), DEFAULT_PORT))},
        {"name": "PADDLE_INIT_TRAINER_COUNT", "value": str(count)},
        {"name": "PADDLE_INIT_PORTS_NUM", "value": str(_int(spec.get("ports_num"), 1))},
        {
            "name": "PADDLE_INIT_PORTS_NUM_FOR_SPARSE",
            "value": str(_int(spec.get("ports_num_for_sparse"), 1)),
        },
        {"name": "PADDLE_INIT_NUM_GRADIENT_SERVERS", "value": trainers},
        {"name": "PADDLE_INIT_NUM_PASSES", "value": str(_int(spec.get("passes"), DEFAULT_PASSES))},
        {"name": "PADDLE_INIT_USE_GPU", "value": "1" if gpus else "0"},
        {"name": "LD_LIBRARY_PATH", "value": "/usr/local/cuda/lib64"},
        {"name": "NAMESPACE", "valueFrom": _field("metadata.namespace")},
        {"name": "POD_IP", "valueFrom": _field("status.podIP")},
    ]


def _field(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def _whole(quantity: Any) -> int:
    """EDL's ``Quantity.Value()``: whole units, rounded up (0 for none). The quantity was
    checked when the job was read."""
    return 0 if quantity is None else math.ceil(parse_quantity(quantity))


def pod_spec(raw: dict[str, Any], role: str, scheduler_name: str) -> dict[str, Any]:
    """A role's pod spec as EDL writes it."""
    spec = _spec(raw)
    fault_tolerant = bool(spec.get("fault_tolerant"))
    container: dict[str, Any] = {
        "name": role,
        "image": spec.get("image") or DEFAULT_IMAGE,
        "command": COMMANDS[role][0 if fault_tolerant else 1],
        "ports": MASTER_PORTS if role == "master" else ports(raw),
        "env": env(raw),
        "resources": resources(raw, role),
    }
    if role != "pserver" and spec.get("VolumeMounts"):
        container["volumeMounts"] = spec["VolumeMounts"]
    out: dict[str, Any] = {"containers": [container], "schedulerName": scheduler_name}
    if spec.get("volumes"):
        out["volumes"] = spec["volumes"]
    if role == "trainer":
        out["restartPolicy"] = "Never"  # a batch Job's pods in EDL
    return out


class PaddleJobs(KubeflowJobs):
    """The TrainingJob controller of one serve loop, and the writer of its pods."""

    resource = TRAINING_JOB

    def manifest(self, pod: Pod) -> dict[str, Any]:
        raw = self.store.raw(self.kind, pod.owner)
        job = self.store.get(self.kind, pod.owner)
        if raw is None or job is None:
            raise NotFound(f"{self.kind} {pod.owner} of pod {pod.key} is not in the cache")
        role = task_name(pod)
        labels = {**pod.labels, ROLE_LABELS[role]: job.name}
        annotations = dict(pod.annotations)
        duration = ((raw.get("metadata") or {}).get("annotations") or {}).get(DURATION_ANNOTATION)
        if duration is not None and job.elastic is None:
            annotations[DURATION_ANNOTATION] = duration  # every pod runs for the job's time
        spec = pod_spec(raw, role, pod.scheduler_name)
        return pod_object(pod, spec, owner_reference(raw, TRAINING_JOB), labels, annotations)

    def created(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any]:
        return raw  # EDL makes no Service

    def scale(self, targets: Mapping[str, int]) -> None:
        """Nothing to write: a TrainingJob has no field for its trainers' target."""

    def _status(self, run: Any, raw: dict[str, Any]) -> dict[str, Any]:
        """EDL's TrainingJobStatus for what the controller has counted."""
        job: BatchJob = run.job
        counts: dict[str, dict[str, int]] = {task: {} for task in run.tasks}
        for (task, _), pod in run.slots.items():
            state = {
                PodPhase.RUNNING: "running",
                PodPhase.SUCCEEDED: "succeeded",
                PodPhase.FAILED: "failed",
            }.get(pod.phase, "starting")
            if state == "running" and pod.terminating:
                continue
            bucket = counts.setdefault(task, {})
            bucket[state] = bucket.get(state, 0) + 1
        reason = ""
        if job.phase == JobPhase.COMPLETED:
            phase = "succeeded"
        elif job.phase in _FAILED:
            phase = "failed"
            reason = job.conditions[-1][2] if job.conditions else str(job.phase)
        elif (counts.get("trainer") or {}).get("running"):
            phase = "running"
        else:
            phase = "creating"
        replica_statuses = [
            {
                "training_resource_type": RESOURCE_TYPES[task],
                "state": role_state(counts[task]),
                "resource_states": counts[task],
            }
            for task in ("master", "pserver", "trainer")
            if task in counts
        ]
        return {
            "phase": phase,
            "reason": reason,
            "scale_status": {},
            "replica_statuses": replica_statuses,
        }


def role_state(counts: dict[str, int]) -> str:
    """A role's ResourceState: failed if any pod failed, succeeded when all did, running
    while any runs, else starting."""
    if counts.get("failed"):
        return "failed"
    if counts.get("succeeded") and not counts.get("running") and not counts.get("starting"):
        return "succeeded"
    return "running" if counts.get("running") else "starting"
