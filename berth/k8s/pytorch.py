"""Kubeflow's PyTorchJob as the training operator (v1.8) writes it: its pods, the headless
Service of each replica, and the job's status.

Pure functions of the PyTorchJob as the API holds it (``raw``): ``berth.k8s.kubeflow`` calls
them for the pods berth's Job controller makes. A pod is its replica's template with the
operator's labels (``training.kubeflow.org/*``), the environment variables PyTorch reads
(``MASTER_ADDR``, ``WORLD_SIZE``, ``RANK``, the ``PET_*`` ones of ``torchrun``), the replica's
restart policy, and the default port when the template has none, as the operator's defaulting
adds it. The facts (names, labels, variables, defaults, condition reasons) follow the
operator's ``pkg/controller.v1/pytorch`` and ``pkg/apis/kubeflow.org/v1``.
"""

from __future__ import annotations

import copy
from typing import Any

from berth.k8s.convert import stamp

OPERATOR_NAME = "pytorchjob-controller"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
#: Volcano's annotation naming a pod's task (the operator's Volcano gang setup writes it).
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"

DEFAULT_CONTAINER = "pytorch"
DEFAULT_PORT_NAME = "pytorchjob-port"
DEFAULT_PORT = 23456
DEFAULT_RESTART_POLICY = "OnFailure"
DEFAULT_RDZV_BACKEND = "c10d"
#: ``nprocPerNode`` when a job gives none (and gives no elasticPolicy.nProcPerNode).
DEFAULT_NPROC_PER_NODE = "auto"

#: The replica types, as berth's tasks name them → as the job's spec names them.
REPLICA_TYPES = {"master": "Master", "worker": "Worker"}


