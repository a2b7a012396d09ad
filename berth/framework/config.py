"""Scheduler configuration: actions, plugin tiers with arguments, node search, session period.

A KubeSchedulerConfiguration is read by ``kube_config``. Otherwise the file shape is Volcano's
scheduler configuration (``actions`` as a comma-separated string or
a list, ``tiers`` of ``plugins`` with ``name`` and ``arguments``), so an existing
``volcano-scheduler.conf`` loads unchanged. Volcano's umbrella plugins are expanded into berth's
single-purpose ones (``predicates``, ``nodeorder``, ``binpack``); plugins berth does not have are
reported by name and skipped.

The default has ``proportion``: it is what enforces a queue's ``capability`` (and shares the
cluster between queues by weight). As in Volcano's default it sits in the second tier, under
priority and gang, whose votes on victims (preempt, reclaim) would otherwise come first.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any

from berth.api.configuration_shape import CONFIGURATION_KEYS
from berth.framework.plugin import Plugin, PluginArgumentError
from berth.framework.registry import ACTIONS, PLUGINS, plugin_class
from berth.framework.search import SearchConfig

DEFAULT_CONFIG: dict[str, Any] = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                # Victims are priority's (preempt) and proportion's (reclaim) to choose; the
                # eviction actions keep gangs whole by themselves.
                {"name": "gang", "enablePreemptable": False, "enableReclaimable": False},
            ]
        },
        {
            "plugins": [
                {"name": "proportion"},
                {"name": "resource-fit"},
                {"name": "node-affinity"},
                {"name": "taint-toleration"},
                {"name": "pod-affinity"},
                {"name": "topology-spread"},
                {"name": "least-allocated"},
                {"name": "balanced-allocation"},
                # GPU pods fill shared devices, then partly used nodes, keeping whole devices
                # and whole nodes free; CPU-only pods get 0 from it and keep spreading.
                {"name": "gpu-packing", "arguments": {"weight": 10}},
            ]
        },
    ],
}

#: Actions Volcano has that berth schedules elsewhere or not yet; skipped with a warning.
LATER_ACTIONS = ("shuffle", "gangpreempt", "gangreclaim")
#: Volcano plugins berth reads as plugins of its own (see ``_parse_tier``).
_VOLCANO_MAPPED = ("predicates", "nodeorder", "binpack")
#: Volcano's former reservation actions: in berth the reservation plugin does their work.
RESERVATION_ACTIONS = ("elect", "reserve")

_PREDICATE_FILTERS = (
    "resource-fit",
    "node-affinity",
    "taint-toleration",
    "pod-affinity",
    "topology-spread",
)
#: Volcano nodeorder argument → (berth plugin, default weight).
_NODEORDER = {
    "leastrequested.weight": ("least-allocated", 1.0),
    "mostrequested.weight": ("most-allocated", 0.0),
    "balancedresource.weight": ("balanced-allocation", 1.0),
    "nodeaffinity.weight": ("node-affinity", 1.0),
    "podaffinity.weight": ("pod-affinity", 1.0),
    "tainttoleration.weight": ("taint-toleration", 1.0),
    "podtopologyspread.weight": ("topology-spread", 1.0),
}
_ENABLE_FLAGS = {
    "predicate": "filter",
    "nodeorder": "score",
    "joborder": "job_order",
    "taskorder": "task_order",
    "jobready": "job_ready",
    "queueorder": "queue_order",
    "overused": "overused",
    "allocatable": "allocatable",
    "preemptive": "preemptive",
    "preemptable": "preemptable",
    "reclaimable": "reclaimable",
    "jobenqueued": "job_enqueueable",
    "jobpipelined": "job_pipelined",
    "jobstarving": "job_starving",
    "hypernodeorder": "hypernode_order",
}
#: Volcano switches for extension points berth does not have (network topology, sub-jobs,
#: multi-cluster, victim and target-job selection): accepted with a warning.
_UNUSED_FLAGS = (
    "bestnode",
    "targetjob",
    "reservednodes",
    "victim",
    "clusterorder",
    "subjobready",
    "subjobpipelined",
    "subjoborder",
    "hypernodegradient",
)
#: Volcano plugin options that switch a behaviour on (off by default); they reach the plugin as
#: arguments of the same name.
_OPTION_FLAGS = ("enableHierarchy", "enableNamespaceOrder")
#: Keys of a plugin entry besides the switches.
_PLUGIN_KEYS = ("name", "arguments", *_OPTION_FLAGS)
#: Arguments Volcano's actions read (the ``configurations`` block). berth keeps equivalence
#: classes and a cached node scan whatever is set, so the predicate error cache is a no-op;
#: preempt's candidate-node bounds set how many nodes it examines pod by pod.
ACTION_ARGUMENTS: dict[str, dict[str, type]] = {
    "enqueue": {},
    "allocate": {"predicateErrorCacheEnable": bool},
    "backfill": {"predicateErrorCacheEnable": bool},
    "reclaim": {"predicateErrorCacheEnable": bool},
    "preempt": {
        "predicateErrorCacheEnable": bool,
        "enableTopologyAwarePreemption": bool,
        "topologyAwarePreemptWorkerNum": int,
        "minCandidateNodesPercentage": int,
        "minCandidateNodesAbsolute": int,
        "maxCandidateNodesAbsolute": int,
    },
}
#: The overcommit factor Volcano falls back to when the configured one is below 1.
OVERCOMMIT_DEFAULT = 1.2


class ConfigError(ValueError):
    """A scheduler configuration that cannot be used; the message names the field."""


@dataclass(slots=True)
class PluginSpec:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    #: Extension points switched off (Volcano's enableJobOrder: false and the like).
    disabled: frozenset[str] = frozenset()
    #: Where the user wrote it and under which name, for error messages.
    origin: str = ""


@dataclass(slots=True)
class SchedulerConfig:
    actions: list[str]
    tiers: list[list[PluginSpec]]
    search: SearchConfig = field(default_factory=SearchConfig)
    period: float = 1.0  # seconds between sessions (simulation)
    scheduler_names: tuple[str, ...] = ()  # empty: every pod is berth's
    warnings: list[str] = field(default_factory=list)
    source: str = "<default>"
    simulation: dict[str, Any] = field(default_factory=dict)  # read by berth.sim
    #: Per-action arguments (Volcano's ``configurations``), by action name.
    action_arguments: dict[str, dict[str, Any]] = field(default_factory=dict)


def parse_config(raw: Any, source: str) -> SchedulerConfig:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping with actions and tiers")
    warnings: list[str] = []
    actions = _parse_actions(raw.get("actions", DEFAULT_CONFIG["actions"]), source, warnings)
    tiers_raw = raw.get("tiers", DEFAULT_CONFIG["tiers"])
    if not isinstance(tiers_raw, list):
        raise ConfigError(f"{source}: tiers: expected a list of {{plugins: [...]}}")
    tiers = [_parse_tier(tier, f"tiers[{i}]", source, warnings) for i, tier in enumerate(tiers_raw)]
    search = _parse_search(raw.get("search") or {}, source)
    period = raw.get("period", 1.0)
    if not _finite(period) or period <= 0:
        raise ConfigError(f"{source}: period: expected seconds > 0 (got {_shown(period)})")
    names = raw.get("schedulerNames", raw.get("scheduler_names", []))
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{source}: schedulerNames: expected a list of names")
    simulation = raw.get("simulation") or {}
    if not isinstance(simulation, dict):
        raise ConfigError(f"{source}: simulation: expected a mapping")
    unknown = [key for key in raw if key not in CONFIGURATION_KEYS]
    if raw and len(unknown) == len(raw):
        raise ConfigError(
            f"{source}: no scheduler configuration field in it (expected some of "
            f"{', '.join(sorted(CONFIGURATION_KEYS))})"
        )
    for key in unknown:
        warnings.append(f"{source}: {key}: unknown field, ignored")
    action_arguments = _parse_configurations(raw.get("configurations"), source, warnings)
    _check_arguments(tiers, warnings)
    return SchedulerConfig(
        actions,
        tiers,
        search,
        float(period),
        tuple(names),
        warnings,
        source,
        dict(simulation),
        action_arguments,
    )


def instantiate(spec: PluginSpec) -> Plugin:
    """The plugin ``spec`` names, built with its arguments; an argument error names where the
    plugin was configured."""
    where = f"{spec.origin}: " if spec.origin else ""
    try:
        return plugin_class(spec.name)(spec.arguments)
    except (TypeError, ValueError) as exc:
        detail = str(exc) if isinstance(exc, PluginArgumentError) else f"plugin {spec.name}: {exc}"
        raise PluginArgumentError(where + detail) from exc


def _check_arguments(tiers: list[list[PluginSpec]], warnings: list[str]) -> None:
    """Build each configured plugin once, so a bad argument is refused when the file is read
    and one the plugin never reads (misspelt, or meant for another plugin) is warned about."""
    for tier in tiers:
        for spec in tier:
            try:
                plugin = instantiate(spec)
            except PluginArgumentError as exc:
                raise ConfigError(str(exc)) from exc
            read = sorted(plugin.arguments.read - {"weight"})
            expected = f"it reads weight{''.join(', ' + key for key in read)}"
            for key in plugin.arguments.unread():
                warnings.append(
                    f"{spec.origin}: plugin {spec.name}: argument {key}: unknown to this plugin, "
                    f"ignored ({expected})"
                )


def _parse_configurations(raw: Any, source: str, warnings: list[str]) -> dict[str, dict[str, Any]]:
    """Volcano's ``configurations``: a list of {name: <action>, arguments: {...}}."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: configurations: expected a list of {{name, arguments}}")
    result: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(raw):
        at = f"configurations[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{source}: {at}: expected {{name: <action>, arguments: {{...}}}}")
        name, arguments = item["name"], item.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ConfigError(f"{source}: {at}.arguments: expected a mapping")
        for key in item:
            if key not in ("name", "arguments"):
                warnings.append(f"{source}: {at}.{key}: unknown field, ignored")
        known = ACTION_ARGUMENTS.get(name)
        if known is None:
            warnings.append(f"{source}: {at}: berth has no action {name!r}; ignored")
            continue
        accepted = result.setdefault(name, {})
        for key, value in arguments.items():
            kind = known.get(key)
            if kind is None:
                warnings.append(
                    f"{source}: {at}.arguments.{key}: not an argument of {name}; ignored"
                )
            elif not _is_kind(value, kind):
                expected = "true or false" if kind is bool else "an integer"
                raise ConfigError(
                    f"{source}: {at}.arguments.{key}: expected {expected} (got {value!r})"
                )
            else:
                accepted[key] = value
    return result


