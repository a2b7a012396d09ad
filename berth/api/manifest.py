"""Load Kubernetes-style manifests into berth's objects.

Loading never stops at the first mistake: every document is checked, every problem is collected
with the file, object and field it concerns, and the caller decides what to do with them (the
simulator refuses to run on errors, ``berth validate`` prints them all). The pydantic models in
``berth.api.schema`` check shapes and ranges; one module per family of kinds converts them
(``nodes``, ``pod_spec``, ``queueing``, ``jobs``, ``namespaces``), and ``references`` runs the
checks that need every file (duplicates, priorities).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from berth.api import schema, workload_api
from berth.api.apps import (
    convert_deployment,
    convert_kube_job,
    convert_replica_set,
    convert_stateful_set,
)
from berth.api.configuration_shape import looks_like_configuration
from berth.api.documents import DocumentError, load_json, load_yaml, too_large
from berth.api.dra import (
    convert_device_class,
    convert_resource_claim,
    convert_resource_claim_template,
    convert_resource_slice,
)
from berth.api.hypernodes import convert_hyper_node
from berth.api.jobs import convert_command, convert_job
from berth.api.jobset import JOBSET_API, convert_job_set
from berth.api.kruise import convert_broadcast_job, convert_clone_set, convert_sidecar_set
from berth.api.kubeflow import convert_pytorch_job
from berth.api.loaded import Context, Manifests
from berth.api.lws import LWS_API, convert_leader_worker_set
from berth.api.namespaces import convert_namespace
from berth.api.nodes import convert_node, convert_node_pool
from berth.api.paddle import convert_training_job
from berth.api.pod_spec import convert_pod
from berth.api.problems import ManifestError, Problem, display
from berth.api.queueing import convert_pod_group, convert_priority_class, convert_queue
from berth.api.references import check_references

__all__ = ["ManifestError", "Manifests", "Problem", "load_file", "load_files", "parse_documents"]


# -- entry points ---------------------------------------------------------------------------------


def load_file(path: str | Path, lenient: bool = False) -> Manifests:
    """Every object of one YAML, JSON or JSON Lines file; problems with the file or its content are
    collected, never raised."""
    file = str(path)
    try:
        # Refused before it is read: reading and decoding alone take seconds at that size.
        wrong = None if file.lower().endswith(".jsonl") else too_large(Path(path).stat().st_size)
        if wrong:
            return _file_problem(file, wrong)
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return _file_problem(file, "file not found")
    except IsADirectoryError:
        return _file_problem(file, "is a directory (expected a YAML or JSON file)")
    except UnicodeDecodeError:
        return _file_problem(file, "is not a UTF-8 text file (expected YAML or JSON)")
    except OSError as exc:
        return _file_problem(file, f"cannot be read ({exc.strerror or exc})")
    if file.lower().endswith(".jsonl"):
        result = _parse_json_lines(text, file, lenient)
    else:
        try:
            docs = [load_json(text)] if file.lower().endswith(".json") else load_yaml(text)
        except DocumentError as exc:
            return _file_problem(file, str(exc))
        result = parse_documents(docs, file, lenient=lenient)
    if not result.problems and not result.objects:
        return _file_problem(file, "holds no objects (expected Kubernetes-style manifests)")
    if result.skipped:
        result.problems.append(
            Problem(file, "", "", "", _skipped_message(result.skipped), "warning")
        )
    return result


def _skipped_message(skipped: Counter[str]) -> str:
    """One line for all the objects of a file that berth read past, by why."""
    parts = []
    for why in (_NO_EFFECT, _NOT_SIMULATED):
        kinds = [
            f"{kind} ({count})" if count > 1 else kind
            for kind, count in sorted(skipped.items())
            if SKIPPED_KINDS[kind][1] == why
        ]
        if kinds:
            parts.append(f"{', '.join(kinds)}: {why}")
    total = sum(skipped.values())
    return f"skipped {total} object{'s' if total > 1 else ''} of " + "; ".join(parts)


#: What a folder given as a workload is read for.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")


def load_files(paths: Iterable[str | Path] | str | Path, lenient: bool = False) -> Manifests:
    """All files together, then the checks that need every object (see ``cross_check``). A
    folder stands for the manifest files directly in it, in name order."""
    if isinstance(paths, str | Path):
        paths = [paths]
    result = Manifests()
    for path in paths:
        if Path(path).is_dir():
            files = sorted(p for p in Path(path).iterdir() if p.suffix.lower() in MANIFEST_SUFFIXES)
            if not files:
                suffixes = ", ".join(MANIFEST_SUFFIXES)
                result.extend(_file_problem(str(path), f"no manifest files ({suffixes}) in it"))
            for file in files:
                result.extend(load_file(file, lenient))
        else:
            result.extend(load_file(path, lenient))
    cross_check(result)
    return result


def load_or_raise(paths: Iterable[str | Path] | str | Path) -> Manifests:
    """``load_files`` for callers that cannot go on with errors; warnings stay in ``.problems``."""
    result = load_files(paths)
    if result.errors:
        raise ManifestError(result.errors)
    return result


def parse_documents(
    docs: list[Any], source: str, live: bool = False, lenient: bool = False
) -> Manifests:
    """Objects from already-parsed documents; ``source`` names them in problems; ``live``
    when they come from a cluster's API (``Manifests.live``); ``lenient``: unknown fields are
    warnings (always so for live objects).

    A document may be a single object, a ``kind: List``, or a list of objects (a JSON array);
    empty documents are skipped.
    """
    result = Manifests(live=live, lenient=live or lenient)
    for doc in docs:
        if isinstance(doc, list):
            for index, item in enumerate(doc):
                _parse_object(item, Context(result, source, "-", "-", f"[{index}]"))
        elif doc is not None:
            _parse_object(doc, Context(result, source, "-", "-", ""))
    return result


def cross_check(manifests: Manifests) -> None:
    """Checks across objects, run once on the full set: duplicate names, queue parents, priority
    classes.

    ``load_files`` calls it; code that assembles Manifests from ``parse_documents`` calls it once
    when everything is in. Pods and groups get their priority from their class here.
    """
    check_references(manifests)
    workload_api.check_workload_references(manifests)


def _parse_json_lines(text: str, file: str, lenient: bool) -> Manifests:
    """JSON Lines (``.jsonl``, one object per line, as ``berth trace convert`` writes large
    workloads): each line is its own source, ``FILE:LINE``, so every problem names its line."""
    result = Manifests(lenient=lenient)
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        source = f"{file}:{number}"
        try:
            doc = load_json(line, one_line=True)
        except DocumentError as exc:
            message = f"{exc} (expected an object per line)"
            result.problems.append(Problem(source, "", "", "", message, "error"))
            continue
        _parse_object(doc, Context(result, source, "-", "-", ""))
    return result


def _file_problem(file: str, message: str) -> Manifests:
    return Manifests(problems=[Problem(file, "", "", "", message, "error")])


# -- per-document parsing -------------------------------------------------------------------------

Converter = Callable[[Any, Context], None]


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind berth reads: its apiVersion, the model that validates it, what converts it."""

    api_version: str
    model: type[schema.Model]
    convert: Converter | None  # None: a List, whose items are parsed one by one


