"""One trace, written in the shape of another API (``berth trace convert --as``), so the same jobs
compare old and new ways of asking for the same thing.

- ``volcano`` (the default): a Volcano PodGroup and its Pods, GPUs as ``nvidia.com/gpu``.
- ``dra``: the same, with GPUs asked through Dynamic Resource Allocation: one
  ResourceClaimTemplate per GPU count (``gpus-N``), which each GPU pod names in place of its
  ``nvidia.com/gpu`` request; a cluster is written as Nodes without ``nvidia.com/gpu`` plus a
  ResourceSlice of their GPUs each and the DeviceClass they belong to. berth counts such claims
  as the GPUs they are, so placements match the ``volcano`` shape's. Fractional GPUs (shared
  GPUs) are not whole devices and are refused.
- ``workload``: Kubernetes' Workload API: a Workload with one gang template, a PodGroup made
  from it, and the pods naming it in ``spec.schedulingGroup``; gangs are decided as Volcano's,
  so placements and completions match, with the queue carried by Volcano's queue-name
  annotation (the API has none) and ``minResources`` dropped (nor has it that).
- ``lws``: a LeaderWorkerSet of one group per job (first pod the leader), which LWS gangs as
  Volcano would; but LWS serves: a group whose pod ends is started again, so its pods never
  complete as the trace's did. Jobs whose workers differ in shape cannot be written.
- ``jobset``: a JobSet of one replicated Job per task (its pods alike); JobSet has no gang, so
  where a job's pods do not all fit at once some start before the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from berth.api.jobset import JOBSET_API
from berth.api.keys import (
    DEFAULT_QUEUE,
    GPU_PRODUCT_LABEL,
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    SUBMIT_TIME_ANNOTATION,
)
from berth.api.lws import LWS_API
from berth.api.objects import Node, Pod
from berth.api.schema import RESOURCE_API
from berth.api.workload_api import WORKLOAD_API
from berth.resources import GPU
from berth.traces.errors import TraceError
from berth.traces.manifests import node_manifest, pod_group_manifest, pod_manifest, seconds
from berth.traces.model import ROLE_LABEL, TraceJob

SHAPES = ("volcano", "dra", "workload", "lws", "jobset")
#: The DeviceClass (and driver) DRA-shaped GPUs belong to.
GPU_DRIVER = "gpu.nvidia.com"
CLAIM = "gpus"
MILLI = 1000

Shaper = Callable[[TraceJob], list[dict[str, Any]]]


def check_shape(shape: str) -> None:
    if shape not in SHAPES:
        raise TraceError(f"--as {shape}: unknown shape (expected one of {', '.join(SHAPES)})")


def shaper(shape: str) -> Shaper:
    """What writes one job in ``shape`` (a fresh one per output: DRA's remembers the claim
    templates it has written)."""
    check_shape(shape)
    if shape == "dra":
        return _Dra()
    return {
        "volcano": _volcano,
        "workload": _workload,
        "lws": _leader_worker_set,
        "jobset": _job_set,
    }[shape]


def cluster_manifests(nodes: Iterable[Node], shape: str) -> Iterable[dict[str, Any]]:
    """A node table's nodes in ``shape``: as they are, or for ``dra`` the DeviceClass, then
    each Node without ``nvidia.com/gpu`` and a ResourceSlice of its GPUs."""
    check_shape(shape)
    if shape != "dra":
        yield from (node_manifest(node) for node in nodes)
        return
    yield device_class()
    for node in nodes:
        doc = node_manifest(node)
        gpus = node.allocatable.get(GPU, 0)
        doc["status"]["allocatable"].pop(GPU, None)
        yield doc
        if gpus:
            yield resource_slice(node, _whole(gpus, f"Node {node.name}"))


def device_class() -> dict[str, Any]:
    selector = {"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": GPU_DRIVER},
        "spec": {"selectors": [selector]},
    }


def resource_slice(node: Node, gpus: int) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    product = node.labels.get(GPU_PRODUCT_LABEL)
    if product:
        attributes["productName"] = {"string": product}
    devices = [
        {"name": f"gpu-{i}", "attributes": {"index": {"int": i}, **attributes}} for i in range(gpus)
    ]
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node.name}-{GPU_DRIVER}"},
        "spec": {
            "driver": GPU_DRIVER,
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node.name,
            "devices": devices,
        },
    }


def _whole(milli_gpus: int, what: str) -> int:
    if milli_gpus % MILLI:
        raise TraceError(
            f"{what}: {milli_gpus / MILLI:g} GPUs is not a whole number of devices "
            "(--as dra writes whole GPUs; shared GPUs need --as volcano)"
        )
    return milli_gpus // MILLI


# -- the shapes -----------------------------------------------------------------------------------


def _volcano(job: TraceJob) -> list[dict[str, Any]]:
    return [pod_group_manifest(job.group)] + [pod_manifest(pod) for pod in job.pods]


class _Dra:
    def __init__(self) -> None:
        self.templates: set[tuple[str, int]] = set()

    def __call__(self, job: TraceJob) -> list[dict[str, Any]]:
        docs = [pod_group_manifest(job.group)]
        for pod in job.pods:
            doc = pod_manifest(pod)
            milli = pod.requests.get(GPU, 0)
            if milli:
                gpus = _whole(milli, f"job {job.group.name}, pod {pod.name}")
                if (pod.namespace, gpus) not in self.templates:
                    self.templates.add((pod.namespace, gpus))
                    docs.append(_claim_template(pod.namespace, gpus))
                spec = doc["spec"]
                container = spec["containers"][0]
                del container["resources"]["requests"][GPU]
                container["resources"]["claims"] = [{"name": CLAIM}]
                spec["resourceClaims"] = [
                    {"name": CLAIM, "resourceClaimTemplateName": f"{CLAIM}-{gpus}"}
                ]
            docs.append(doc)
        return docs


def _claim_template(namespace: str, gpus: int) -> dict[str, Any]:
    request = {"name": CLAIM, "exactly": {"deviceClassName": GPU_DRIVER, "count": gpus}}
    meta: dict[str, Any] = {"name": f"{CLAIM}-{gpus}"}
    if namespace != "default":
        meta["namespace"] = namespace
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": meta,
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def _workload(job: TraceJob) -> list[dict[str, Any]]:
    group = job.group
    policy = {"gang": {"minCount": group.min_member}}
    meta = _owner_meta(job)
    workload = {
        "apiVersion": WORKLOAD_API,
        "kind": "Workload",
        "metadata": {k: v for k, v in meta.items() if k != "annotations"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": policy}]},
    }
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": group.name, "templateName": "workers"},
        "schedulingPolicy": policy,
    }
    if group.priority_class_name:
        spec["priorityClassName"] = group.priority_class_name
    pod_group = {"apiVersion": WORKLOAD_API, "kind": "PodGroup", "metadata": meta, "spec": spec}
    docs = [workload, pod_group]
    for pod in job.pods:
        doc = pod_manifest(pod)
        doc["metadata"]["annotations"].pop(GROUP_NAME_ANNOTATION, None)
        doc["spec"]["schedulingGroup"] = {"podGroupName": group.name}
        docs.append(doc)
    return docs


def _owner_meta(job: TraceJob) -> dict[str, Any]:
    """The metadata of the object that stands for the job: its name, namespace, submit time and
    queue (Volcano's annotation, which LWS, JobSet and berth's Workload API PodGroups read)."""
    group = job.group
    annotations = {SUBMIT_TIME_ANNOTATION: seconds(group.submit_time)}
    if group.queue != DEFAULT_QUEUE:
        annotations[QUEUE_NAME_ANNOTATION] = group.queue
    meta: dict[str, Any] = {"name": group.name}
    if group.namespace != "default":
        meta["namespace"] = group.namespace
    meta["annotations"] = annotations
    return meta


def _template(pod: Pod) -> dict[str, Any]:
    """A pod as a template: its spec, and its labels and annotations without what the owner
    now says (submit time, group)."""
    doc = pod_manifest(pod)
    annotations = doc["metadata"].get("annotations", {})
    for key in (SUBMIT_TIME_ANNOTATION, GROUP_NAME_ANNOTATION):
        annotations.pop(key, None)
    meta = {k: v for k, v in doc["metadata"].items() if k in ("labels", "annotations") and v}
    return {"metadata": meta, "spec": doc["spec"]}


def _tasks(job: TraceJob) -> list[tuple[str, list[Pod]]]:
    """The job's pods by task (role label and shape), in order."""
    tasks: dict[tuple[str, str], list[Pod]] = {}
    for pod in job.pods:
        key = (pod.labels.get(ROLE_LABEL, "worker"), repr(_template(pod)))
        tasks.setdefault(key, []).append(pod)
    names: dict[str, int] = {}
    result = []
    for (role, _), pods in tasks.items():
        count = names[role] = names.get(role, -1) + 1
        result.append((role if not count else f"{role}-{count}", pods))
    return result