def _is_kind(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_actions(raw: Any, source: str, warnings: list[str]) -> list[str]:
    if isinstance(raw, str):
        names = [a.strip() for a in raw.split(",") if a.strip()]
    elif isinstance(raw, list) and all(isinstance(a, str) for a in raw):
        names = [a.strip() for a in raw]
    else:
        raise ConfigError(f'{source}: actions: expected a list or "enqueue, allocate, ..."')
    actions = []
    for name in names:
        if name in ACTIONS:
            actions.append(name)
        elif name in LATER_ACTIONS:
            warnings.append(f"{source}: actions: {name} is not available in berth yet; skipped")
        elif name in RESERVATION_ACTIONS:
            warnings.append(
                f"{source}: actions: {name} is done by the reservation plugin in berth; skipped"
            )
        else:
            raise ConfigError(
                f"{source}: actions: unknown action {name!r} (expected one of {', '.join(ACTIONS)})"
            )
    return actions


def _parse_tier(tier: Any, where: str, source: str, warnings: list[str]) -> list[PluginSpec]:
    if not isinstance(tier, dict) or not isinstance(tier.get("plugins"), list):
        raise ConfigError(f"{source}: {where}: expected {{plugins: [...]}}")
    specs: list[PluginSpec] = []
    for j, item in enumerate(tier["plugins"]):
        at = f"{where}.plugins[{j}]"
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{source}: {at}: expected {{name: ..., arguments: {{...}}}}")
        name = item["name"]
        arguments = item.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ConfigError(f"{source}: {at}.arguments: expected a mapping")
        disabled = _disabled_points(item, f"{source}: {at}", warnings)
        for flag in _OPTION_FLAGS:
            if flag in item:
                arguments = {**arguments, flag: item[flag]}
        if name == "overcommit":
            arguments = _overcommit_arguments(arguments, f"{source}: {at}", warnings)
        if name == "capacity" and "ancestorReclaimLevel" in arguments:
            arguments = {k: v for k, v in arguments.items() if k != "ancestorReclaimLevel"}
            warnings.append(
                f"{source}: {at}.arguments.ancestorReclaimLevel: not available in berth; "
                "victims are judged by their own queue only"
            )
        if name in PLUGINS:
            specs.append(PluginSpec(name, dict(arguments), disabled, f"{source}: {at}"))
        elif name == "predicates":
            specs.extend(
                PluginSpec(f, {"weight": 0}, disabled | {"score"}, f"{source}: {at}")
                for f in _PREDICATE_FILTERS
            )
        elif name == "nodeorder":
            for key, (plugin, weight) in _NODEORDER.items():
                specs.append(
                    PluginSpec(
                        plugin,
                        {"weight": arguments.get(key, weight)},
                        disabled | {"filter"},
                        f"{source}: {at}",
                    )
                )
        elif name == "binpack":
            specs.append(
                PluginSpec(
                    "most-allocated",
                    _binpack_arguments(arguments, source, at, warnings),
                    disabled | {"filter"},
                    f"{source}: {at}",
                )
            )
        else:
            # A name a letter or two off one berth knows is a typo, not a Volcano plugin berth
            # lacks: running without it would quietly be another policy.
            close = difflib.get_close_matches(name, [*PLUGINS, *_VOLCANO_MAPPED], 1, 0.8)
            if close:
                raise ConfigError(
                    f"{source}: {at}: unknown plugin {name!r} (did you mean {close[0]}?)"
                )
            warnings.append(f"{source}: {at}: plugin {name} is not available in berth; skipped")
    return specs


def _disabled_points(item: dict[str, Any], where: str, warnings: list[str]) -> frozenset[str]:
    """The extension points an entry switches off; every other key is either known or warned
    about, so that nothing in a Volcano file is dropped silently."""
    disabled = set()
    for key, value in item.items():
        if key in _PLUGIN_KEYS:
            continue
        flag = key.lower().removeprefix("enabled").removeprefix("enable")
        if not key.lower().startswith("enable") or (
            flag not in _ENABLE_FLAGS and flag not in _UNUSED_FLAGS
        ):
            warnings.append(f"{where}.{key}: unknown field, ignored")
            continue
        if not isinstance(value, bool):
            raise ConfigError(f"{where}.{key}: expected true or false (got {value!r})")
        if flag in _UNUSED_FLAGS:
            warnings.append(f"{where}.{key}: berth has no such extension point; ignored")
        elif value is False:
            disabled.add(_ENABLE_FLAGS[flag])
    return frozenset(disabled)


def _overcommit_arguments(arguments: dict[str, Any], where: str, warnings: list[str]) -> dict:
    """Volcano replaces an overcommit factor below 1 by its default, with a warning."""
    factor = arguments.get("overcommit-factor")
    if isinstance(factor, int | float) and not isinstance(factor, bool) and factor < 1:
        warnings.append(
            f"{where}.arguments.overcommit-factor: {factor:g} is below 1; "
            f"using Volcano's default {OVERCOMMIT_DEFAULT:g}"
        )
        return {**arguments, "overcommit-factor": OVERCOMMIT_DEFAULT}
    return arguments


def _binpack_arguments(
    arguments: dict[str, Any], source: str, at: str, warnings: list[str]
) -> dict[str, Any]:
    """Volcano binpack: binpack.weight, binpack.cpu, binpack.memory, binpack.resources (a comma
    list) and binpack.resources.<name> weights. Like Volcano, a negative resource weight is
    taken as 1 (with a warning here)."""

    def weight(key: str) -> Any:
        value = arguments.get(key, 1)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            warnings.append(f"{source}: {at}.arguments.{key}: {value:g} is negative; using 1")
            return 1
        return value

    weights: dict[str, Any] = {"cpu": weight("binpack.cpu"), "memory": weight("binpack.memory")}
    extra = arguments.get("binpack.resources", "")
    if not isinstance(extra, str):
        raise ConfigError(f"{source}: {at}.arguments.binpack.resources: expected a comma list")
    for name in (r.strip() for r in extra.split(",") if r.strip()):
        weights[name] = weight(f"binpack.resources.{name}")
    return {"weight": arguments.get("binpack.weight", 1), "resources": weights}


def _parse_search(raw: Any, source: str) -> SearchConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: search: expected a mapping")
    config = SearchConfig()
    mode = raw.get("mode", config.mode)
    if mode not in ("full", "sampled"):
        raise ConfigError(f"{source}: search.mode: expected full or sampled (got {mode!r})")
    config.mode = mode
    for key, attr, kind in (
        ("percentageOfNodesToScore", "percentage", float),
        ("minFeasibleNodes", "min_feasible", int),
        ("shuffle", "shuffle", bool),
        ("shuffleMaxAllocation", "shuffle_max_allocation", float),
    ):
        if key in raw:
            value = raw[key]
            if kind is bool and not isinstance(value, bool):
                raise ConfigError(f"{source}: search.{key}: expected true or false")
            if kind is not bool and not _finite(value):
                raise ConfigError(
                    f"{source}: search.{key}: expected a number (got {_shown(value)})"
                )
            setattr(config, attr, kind(value))
    if not 1 <= config.min_feasible <= 10**9:
        raise ConfigError(f"{source}: search.minFeasibleNodes: expected 1 to 10^9")
    if not 0 <= config.percentage <= 100:
        raise ConfigError(f"{source}: search.percentageOfNodesToScore: expected 0..100")
    return config


def _finite(value: Any) -> bool:
    """A real number that is neither NaN nor infinite nor too large for a float (booleans are
    not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _shown(value: Any) -> str:
    """A value quoted back in a message, cut to one short line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
