"""The pods OpenKruise's workloads make, as the API should receive them.

Each is the pod template of its revision as the API holds it (everything berth does not model
is kept) with the name, labels and annotations the controller gave the pod and a controller
ownerReference to the workload, plus what Kruise's own controller adds for the kind:

- CloneSet and Advanced StatefulSet: the ``InPlaceUpdateReady`` readiness gate (Kruise's pod
  webhook injects it), so a pod can be updated in place (``berth.k8s.inplace``); an Advanced
  StatefulSet's pod also gets ``hostname`` (its name) and ``subdomain`` (``serviceName``),
  its stable network identity;
- BroadcastJob: the ``broadcastjob-controller-uid`` label, and a required node affinity on
  ``metadata.name`` naming the one node the pod is for, replacing the template's required
  terms (Kruise's ``ReplaceDaemonSetPodNodeNameNodeAffinity``); no readiness gate.
"""

from __future__ import annotations

from typing import Any

from berth.api.keys import GROUP_NAME_ANNOTATION
from berth.api.objects import Pod
from berth.api.workloads import ADVANCED_STATEFUL_SET, BROADCAST_JOB
from berth.controllers.broadcastjob import pinned_node
from berth.k8s import inplace
from berth.k8s.convert import owner_reference, pod_object
from berth.k8s.kinds import BY_KIND

#: The label Kruise gives a BroadcastJob's pods beside ``broadcastjob-name``.
JOB_UID_LABEL = "broadcastjob-controller-uid"


def pod_manifest(pod: Pod, template: dict[str, Any], owner_raw: dict[str, Any]) -> dict[str, Any]:
    """The pod the controller of ``pod.owner_kind`` creates from ``template``."""
    owner = owner_reference(owner_raw, BY_KIND[pod.owner_kind])
    if pod.owner_kind == BROADCAST_JOB:
        return _broadcast_pod(pod, template, owner)
    body = inplace.pod_manifest(pod, template, owner)
    if pod.owner_kind == ADVANCED_STATEFUL_SET:
        body["spec"]["hostname"] = pod.name
        service = (owner_raw.get("spec") or {}).get("serviceName")
        if service:
            body["spec"]["subdomain"] = service
    return body


def node_affinity(node: str) -> dict[str, Any]:
    """The required node affinity that admits ``node`` alone."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}


def _broadcast_pod(
    pod: Pod, template: dict[str, Any], owner: list[dict[str, Any]]
) -> dict[str, Any]:
    spec = dict(template.get("spec") or {})
    affinity = dict(spec.get("affinity") or {})
    affinity["nodeAffinity"] = {
        **(affinity.get("nodeAffinity") or {}),
        **node_affinity(pinned_node(pod)),
    }
    spec["affinity"] = affinity
    labels = {**pod.labels, JOB_UID_LABEL: str(owner[0].get("uid") or "")}
    annotations = dict(pod.annotations)
    if pod.group:
        annotations[GROUP_NAME_ANNOTATION] = pod.group
    return pod_object(pod, spec, owner, labels=labels, annotations=annotations)
