"""Namespace documents → Namespaces, whose labels affinity terms' ``namespaceSelector`` reads."""

from __future__ import annotations

from berth.api import schema
from berth.api.loaded import Context
from berth.api.objects import Namespace


def convert_namespace(doc: schema.NamespaceDoc, ctx: Context) -> None:
    namespace = Namespace(doc.metadata.name, dict(doc.metadata.labels))
    ctx.out.add(ctx.out.namespaces, namespace, ctx.origin())
