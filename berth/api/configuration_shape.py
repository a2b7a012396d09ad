"""What a scheduler configuration looks like, as opposed to a manifest: the manifest loader
names a configuration given where objects were expected, and ``validate`` tells the two apart
in a folder, with the same rule the configuration parser reads its fields by."""

from __future__ import annotations

from typing import Any

#: The fields of berth's (and Volcano's) scheduler configuration.
CONFIGURATION_KEYS = frozenset(
    {
        "actions",
        "tiers",
        "search",
        "period",
        "schedulerNames",
        "scheduler_names",
        "configurations",
        "metrics",
        "simulation",
    }
)


def looks_like_configuration(doc: Any) -> bool:
    """A document without kind and apiVersion whose fields are configuration fields, or a
    KubeSchedulerConfiguration."""
    if not isinstance(doc, dict):
        return False
    if doc.get("kind") == "KubeSchedulerConfiguration":
        return True
    return "kind" not in doc and "apiVersion" not in doc and bool(CONFIGURATION_KEYS & set(doc))