_NO_EFFECT = "kinds that do not affect scheduling"
_NOT_SIMULATED = "workload kinds berth does not simulate yet (their pods are not created)"
#: Kinds berth reads past with a warning rather than refusing the file, so that a bundle
#: written for a cluster loads; by name, the apiVersions meant (None: any) and why. A kind
#: registered above with a matching apiVersion is read instead.
SKIPPED_KINDS: dict[str, tuple[tuple[str, ...] | None, str]] = {
    **dict.fromkeys(
        (
            "Service",
            "ConfigMap",
            "Secret",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "PodDisruptionBudget",
            "Ingress",
            "IngressClass",
            "NetworkPolicy",
            "PersistentVolumeClaim",
            "PersistentVolume",
            "StorageClass",
            "LimitRange",
            "ResourceQuota",
            "HorizontalPodAutoscaler",
            "VerticalPodAutoscaler",
            "Endpoints",
            "EndpointSlice",
            "Event",
            "Lease",
            "CustomResourceDefinition",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "APIService",
        ),
        (None, _NO_EFFECT),
    ),
    **dict.fromkeys(("DaemonSet", "CronJob", "ReplicationController"), (None, _NOT_SIMULATED)),
}


@cache
def kinds() -> dict[str, list[Kind]]:
    """The kinds berth reads, by name; a name can have several apiVersions (Kubernetes' and a
    CRD's). Built on first use: the models take about a tenth of a second to build, which a run
    from a trace or a node list never needs."""
    from berth.api.schema.jobset import JobSetDoc
    from berth.api.schema.lws import LeaderWorkerSetDoc
    from berth.api.schema.workload_api import PodGroupDoc, WorkloadDoc

    known: dict[str, list[Kind]] = {}
    for name, api, model, convert in (
        ("Node", schema.NODE_API, schema.NodeDoc, convert_node),
        ("NodePool", schema.NODE_POOL_API, schema.NodePoolDoc, convert_node_pool),
        ("HyperNode", schema.TOPOLOGY_API, schema.HyperNodeDoc, convert_hyper_node),
        ("Pod", schema.POD_API, schema.PodDoc, convert_pod),
        ("PodGroup", schema.VOLCANO_API, schema.PodGroupDoc, convert_pod_group),
        ("Queue", schema.VOLCANO_API, schema.QueueDoc, convert_queue),
        (
            "PriorityClass",
            schema.PRIORITY_CLASS_API,
            schema.PriorityClassDoc,
            convert_priority_class,
        ),
        ("Job", schema.BATCH_API, schema.JobDoc, convert_job),
        ("Command", schema.BUS_API, schema.CommandDoc, convert_command),
        ("PyTorchJob", schema.KUBEFLOW_API, schema.PyTorchJobDoc, convert_pytorch_job),
        ("TrainingJob", schema.PADDLE_API, schema.TrainingJobDoc, convert_training_job),
        ("Namespace", schema.NAMESPACE_API, schema.NamespaceDoc, convert_namespace),
        ("Deployment", schema.APPS_API, schema.DeploymentDoc, convert_deployment),
        ("ReplicaSet", schema.APPS_API, schema.ReplicaSetDoc, convert_replica_set),
        ("StatefulSet", schema.APPS_API, schema.StatefulSetDoc, convert_stateful_set),
        ("StatefulSet", schema.KRUISE_BETA_API, schema.StatefulSetDoc, convert_stateful_set),
        ("StatefulSet", schema.KRUISE_API, schema.StatefulSetDoc, convert_stateful_set),
        ("Job", schema.KUBE_BATCH_API, schema.KubeJobDoc, convert_kube_job),
        ("CloneSet", schema.KRUISE_API, schema.CloneSetDoc, convert_clone_set),
        ("SidecarSet", schema.KRUISE_API, schema.SidecarSetDoc, convert_sidecar_set),
        ("BroadcastJob", schema.KRUISE_API, schema.BroadcastJobDoc, convert_broadcast_job),
        ("LeaderWorkerSet", LWS_API, LeaderWorkerSetDoc, convert_leader_worker_set),
        ("JobSet", JOBSET_API, JobSetDoc, convert_job_set),
        ("ResourceSlice", schema.RESOURCE_API, schema.ResourceSliceDoc, convert_resource_slice),
        ("DeviceClass", schema.RESOURCE_API, schema.DeviceClassDoc, convert_device_class),
        ("ResourceClaim", schema.RESOURCE_API, schema.ResourceClaimDoc, convert_resource_claim),
        (
            "ResourceClaimTemplate",
            schema.RESOURCE_API,
            schema.ResourceClaimTemplateDoc,
            convert_resource_claim_template,
        ),
        *(
            row
            for version in workload_api.WORKLOAD_APIS
            for row in (
                ("Workload", version, WorkloadDoc, workload_api.convert_workload),
                ("PodGroup", version, PodGroupDoc, workload_api.convert_pod_group),
            )
        ),
        ("List", schema.LIST_API, schema.ListDoc, None),
    ):
        known.setdefault(name, []).append(Kind(api, model, convert))
    return known


