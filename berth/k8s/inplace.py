"""OpenKruise's pods on the API server: how its controllers make them and update them in place.

A pod an OpenKruise workload makes is its template with the controller's labels, a controller
ownerReference to the workload and the ``InPlaceUpdateReady`` readiness gate; the controller
sets that condition True once the pod exists. An in-place update then goes as Kruise's
``inplaceupdate`` package does it:

1. the pod's status gets ``InPlaceUpdateReady`` False (reason ``StartInPlaceUpdate``) and Ready
   False, so the pod leaves its Services before anything restarts;
2. one patch gives it the new revision's labels and annotations, the new images, and the
   ``apps.kruise.io/inplace-update-state`` annotation recording each updated container's
   imageID before the update;
3. the kubelet restarts the containers whose images changed; once every recorded container
   reports another imageID (or the image the spec asks for), the controller sets
   ``InPlaceUpdateReady`` True again and the kubelet makes the pod Ready.

With ``inPlaceUpdateStrategy.gracePeriodSeconds`` the images are patched that many seconds
after step 1 (Kruise keeps them meanwhile in ``apps.kruise.io/inplace-update-grace``).
"""

from __future__ import annotations

import json
from typing import Any

from berth.api.keys import GROUP_NAME_ANNOTATION, INPLACE_GRACE_ANNOTATION, REVISION_LABEL
from berth.api.objects import Pod
from berth.k8s.convert import pod_object, stamp

READY_GATE = "InPlaceUpdateReady"
STATE_ANNOTATION = "apps.kruise.io/inplace-update-state"
GRACE_ANNOTATION = INPLACE_GRACE_ANNOTATION  # the same key: berth's pods carry the seconds
#: Strategic merge patches merge lists by key (conditions by type, containers by name).
STRATEGIC = "application/strategic-merge-patch+json"


def pod_manifest(pod: Pod, template: dict[str, Any], owner: list[dict[str, Any]]) -> dict[str, Any]:
    """The pod a workload's controller creates: ``template`` (the revision's pod template as
    the API holds it) with the name, labels and annotations the controller gave ``pod``, the
    PodGroup it joins, ``owner`` as its ownerReferences and the in-place readiness gate."""
    spec = dict(template.get("spec") or {})
    gates = list(spec.get("readinessGates") or [])
    if not any(g.get("conditionType") == READY_GATE for g in gates):
        gates.append({"conditionType": READY_GATE})
    spec["readinessGates"] = gates
    annotations = {k: v for k, v in pod.annotations.items() if k != GRACE_ANNOTATION}
    if pod.group:
        annotations[GROUP_NAME_ANNOTATION] = pod.group
    return pod_object(pod, spec, owner, annotations=annotations)


def has_gate(raw: dict[str, Any]) -> bool:
    gates = (raw.get("spec") or {}).get("readinessGates") or []
    return any(g.get("conditionType") == READY_GATE for g in gates)