def _leader_worker_set(job: TraceJob) -> list[dict[str, Any]]:
    leader, *workers = job.pods
    shapes = {repr(_template(pod)) for pod in workers}
    if len(shapes) > 1:
        raise TraceError(
            f"job {job.group.name}: its workers differ in shape, and a LeaderWorkerSet has one "
            "worker template (--as jobset writes each task as its own Job)"
        )
    template: dict[str, Any] = {"size": len(job.pods)}
    if workers:
        template["workerTemplate"] = _template(workers[0])
        if _template(leader) != template["workerTemplate"]:
            template["leaderTemplate"] = _template(leader)
    else:
        template["workerTemplate"] = _template(leader)
    return [
        {
            "apiVersion": LWS_API,
            "kind": "LeaderWorkerSet",
            "metadata": _owner_meta(job),
            "spec": {"replicas": 1, "leaderWorkerTemplate": template},
        }
    ]


def _job_set(job: TraceJob) -> list[dict[str, Any]]:
    replicated = []
    for name, pods in _tasks(job):
        template = _template(pods[0])
        template["spec"]["restartPolicy"] = "Never"
        spec = {"parallelism": len(pods), "completions": len(pods), "template": template}
        replicated.append({"name": name, "replicas": 1, "template": {"spec": spec}})
    return [
        {
            "apiVersion": JOBSET_API,
            "kind": "JobSet",
            "metadata": _owner_meta(job),
            "spec": {"replicatedJobs": replicated},
        }
    ]
