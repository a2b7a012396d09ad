"""``v1 Namespace``: cluster-scoped, read for its labels."""

from __future__ import annotations

from pydantic import Field, StrictStr

from berth.api.schema.base import Model, Namespace, StringMap
from berth.api.schema.meta import ObjectMeta


class NamespaceMeta(Model):
    # A namespace's name is a DNS label, like the namespaces objects name.
    name: Namespace
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    # What Kubernetes fills in; a Namespace is cluster-scoped and has no namespace itself.
    ignored = ObjectMeta.ignored | {"namespace"}


class NamespaceDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: NamespaceMeta
    ignored = frozenset({"spec", "status"})