def replica_specs(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``spec.pytorchReplicaSpecs`` by type (``Master``, ``Worker``), keys in any case taken
    as the operator's defaulting takes them."""
    specs = (raw.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    out: dict[str, dict[str, Any]] = {}
    for key, value in specs.items():
        for name in REPLICA_TYPES.values():
            if str(key).lower() == name.lower():
                out[name] = value or {}
    return out


def replicas(spec: dict[str, Any]) -> int:
    value = spec.get("replicas")
    return 1 if value is None else int(value)


def _default_container(pod_spec: dict[str, Any]) -> dict[str, Any] | None:
    """The container named ``pytorch``, else the first (the one defaulting gives the port)."""
    containers = pod_spec.get("containers") or []
    for container in containers:
        if container.get("name") == DEFAULT_CONTAINER:
            return container
    return containers[0] if containers else None


def _with_default_port(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """``pod_spec`` (a copy) whose default container has the ``pytorchjob-port`` port."""
    pod_spec = copy.deepcopy(pod_spec)
    container = _default_container(pod_spec)
    if container is not None:
        ports = container.setdefault("ports", [])
        if not any(p.get("name") == DEFAULT_PORT_NAME for p in ports):
            ports.append({"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT})
    return pod_spec


def port(spec: dict[str, Any]) -> int:
    """The replica's ``pytorchjob-port`` (23456 unless its template names another)."""
    template_spec = (spec.get("template") or {}).get("spec") or {}
    container = _default_container(_with_default_port(template_spec)) or {}
    for item in container.get("ports") or []:
        if item.get("name") == DEFAULT_PORT_NAME:
            return int(item.get("containerPort") or DEFAULT_PORT)
    return DEFAULT_PORT


def replica_name(job: str, rtype: str, index: int) -> str:
    """``<job>-<type>-<index>``: a replica's pod and Service."""
    return f"{job}-{rtype.lower()}-{index}".replace("/", "-")


def is_master_role(specs: dict[str, dict[str, Any]], rtype: str, index: int) -> bool:
    """The master, or worker 0 of a job without one."""
    if "Master" in specs:
        return rtype == "master"
    return rtype == "worker" and index == 0


def labels(job: str, rtype: str | None = None, index: int | None = None) -> dict[str, str]:
    """The operator's labels: the job's, then a replica type's, then one replica's."""
    out = {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job.replace("/", "-")}
    if rtype is not None:
        out[REPLICA_TYPE_LABEL] = rtype.lower()
    if index is not None:
        out[REPLICA_INDEX_LABEL] = str(index)
    return out


def _nproc(raw: dict[str, Any]) -> str | None:
    spec = raw.get("spec") or {}
    elastic = spec.get("elasticPolicy")
    value = spec.get("nprocPerNode")
    if value is None and (elastic is None or elastic.get("nProcPerNode") is None):
        value = DEFAULT_NPROC_PER_NODE
    return None if value is None else str(value)


def _nnodes(raw: dict[str, Any], specs: dict[str, dict[str, Any]]) -> str:
    """``PET_NNODES`` of an elastic job: ``min:max`` (each defaulting to the other, both to the
    Worker's replicas)."""
    elastic = (raw.get("spec") or {}).get("elasticPolicy") or {}
    low, high = elastic.get("minReplicas"), elastic.get("maxReplicas")
    if low is None and high is None:
        return str(replicas(specs.get("Worker") or {}))
    low = high if low is None else low
    high = low if high is None else high
    return f"{low}:{high}"


def env(raw: dict[str, Any], rtype: str, index: int) -> list[dict[str, str]]:
    """What the operator appends to each container's environment, in its order."""
    specs = replica_specs(raw)
    name = (raw.get("metadata") or {}).get("name", "")
    spec = raw.get("spec") or {}
    total = sum(replicas(s) for s in specs.values())
    nproc = _nproc(raw)
    per_node = int(nproc) if nproc is not None and nproc.isdigit() else 1
    out = [{"name": "PYTHONUNBUFFERED", "value": "1"}]
    if "Master" in specs:
        master_port, master_addr = str(port(specs["Master"])), replica_name(name, "master", 0)
        rank = index + 1 if rtype == "worker" else index
        out += [
            {"name": "MASTER_PORT", "value": master_port},
            {"name": "PET_MASTER_PORT", "value": master_port},
            {"name": "MASTER_ADDR", "value": master_addr},
            {"name": "PET_MASTER_ADDR", "value": master_addr},
            {"name": "WORLD_SIZE", "value": str(total * per_node)},
            {"name": "RANK", "value": str(rank)},
            {"name": "PET_NODE_RANK", "value": str(rank)},
        ]
    if nproc is not None:
        out.append({"name": "PET_NPROC_PER_NODE", "value": nproc})
    if spec.get("elasticPolicy") is None:
        out.append({"name": "PET_NNODES", "value": str(total)})
    else:
        out += elastic_env(raw)
    return out


def elastic_env(raw: dict[str, Any]) -> list[dict[str, str]]:
    """The rendezvous variables of an elastic job (none without ``elasticPolicy``)."""
    elastic = (raw.get("spec") or {}).get("elasticPolicy")
    if elastic is None:
        return []
    specs = replica_specs(raw)
    name = (raw.get("metadata") or {}).get("name", "")
    host = elastic.get("rdzvHost") or replica_name(name, "worker", 0)
    rdzv_port = elastic.get("rdzvPort") or port(specs.get("Worker") or {})
    backend = str(elastic.get("rdzvBackend") or DEFAULT_RDZV_BACKEND)
    out = [
        {"name": "PET_RDZV_ENDPOINT", "value": f"{host}:{rdzv_port}"},
        {"name": "PET_RDZV_BACKEND", "value": backend},
        {"name": "PET_NNODES", "value": _nnodes(raw, specs)},
    ]
    if elastic.get("maxRestarts") is not None:
        out.append({"name": "PET_MAX_RESTARTS", "value": str(elastic["maxRestarts"])})
    if elastic.get("nProcPerNode") is not None:
        out.append({"name": "PET_NPROC_PER_NODE", "value": str(elastic["nProcPerNode"])})
    if elastic.get("rdzvId") is not None:
        out.append({"name": "PET_RDZV_ID", "value": str(elastic["rdzvId"])})
    conf = elastic.get("rdzvConf")
    if conf is not None:
        text = ",".join(f"{item.get('key', '')}={item.get('value', '')}" for item in conf)
        out.append({"name": "PET_RDZV_CONF", "value": text})
    if elastic.get("standalone"):
        out.append({"name": "PET_STANDALONE", "value": ""})
    return out


def _restart_policy(spec: dict[str, Any]) -> str:
    """The pod's restartPolicy from the replica's (``ExitCode`` leaves restarts to the
    operator: the pod's is Never)."""
    policy = spec.get("restartPolicy") or DEFAULT_RESTART_POLICY
    return "Never" if policy == "ExitCode" else policy


def pod_manifest(
    raw: dict[str, Any],
    rtype: str,
    index: int,
    name: str,
    pod_labels: dict[str, str],
    pod_annotations: dict[str, str],
    scheduler_name: str,
    owner: list[dict[str, Any]],
) -> dict[str, Any]:
    """Replica ``index`` of type ``rtype`` (``master``/``worker``) as the operator creates it,
    named ``name``, with berth's labels and annotations under the template's and the
    operator's."""
    specs = replica_specs(raw)
    spec = specs.get(REPLICA_TYPES[rtype]) or {}
    template = spec.get("template") or {}
    meta = template.get("metadata") or {}
    job = (raw.get("metadata") or {}).get("name", "")
    pod_spec = _with_default_port(template.get("spec") or {})
    variables = env(raw, rtype, index)
    for container in pod_spec.get("containers") or []:
        container["env"] = [*(container.get("env") or []), *variables]
    pod_spec["restartPolicy"] = _restart_policy(spec)
    pod_spec["schedulerName"] = scheduler_name
    labels_ = {**pod_labels, **(meta.get("labels") or {}), **labels(job, rtype, index)}
    if is_master_role(specs, rtype, index):
        labels_[JOB_ROLE_LABEL] = "master"
    annotations = {
        **pod_annotations,
        **(meta.get("annotations") or {}),
        TASK_SPEC_ANNOTATION: rtype,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": (raw.get("metadata") or {}).get("namespace"),
            "labels": labels_,
            "annotations": annotations,
            "ownerReferences": owner,
        },
        "spec": pod_spec,
    }


def service_manifest(
    raw: dict[str, Any], rtype: str, index: int, owner: list[dict[str, Any]]
) -> dict[str, Any]:
    """The headless Service of one replica: named as its pod, selecting it by the operator's
    labels, with the ports of its default container."""
    meta = raw.get("metadata") or {}
    spec = replica_specs(raw).get(REPLICA_TYPES[rtype]) or {}
    template_spec = _with_default_port((spec.get("template") or {}).get("spec") or {})
    container = _default_container(template_spec) or {}
    selector = labels(meta.get("name", ""), rtype, index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": replica_name(meta.get("name", ""), rtype, index),
            "namespace": meta.get("namespace"),
            "labels": dict(selector),
            "ownerReferences": owner,
        },
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            "ports": [
                {"name": p.get("name"), "port": int(p.get("containerPort") or 0)}
                for p in container.get("ports") or []
            ],
        },
    }


def selector(job: str, rtype: str) -> str:
    """A replica type's label selector as text (``status.replicaStatuses.<type>.selector``,
    which the scale subresource reports)."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels(job, rtype).items()))


def set_condition(
    conditions: list[dict[str, Any]], kind: str, status: str, message: str, now: float
) -> list[dict[str, Any]]:
    """The job's conditions with ``kind`` set, by the operator's rules: nothing changes once
    Failed, or when the condition already says this; Running and Restarting replace each
    other; Succeeded and Failed set Running False; the changed condition goes last."""
    if any(c["type"] == "Failed" and c["status"] == "True" for c in conditions):
        return conditions
    reason = f"PyTorchJob{kind}"
    current = next((c for c in conditions if c["type"] == kind), None)
    if current is not None and current["status"] == status and current["reason"] == reason:
        return conditions
    when = stamp(now)
    condition = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": when,
        "lastTransitionTime": when,
    }
    if current is not None and current["status"] == status:
        condition["lastTransitionTime"] = current["lastTransitionTime"]
    kept = []
    for c in conditions:
        if c["type"] == kind or {c["type"], kind} == {"Running", "Restarting"}:
            continue
        if kind in ("Failed", "Succeeded") and c["type"] == "Running":
            c = {**c, "status": "False"}
        kept.append(c)
    return [*kept, condition]
