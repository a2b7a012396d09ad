"""A KubeSchedulerConfiguration profile's plugins resolved as kube-scheduler resolves them: the
default ``multiPoint`` set merged with the profile's (``disabled: '*'`` drops every default),
expanded to each extension point the plugin implements unless that point disables it or lists
it itself; score weights from ``score``, then ``multiPoint``, then the defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from berth.framework.config import ConfigError

#: kube-scheduler's default multiPoint plugins, in order, with their default score weights.
DEFAULT_PLUGINS: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)

#: The extension points each in-tree plugin implements.
IMPLEMENTS: dict[str, frozenset[str]] = {
    name: frozenset(points.split())
    for name, points in (
        ("SchedulingGates", "preEnqueue"),
        ("PrioritySort", "queueSort"),
        ("NodeUnschedulable", "filter"),
        ("NodeName", "filter"),
        ("TaintToleration", "filter preScore score"),
        ("NodeAffinity", "preFilter filter preScore score"),
        ("NodePorts", "preFilter filter"),
        ("NodeResourcesFit", "preFilter filter preScore score"),
        ("VolumeRestrictions", "preFilter filter"),
        ("NodeVolumeLimits", "filter"),
        ("VolumeBinding", "preFilter filter reserve preBind score"),
        ("VolumeZone", "preFilter filter"),
        ("PodTopologySpread", "preFilter filter preScore score"),
        ("InterPodAffinity", "preFilter filter preScore score"),
        ("DefaultPreemption", "postFilter"),
        ("NodeResourcesBalancedAllocation", "preScore score"),
        ("ImageLocality", "score"),
        ("DefaultBinder", "bind"),
        ("DynamicResources", "preEnqueue preFilter filter postFilter reserve preBind"),
    )
}


@dataclass
class Profile:
    """One profile's plugins, resolved to extension points."""

    source: str
    warnings: list[str]
    #: Per extension point: enabled plugin names in order.
    enabled: dict[str, list[str]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    args: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Every plugin enabled somewhere, in order (those whose extension points are unknown
    #: included).
    named: list[str] = field(default_factory=list)

    def on(self, plugin: str, point: str) -> bool:
        return plugin in self.enabled.get(point, [])

    def anywhere(self, plugin: str) -> bool:
        return any(plugin in names for names in self.enabled.values())

    def configured(self, plugin: str) -> bool:
        """Enabled somewhere, or named by the profile where its extension points are unknown."""
        return self.anywhere(plugin) or (plugin in self.named and plugin not in IMPLEMENTS)


def list_of(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list")
    return value


def _plugin_list(raw: Any, where: str) -> list[tuple[str, int | None]]:
    """(name, weight) pairs of an ``enabled`` or ``disabled`` list."""
    result = []
    for index, item in enumerate(list_of(raw, where)):
        at = f"{where}[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{at}: expected {{name: ..., weight: ...}}")
        weight = item.get("weight")
        if weight is not None and (
            isinstance(weight, bool) or not isinstance(weight, int) or weight < 0
        ):
            raise ConfigError(f"{at}.weight: expected a whole number >= 0 (got {weight!r})")
        result.append((item["name"], weight or None))
    return result


def resolve(plugins: Any, where: str, warnings: list[str]) -> Profile:
    if not isinstance(plugins, dict):
        raise ConfigError(f"{where}.plugins: expected a mapping of extension points")
    sets: dict[str, tuple[list[tuple[str, int | None]], set[str]]] = {}
    for point, value in plugins.items():
        at = f"{where}.plugins.{point}"
        if point not in (*POINTS, "multiPoint"):
            raise ConfigError(
                f"{at}: unknown extension point (expected multiPoint or one of {', '.join(POINTS)})"
            )
        if not isinstance(value, dict):
            raise ConfigError(f"{at}: expected {{enabled: [...], disabled: [...]}}")
        enabled = _plugin_list(value.get("enabled") or [], f"{at}.enabled")
        disabled = {n for n, _ in _plugin_list(value.get("disabled") or [], f"{at}.disabled")}
        sets[point] = (enabled, disabled)
    # multiPoint: the defaults, minus the disabled (all with '*'), with the enabled merged in.
    custom, off = sets.get("multiPoint", ([], set()))
    multi: list[tuple[str, int | None]] = (
        [] if "*" in off else [(n, w) for n, w in DEFAULT_PLUGINS if n not in off]
    )
    for name, weight in custom:
        existing = [i for i, (n, _) in enumerate(multi) if n == name]
        if existing:
            default = multi[existing[0]][1]
            multi[existing[0]] = (name, weight or default)
        else:
            multi.append((name, weight))
    resolved = Profile(where, warnings)
    for name, weight in multi:
        if weight:
            resolved.weights[name] = weight
    for point in POINTS:
        enabled, disabled = sets.get(point, ([], set()))
        names = [n for n, _ in enabled]
        for name, weight in enabled:
            if point == "score" and weight:
                resolved.weights[name] = weight
        for name, _ in multi:
            if name in names or name in disabled or "*" in disabled:
                continue
            if point in IMPLEMENTS.get(name, frozenset()):
                names.append(name)
        resolved.enabled[point] = names
    listed = [n for n, _ in multi] + [n for e, _ in sets.values() for n, _ in e]
    resolved.named = list(dict.fromkeys(listed))
    return resolved
