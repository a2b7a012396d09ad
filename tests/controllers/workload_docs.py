"""Manifests of workload objects for the controller tests, and loading them."""

from __future__ import annotations

from typing import Any

from berth.api.manifest import cross_check, parse_documents
from berth.api.workloads import Workload

KRUISE = "apps.kruise.io/v1alpha1"


def container(
    image: str = "app:1", cpu: str = "1", name: str = "app", **extra: Any
) -> dict[str, Any]:
    return {"name": name, "image": image, "resources": {"requests": {"cpu": cpu}}, **extra}


def template(
    app: str,
    image: str = "app:1",
    cpu: str = "1",
    annotations: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}, "annotations": dict(annotations or {})},
        "spec": {"containers": containers or [container(image, cpu)], **spec},
    }


def workload(api_version: str, kind: str, name: str, at: float = 0, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "annotations": {"berth.io/submit-time": str(at)}},
        "spec": spec,
    }


def replicated(
    api_version: str,
    kind: str,
    name: str,
    replicas: int = 3,
    image: str = "app:1",
    at: float = 0,
    tmpl: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return workload(
        api_version,
        kind,
        name,
        at,
        replicas=replicas,
        selector={"matchLabels": {"app": name}},
        template=tmpl or template(name, image),
        **spec,
    )


def deployment(name: str = "web", **kwargs: Any) -> dict[str, Any]:
    return replicated("apps/v1", "Deployment", name, **kwargs)


def cloneset(name: str = "web", **kwargs: Any) -> dict[str, Any]:
    return replicated(KRUISE, "CloneSet", name, **kwargs)


def statefulset(name: str = "db", advanced: bool = False, **kwargs: Any) -> dict[str, Any]:
    api = "apps.kruise.io/v1beta1" if advanced else "apps/v1"
    return replicated(api, "StatefulSet", name, **kwargs)


def load(*docs: dict[str, Any]) -> list[Workload]:
    manifests = parse_documents(list(docs), "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    return manifests.workloads
