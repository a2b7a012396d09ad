"""OpenKruise's SidecarSet injection on the API's pod, as a JSON Patch.

The simulator's admission hook (``berth.controllers.sidecarset``) decides which SidecarSets
inject which containers into a new pod; this carries that decision onto the pod the API server
is creating, as Kruise's pod webhook builds and merges the sidecars on creation
(``buildSidecars`` and ``mergeSidecarContainers`` in ``pkg/webhook/pod/mutating/sidecarset.go``):

- each container is the SidecarSet's without Kruise's own fields, with ``IS_INJECTED=true``
  appended to its env, then the env its ``transferEnv`` names copied from the app container,
  and with ``shareVolumePolicy: enabled`` the app containers' volume mounts (those at a path it
  does not use itself, with the env their ``subPathExpr`` refers to);
- ``podInjectPolicy`` BeforeAppContainer (Kruise's default for containers) puts it before the
  pod's containers, AfterAppContainer after them; a container the pod already has by that name
  is replaced where it stands; init containers go after the pod's, sorted by name;
- the volumes the injected containers mount, from the SidecarSet's ``volumes`` (a pod's own
  volume of the same name wins), and the SidecarSet's ``imagePullSecrets``;
- the annotations the hook recorded (``kruise.io/sidecarset-hash`` and the others).
"""

from __future__ import annotations

import re
from typing import Any

#: SidecarSet container fields that are Kruise's, not the pod's.
SIDECAR_FIELDS = frozenset(
    {
        "podInjectPolicy",
        "upgradeStrategy",
        "shareVolumePolicy",
        "shareVolumeDevicePolicy",
        "transferEnv",
        "resourcesPolicy",
    }
)
#: The env var that marks a container as injected.
INJECTED_ENV = "IS_INJECTED"
_SUBPATH_ENV = re.compile(r"\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")
_FIELD_REF = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")

Json = dict[str, Any]


def pod_patch(
    pod: Json, chosen: list[tuple[Json, list[str]]], annotations: dict[str, str]
) -> list[Json]:
    """The JSON Patch that injects into ``pod`` (the API's object) the containers named for
    each SidecarSet in ``chosen`` (its spec as the API holds it, and the container names the
    hook chose), and sets ``annotations``."""
    spec = pod.get("spec") or {}
    apps = [c for c in spec.get("containers") or [] if not _injected(c)]
    before: list[Json] = []
    after: list[Json] = []
    inits: list[Json] = []
    volumes: list[Json] = []
    secrets: list[Json] = []
    for set_spec, names in chosen:
        declared = {v.get("name"): v for v in set_spec.get("volumes") or []}
        for field in ("initContainers", "containers"):
            for item in set_spec.get(field) or []:
                if item.get("name") not in names:
                    continue
                for mount in [
                    *(item.get("volumeMounts") or []),
                    *(item.get("volumeDevices") or []),
                ]:
                    if mount.get("name") in declared:
                        volumes.append(declared[mount["name"]])
                container = sidecar_container(item, apps, pod)
                if field == "initContainers":
                    inits.append(container)
                elif item.get("podInjectPolicy") == "AfterAppContainer":
                    after.append(container)
                else:
                    before.append(container)
        secrets += set_spec.get("imagePullSecrets") or []
    ops: list[Json] = []
    if inits:
        inits.sort(key=lambda c: str(c.get("name")))
        merged = _merge(list(spec.get("initContainers") or []), [], inits)
        ops.append({"op": "add", "path": "/spec/initContainers", "value": merged})
    if before or after:
        merged = _merge(list(spec.get("containers") or []), before, after)
        ops.append({"op": "replace", "path": "/spec/containers", "value": merged})
    for field, extra in (("volumes", volumes), ("imagePullSecrets", secrets)):
        current = list(spec.get(field) or [])
        merged = _by_name(current, extra)
        if len(merged) != len(current):
            ops.append({"op": "add", "path": f"/spec/{field}", "value": merged})
    if annotations:
        current = dict((pod.get("metadata") or {}).get("annotations") or {})
        ops.append(
            {"op": "add", "path": "/metadata/annotations", "value": {**current, **annotations}}
        )
    return ops


def sidecar_container(item: Json, apps: list[Json], pod: Json) -> Json:
    """A SidecarSet container as it goes into ``pod`` beside its app containers ``apps``."""
    container = {k: v for k, v in item.items() if k not in SIDECAR_FIELDS}
    shared_env: list[Json] = []
    if (item.get("shareVolumePolicy") or {}).get("type") == "enabled":
        shared: list[Json] = []
        for app in apps:
            env = {e.get("name"): e for e in app.get("env") or []}
            for mount in app.get("volumeMounts") or []:
                shared.append(mount)
                for name in _SUBPATH_ENV.findall(mount.get("subPathExpr") or ""):
                    if name in env:
                        shared_env.append(env[name])
        taken = {m.get("mountPath") for m in item.get("volumeMounts") or []}
        taken |= {d.get("devicePath") for d in item.get("volumeDevices") or []}
        mounts = list(item.get("volumeMounts") or [])
        for mount in shared:
            if mount.get("mountPath") not in taken:
                mounts.append(mount)
                taken.add(mount.get("mountPath"))
        container["volumeMounts"] = mounts
    env = [*(item.get("env") or []), {"name": INJECTED_ENV, "value": "true"}]
    known = {e.get("name") for e in env}
    for var in [*transferred_env(item, pod), *shared_env]:
        if var.get("name") not in known:
            env.append(var)
            known.add(var.get("name"))
    container["env"] = env
    return container


def transferred_env(item: Json, pod: Json) -> list[Json]:
    """The env vars ``transferEnv`` copies from the pod's containers, in Kruise's order."""
    meta = pod.get("metadata") or {}
    envs = {
        (c.get("name"), e.get("name")): e
        for c in (pod.get("spec") or {}).get("containers") or []
        for e in c.get("env") or []
    }
    result = []
    for rule in item.get("transferEnv") or []:
        source = rule.get("sourceContainerName") or ""
        ref = ((rule.get("sourceContainerNameFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if ref:
            match = _FIELD_REF.match(ref)
            if match is None:
                continue
            source = (meta.get(match[1]) or {}).get(match[2], "")
        names = {rule["envName"]} if rule.get("envName") else set()
        names |= set(rule.get("envNames") or [])
        result += [envs[(source, name)] for name in sorted(names) if (source, name) in envs]
    return result


def _injected(container: Json) -> bool:
    return any(
        e.get("name") == INJECTED_ENV and e.get("value") == "true"
        for e in container.get("env") or []
    )


def _merge(origins: list[Json], before: list[Json], after: list[Json]) -> list[Json]:
    """Kruise's mergeSidecarContainers: a sidecar the pod has by name replaces it in place,
    the others go before or after the pod's own."""
    index = {c.get("name"): i for i, c in enumerate(origins)}
    placed: tuple[list[Json], list[Json]] = ([], [])
    for side, sidecars in enumerate((before, after)):
        for sidecar in sidecars:
            if sidecar.get("name") in index:
                origins[index[sidecar.get("name")]] = sidecar
            else:
                placed[side].append(sidecar)
    return [*placed[0], *origins, *placed[1]]


def _by_name(current: list[Json], extra: list[Json]) -> list[Json]:
    """``current`` with the items of ``extra`` whose name it does not have yet (first wins)."""
    names = {item.get("name") for item in current}
    merged = list(current)
    for item in extra:
        if item.get("name") not in names:
            merged.append(item)
            names.add(item.get("name"))
    return merged