def _parse_object(doc: object, ctx: Context) -> None:
    if not isinstance(doc, dict):
        ctx.error("", f"expected an object with apiVersion and kind (got {schema.show(doc)})")
        return
    kind = doc.get("kind")
    metadata = doc.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str) and metadata["name"]:
        ctx.name = display(metadata.get("namespace"), metadata["name"])
    if looks_like_configuration(doc):
        ctx.error("", "a scheduler configuration, not a manifest (give it with --config)")
        return
    if kind is None:
        ctx.error("kind", "field required")
        return
    if isinstance(kind, str) and kind:
        ctx.kind = kind
    api_version = doc.get("apiVersion")
    if isinstance(kind, str) and _skipped(kind, api_version):
        ctx.out.skipped[kind] += 1
        return
    known = kinds()
    if not isinstance(kind, str) or kind not in known:
        expected = ", ".join(known)
        ctx.error("kind", f"unknown kind {schema.show(kind)} (expected one of {expected})")
        return
    versions = known[kind]
    apis = " or ".join(k.api_version for k in versions)
    if api_version is None:
        ctx.error("apiVersion", f"field required (expected {apis})")
        return
    chosen = next((k for k in versions if k.api_version == api_version), None)
    if chosen is None:
        ctx.error(
            "apiVersion",
            f"{schema.show(api_version)} is not the apiVersion of {kind} (expected {apis})",
        )
        return
    if "metadata" not in doc and kind != "List":
        # Report the missing name, which is what the user has to add.
        doc = {**doc, "metadata": {}}
    parsed, issues = schema.validate(chosen.model, doc)
    for issue in issues:
        if issue.severity == schema.UNKNOWN:
            if ctx.out.lenient:
                ctx.warn(issue.path, f"{issue.message}, ignored")
            else:
                ctx.error(issue.path, issue.message)
            continue
        ctx.report(issue.severity, issue.path, issue.message)
    if parsed is None:
        return
    if chosen.convert is None:
        for index, item in enumerate(parsed.items):
            where = schema.join(schema.join(ctx.prefix, "items"), index)
            _parse_object(item, Context(ctx.out, ctx.file, "-", "-", where))
        return
    chosen.convert(parsed, ctx)


def _skipped(kind: str, api_version: object) -> bool:
    """Whether an object is of a kind berth reads past (and not one it reads)."""
    if any(k.api_version == api_version for k in kinds().get(kind, ())):
        return False
    entry = SKIPPED_KINDS.get(kind)
    return entry is not None and (entry[0] is None or api_version in entry[0])
