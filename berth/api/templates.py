"""Pod templates of workload objects: the prototype pod, the revision hashes, and the checks
every workload kind shares (selector against template labels, counts and percentages)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from berth.api import schema
from berth.api.fields import at_least_zero, float_annotation, label_selector
from berth.api.keys import SUBMIT_TIME_ANNOTATION
from berth.api.loaded import Context
from berth.api.pod_spec import build_pod
from berth.api.selectors import LabelSelector
from berth.api.workloads import IntOrPercent, PodTemplate, Workload

#: Kubernetes' alphabet for generated names and hashes (no vowels, no look-alike digits).
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def short_hash(value: Any, length: int = 10) -> str:
    """A stable token for any JSON-able value, in Kubernetes' alphabet."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    number = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    chars = []
    for _ in range(length):
        number, digit = divmod(number, len(SAFE_ALPHABET))
        chars.append(SAFE_ALPHABET[digit])
    return "".join(chars)


def layout_of(raw_spec: Any) -> Any:
    """A pod spec with each container's image replaced by a marker: what stays fixed when only
    images change (an image added or removed is a layout change)."""
    if not isinstance(raw_spec, dict):
        return raw_spec
    spec = copy.deepcopy(raw_spec)
    containers = spec.get("containers")
    if isinstance(containers, list):
        for container in containers:
            if isinstance(container, dict) and "image" in container:
                container["image"] = "<image>"
    return spec


def pod_template(
    owner: str, namespace: str, template: schema.WorkloadTemplate, ctx: Context
) -> PodTemplate:
    """The template of a workload named ``owner``; problems are filed under
    ``spec.template``."""
    pod = build_pod(owner, namespace, template.metadata, template.spec, ctx.within("spec.template"))
    ctx.out.set_origin(pod, ctx.origin(template.spec.priority is not None))
    raw = template.raw
    return PodTemplate(pod, short_hash(raw), short_hash(layout_of(raw.get("spec"))))


def workload_selector(
    selector: schema.LabelSelector, template: PodTemplate, ctx: Context, path: str = "spec"
) -> LabelSelector:
    """The selector, which must select something and match the template's labels (as the API
    server requires)."""
    converted = label_selector(selector, f"{path}.selector", ctx)
    if not converted.requirements:
        ctx.error(f"{path}.selector", "empty selector is invalid (expected matchLabels)")
    elif not converted.matches(template.pod.labels):
        ctx.error(
            f"{path}.template.metadata.labels",
            "do not match spec.selector (expected the template's labels to satisfy it)",
        )
    return converted


def at_most_100_percent(value: IntOrPercent | None, path: str, ctx: Context) -> None:
    if isinstance(value, str) and int(value[:-1]) > 100:
        ctx.error(path, f'"{value}" is more than 100%')


def submit_time(meta: schema.ObjectMeta, ctx: Context) -> float:
    return float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero) or 0.0


def add_workload(kind: str, doc: schema.Model, spec: object, ctx: Context) -> None:
    meta = doc.metadata  # type: ignore[attr-defined]
    workload = Workload(
        kind=kind,
        name=meta.name,
        namespace=meta.namespace,
        spec=spec,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        submit_time=submit_time(meta, ctx),
    )
    ctx.out.add(ctx.out.workloads, workload, ctx.origin())