def condition(raw: dict[str, Any], kind: str) -> dict[str, Any]:
    for item in (raw.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return item
    return {}


def gate_patch(ready: bool, now: float) -> dict[str, Any]:
    """The status patch that opens (``ready``) or closes the gate; closing it makes the pod
    unready at once, as Kruise does (the kubelet makes it Ready again, never berth)."""
    at = stamp(now)
    conditions = [{"type": READY_GATE, "status": str(ready), "lastTransitionTime": at}]
    if not ready:
        conditions[0]["reason"] = "StartInPlaceUpdate"
        conditions.append({"type": "Ready", "status": "False", "lastTransitionTime": at})
    return {"status": {"conditions": conditions}}


def images_of(raw: dict[str, Any]) -> dict[str, str]:
    return {
        c.get("name"): c.get("image", "") for c in (raw.get("spec") or {}).get("containers") or []
    }


def changed_images(pod: Pod, raw: dict[str, Any]) -> dict[str, str]:
    """The containers whose images ``pod`` (as the controller changed it) no longer shares
    with the API's pod: name → new image."""
    current = images_of(raw)
    return {
        name: image for name, image in pod.containers if name in current and current[name] != image
    }


def grace_seconds(pod: Pod) -> float:
    try:
        return max(float(pod.annotations.get(GRACE_ANNOTATION) or 0), 0.0)
    except ValueError:
        return 0.0


def _diff(now: dict[str, str], before: dict[str, str]) -> dict[str, str | None]:
    """A merge patch from ``before`` to ``now`` (removed keys as null)."""
    patch: dict[str, str | None] = {k: v for k, v in now.items() if before.get(k) != v}
    patch.update({k: None for k in before if k not in now})
    return patch


def metadata_patch(
    pod: Pod, raw: dict[str, Any], extra: dict[str, str | None] | None = None
) -> dict[str, Any]:
    """Labels and annotations as the controller set them on ``pod`` (berth's grace seconds
    left out: Kruise's annotation of that name holds the pending update)."""
    meta = raw.get("metadata") or {}
    before = dict(meta.get("annotations") or {})
    wanted = {k: v for k, v in pod.annotations.items() if k != GRACE_ANNOTATION}
    for key in (GRACE_ANNOTATION, STATE_ANNOTATION, GROUP_NAME_ANNOTATION):
        if key in before:
            wanted.setdefault(key, before[key])
    annotations = _diff(wanted, before)
    annotations.update(extra or {})
    patch: dict[str, Any] = {}
    labels = _diff(pod.labels, dict(meta.get("labels") or {}))
    if labels:
        patch["labels"] = labels
    if annotations:
        patch["annotations"] = annotations
    return {"metadata": patch} if patch else {}


def update_patch(
    pod: Pod, raw: dict[str, Any], images: dict[str, str], now: float, grace: float
) -> dict[str, Any]:
    """Step 2: the new metadata and the state annotation, with the images (or, within a
    grace period, the images kept in the grace annotation for ``images_patch``)."""
    statuses = {c.get("name"): c for c in (raw.get("status") or {}).get("containerStatuses") or []}
    revision = pod.labels.get(REVISION_LABEL, "")
    state = {
        "revision": revision,
        "updateTimestamp": stamp(now),
        "lastContainerStatuses": {
            name: {"imageID": (statuses.get(name) or {}).get("imageID", "")} for name in images
        },
        "updateImages": True,
    }
    extra: dict[str, str | None] = {STATE_ANNOTATION: json.dumps(state, sort_keys=True)}
    if grace > 0:
        pending = {"revision": revision, "containerImages": images, "graceSeconds": grace}
        extra[GRACE_ANNOTATION] = json.dumps(pending, sort_keys=True)
    else:
        extra[GRACE_ANNOTATION] = None
    patch = metadata_patch(pod, raw, extra)
    if grace <= 0:
        patch["spec"] = images_patch(images)["spec"]
    return patch


def images_patch(images: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": n, "image": i} for n, i in sorted(images.items())]}}


def pending_images(raw: dict[str, Any]) -> dict[str, str] | None:
    """The images a grace period holds back (None: no grace period pending)."""
    text = ((raw.get("metadata") or {}).get("annotations") or {}).get(GRACE_ANNOTATION)
    if not text:
        return None
    try:
        pending = json.loads(text)
    except ValueError:
        return None
    images = pending.get("containerImages") if isinstance(pending, dict) else None
    return dict(images) if isinstance(images, dict) else None


def update_completed(raw: dict[str, Any]) -> bool:
    """Whether the pod's last in-place update has been carried out by the kubelet (Kruise's
    default check): every container it recorded reports a new imageID, or the image its spec
    asks for. A pod never updated has nothing to wait for."""
    if pending_images(raw) is not None:
        return False
    text = ((raw.get("metadata") or {}).get("annotations") or {}).get(STATE_ANNOTATION)
    if not text:
        return True
    try:
        state = json.loads(text)
    except ValueError:
        return True
    last = dict(state.get("lastContainerStatuses") or {})
    wanted = {name: _tagged(image) for name, image in images_of(raw).items()}
    for status in (raw.get("status") or {}).get("containerStatuses") or []:
        name = status.get("name")
        if name not in last:
            continue
        before = last.pop(name) or {}
        same_id = before.get("imageID", "") == status.get("imageID", "")
        if same_id and wanted.get(name) != _tagged(status.get("image", "")):
            return False
    return not last


def _tagged(image: str) -> str:
    """An image with Kruise's default tag (``:latest`` when it names none)."""
    return image if ":" in image.rpartition("/")[2] or "@" in image else f"{image}:latest"
