"""Checks across Dynamic Resource Allocation objects, once every file is loaded.

- a request (or subrequest) of a ResourceClaim or ResourceClaimTemplate names a DeviceClass
  that is not loaded: an error when the loaded files define DeviceClasses at all (the class is
  missing from them), a warning otherwise (the classes may be in a file not given);
- a pod's ``spec.resourceClaims`` names a claim or template that is not loaded: the same rule;
- a ResourceSlice names a node (``spec.nodeName`` or a device's ``nodeName``) that is not among
  the loaded nodes: an error when nodes were loaded;
- two slices of one pool (same driver, pool and generation) publish a device of the same name:
  an error (Kubernetes' allocator refuses the whole pool).

Each problem is one line naming the file, object and field; the objects stay loaded.
"""

from __future__ import annotations

from collections.abc import Iterable

from berth.api import schema
from berth.api.dra import (
    ClaimSpec,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from berth.api.loaded import Context, Manifests
from berth.api.problems import Problem, display


def check_container_claims(spec: schema.PodSpec, ctx: Context) -> None:
    """Each container's ``resources.claims`` entry names one of the pod's resourceClaims."""
    names = {claim.name for claim in spec.resource_claims}
    for kind, containers in (("containers", spec.containers), ("initContainers",
                                                               spec.init_containers)):  # fmt: skip
        for index, container in enumerate(containers):
            for number, claim in enumerate(container.resources.claims):
                if claim.name not in names:
                    ctx.error(
                        f"spec.{kind}[{index}].resources.claims[{number}].name",
                        f"no entry named {schema.show(claim.name)} in spec.resourceClaims",
                    )


def check_dra(m: Manifests) -> None:
    classes = {c.name for c in m.dra if isinstance(c, DeviceClass)}
    claims = {(c.namespace, c.name) for c in m.dra if isinstance(c, ResourceClaim)}
    templates = {(c.namespace, c.name) for c in m.dra if isinstance(c, ResourceClaimTemplate)}
    strict_classes = bool(classes)
    # A live object comes alone: the classes, claims and templates it names are judged when
    # its pod is scheduled (a pod waits, saying which is missing).
    for item in () if m.live else m.dra:
        if isinstance(item, ResourceClaim | ResourceClaimTemplate):
            base = "spec" if isinstance(item, ResourceClaim) else "spec.spec"
            for path, name in _class_names(item.spec, base):
                if name not in classes:
                    kind = type(item).__name__
                    severity = "error" if strict_classes else "warning"
                    where = "" if strict_classes else " (it may be in a file not given)"
                    message = f"no DeviceClass named {schema.show(name)} in the loaded files{where}"
                    _report(m, item, kind, display(item.namespace, item.name), path, message,
                            severity)  # fmt: skip
    if not m.live:
        _check_pod_claims(m, claims, templates)
    _check_slices(m)


def _class_names(spec: ClaimSpec, base: str) -> Iterable[tuple[str, str]]:
    for index, request in enumerate(spec.requests):
        path = f"{base}.devices.requests[{index}]"
        if request.exactly is not None:
            yield f"{path}.exactly.deviceClassName", request.exactly.class_name
        for number, sub in enumerate(request.first_available):
            yield f"{path}.firstAvailable[{number}].deviceClassName", sub.class_name


def _check_pod_claims(
    m: Manifests, claims: set[tuple[str, str]], templates: set[tuple[str, str]]
) -> None:
    for pod in m.pods:
        for index, claim in enumerate(pod.resource_claims):
            path = f"spec.resourceClaims[{index}]"
            if claim.claim_name:
                known, field, kind = claims, "resourceClaimName", "ResourceClaim"
                name = claim.claim_name
            else:
                known, field, kind = templates, "resourceClaimTemplateName", "ResourceClaimTemplate"
                name = claim.template_name
            if (pod.namespace, name) in known:
                continue
            strict = bool(known)
            where = "" if strict else " (it may be in a file not given)"
            message = f"no {kind} named {schema.show(name)} in namespace {pod.namespace}{where}"
            _report(m, pod, "Pod", display(pod.namespace, pod.name), f"{path}.{field}", message,
                    "error" if strict else "warning")  # fmt: skip


def _check_slices(m: Manifests) -> None:
    nodes = {node.name for node in m.nodes}
    seen: dict[tuple[str, str, int], dict[str, str]] = {}
    for item in m.dra:
        if not isinstance(item, ResourceSlice):
            continue
        if nodes and item.selection.node_name and item.selection.node_name not in nodes:
            message = (
                f"no Node named {schema.show(item.selection.node_name)} in the loaded files "
                "(expected the node whose devices the slice publishes)"
            )
            _report(m, item, "ResourceSlice", item.name, "spec.nodeName", message, "error")
        pool = seen.setdefault((item.driver, item.pool, item.generation), {})
        for index, device in enumerate(item.devices):
            selection = device.selection
            if nodes and selection and selection.node_name and selection.node_name not in nodes:
                message = f"no Node named {schema.show(selection.node_name)} in the loaded files"
                path = f"spec.devices[{index}].nodeName"
                _report(m, item, "ResourceSlice", item.name, path, message, "error")
            other = pool.setdefault(device.name, item.name)
            if other != item.name:
                message = (
                    f"device {schema.show(device.name)} is also published by ResourceSlice "
                    f"{other} of pool {item.pool} (device names are unique within a pool)"
                )
                path = f"spec.devices[{index}].name"
                _report(m, item, "ResourceSlice", item.name, path, message, "error")


def _report(
    m: Manifests, obj: object, kind: str, name: str, path: str, message: str, severity: str
) -> None:
    origin = m.origin(obj).file
    m.problems.append(Problem(origin, kind, name, path, message, severity))
