"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) as a berth configuration.

The profile's plugins are resolved the way kube-scheduler resolves them (``kube_profile``).
Each enabled upstream plugin becomes the berth plugin (or action) that does its work,
with its ``pluginConfig`` arguments; an upstream plugin berth lacks is named in a warning
saying what it would have done, never replaced silently.

berth runs one profile per run: a configuration with several is refused, naming them. The
profile schedules the pods whose ``schedulerName`` is its own (``default-scheduler`` also takes
the pods that name none). Node search follows ``percentageOfNodesToScore``: kube-scheduler's
adaptive sampling from a rotating start when unset or 0, a full scan at 100.
"""

from __future__ import annotations

from typing import Any

from berth.api.keys import DEFAULT_SCHEDULER
from berth.framework.config import ConfigError, PluginSpec, SchedulerConfig
from berth.framework.kube_profile import IMPLEMENTS, Profile, list_of, resolve
from berth.framework.search import SearchConfig

KUBE_API = "kubescheduler.config.k8s.io/v1"
KUBE_KIND = "KubeSchedulerConfiguration"
DEFAULT_PROFILE = "default-scheduler"

#: Upstream plugins with nothing to act on in berth's inputs, and why.
NOTHING_TO_DO = {
    "SchedulingGates": "pods' schedulingGates are not modelled",
    "NodePorts": "host ports are not modelled",
    "VolumeRestrictions": "volumes are not modelled",
    "NodeVolumeLimits": "volumes are not modelled",
    "VolumeBinding": "volumes are not modelled",
    "VolumeZone": "volumes are not modelled",
    "ImageLocality": "container images are not modelled",
}

#: What some plugins berth does not have would have done, for the warning that skips them.
MISSING = {
    "Coscheduling": "gang scheduling by scheduling.x-k8s.io PodGroups (berth's gang plugin "
    "does this for Volcano PodGroups in a berth configuration)",
    "CapacityScheduling": "elastic quotas (berth's capacity plugin does this for Volcano "
    "queues in a berth configuration)",
    "NodeResourceTopologyMatch": "NUMA-aware placement",
    "TargetLoadPacking": "placement by measured node load",
    "LoadVariationRiskBalancing": "placement by measured node load",
    "NodeResourcesAllocatable": "scoring by node allocatable",
}

#: Profile-level fields that change nothing in a simulation.
_QUIET = {
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "delayCacheUntilActive",
}
_BACKOFF = {"podInitialBackoffSeconds", "podMaxBackoffSeconds"}


def is_kube_scheduler_configuration(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("kind") == KUBE_KIND


def parse_kube_config(raw: dict[str, Any], source: str) -> SchedulerConfig:
    """A SchedulerConfig that runs the configuration's one profile."""
    api = raw.get("apiVersion")
    if api != KUBE_API:
        raise ConfigError(
            f"{source}: apiVersion: {api!r} is not supported (expected {KUBE_API}; "
            "v1beta2/v1beta3 configurations convert to v1 by renaming the apiVersion once "
            "removed fields are dropped)"
        )
    warnings: list[str] = []
    for key in raw:
        if key in _BACKOFF:
            warnings.append(
                f"{source}: {key}: not modelled (berth retries pending pods every scheduling "
                "session), ignored"
            )
        elif key == "extenders":
            for index, extender in enumerate(list_of(raw[key], f"{source}: extenders")):
                prefix = extender.get("urlPrefix", "?") if isinstance(extender, dict) else "?"
                warnings.append(
                    f"{source}: extenders[{index}]: extender {prefix} is not available in berth: "
                    "its filter, prioritize and bind calls are not made"
                )
        elif key not in _QUIET | {"apiVersion", "kind", "profiles", "percentageOfNodesToScore"}:
            warnings.append(f"{source}: {key}: unknown field, ignored")
    profiles = list_of(raw.get("profiles") or [{}], f"{source}: profiles")
    if len(profiles) > 1:
        names = ", ".join(
            str(p.get("schedulerName", DEFAULT_PROFILE)) if isinstance(p, dict) else "?"
            for p in profiles
        )
        raise ConfigError(
            f"{source}: profiles: {len(profiles)} profiles ({names}); berth runs one profile "
            "per run: keep the one to simulate"
        )
    profile = profiles[0]
    where = f"{source}: profiles[0]"
    if not isinstance(profile, dict):
        raise ConfigError(f"{where}: expected a mapping with schedulerName, plugins, pluginConfig")
    for key in profile:
        if key not in ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"):
            warnings.append(f"{where}.{key}: unknown field, ignored")
    name = profile.get("schedulerName", DEFAULT_PROFILE)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.schedulerName: expected a name (got {name!r})")
    percentage = profile.get("percentageOfNodesToScore", raw.get("percentageOfNodesToScore"))
    resolved = resolve(profile.get("plugins") or {}, where, warnings)
    resolved.args = _plugin_config(profile.get("pluginConfig") or [], where, resolved)
    actions, tiers = _berth_plugins(resolved)
    names = (name, DEFAULT_SCHEDULER) if name == DEFAULT_PROFILE else (name,)
    return SchedulerConfig(
        actions,
        tiers,
        search=_search(percentage, source),
        scheduler_names=names,
        warnings=warnings,
        source=source,
    )


#: Score plugins and the berth plugin that does their scoring (NodeResourcesFit: by strategy).
_SCORERS = {
    "TaintToleration": "taint-toleration",
    "NodeAffinity": "node-affinity",
    "PodTopologySpread": "topology-spread",
    "InterPodAffinity": "pod-affinity",
    "NodeResourcesBalancedAllocation": "balanced-allocation",
}
_STRATEGIES = {
    "LeastAllocated": "least-allocated",
    "MostAllocated": "most-allocated",
    "RequestedToCapacityRatio": "requested-to-capacity-ratio",
}
#: Filters and the berth plugin that checks them.
_FILTERS = {
    "NodeResourcesFit": "resource-fit",
    "TaintToleration": "taint-toleration",
    "NodeAffinity": "node-affinity",
    "NodeName": "node-affinity",
    "PodTopologySpread": "topology-spread",
    "InterPodAffinity": "pod-affinity",
    "DynamicResources": "dynamic-resources",
}
_HANDLED = (
    set(_SCORERS)
    | set(_FILTERS)
    | {
        "PrioritySort",
        "DefaultPreemption",
        "NodeUnschedulable",
        "DefaultBinder",
    }
)


def _berth_plugins(profile: Profile) -> tuple[list[str], list[list[PluginSpec]]]:
    """berth's actions and plugin tiers for a resolved profile."""
    warnings, where = profile.warnings, profile.source
    specs: dict[str, PluginSpec] = {}

    def spec(plugin: str, upstream: str) -> PluginSpec:
        if plugin not in specs:
            specs[plugin] = PluginSpec(
                plugin, {}, frozenset({"filter", "score"}), f"{where} ({upstream})"
            )
        return specs[plugin]

    for upstream, plugin in _FILTERS.items():
        if profile.on(upstream, "filter"):
            entry = spec(plugin, upstream)
            entry.disabled = entry.disabled - {"filter"}
            entry.arguments.update(_arguments(upstream, profile))
    for upstream, plugin in _SCORERS.items():
        if profile.on(upstream, "score"):
            entry = spec(plugin, upstream)
            entry.disabled = entry.disabled - {"score"}
            entry.arguments.update(_arguments(upstream, profile))
            entry.arguments["weight"] = profile.weights.get(upstream, 1)
    if profile.on("NodeResourcesFit", "score"):
        strategy = _strategy(profile)
        entry = spec(strategy.pop("plugin"), "NodeResourcesFit")
        entry.disabled = entry.disabled - {"score"}
        entry.arguments.update(strategy, weight=profile.weights.get("NodeResourcesFit", 1))
    _check_combined(profile)
    tiers: list[list[PluginSpec]] = []
    if profile.on("PrioritySort", "queueSort"):
        tiers.append([PluginSpec("priority", {}, frozenset(), f"{where} (PrioritySort)")])
    elif profile.enabled.get("queueSort"):
        warnings.append(
            f"{where}: queueSort plugin {profile.enabled['queueSort'][0]} is not available in "
            "berth; pods are taken by job order and arrival"
        )
    tiers.append(list(specs.values()))
    actions = ["allocate"]
    if profile.on("DefaultPreemption", "postFilter"):
        actions.append("preempt")
    actions.append("backfill")
    _warn_missing(profile)
    return actions, tiers


def _check_combined(profile: Profile) -> None:
    """Where berth cannot switch off what kube-scheduler can, say so."""
    warnings, where = profile.warnings, profile.source
    name, affinity = profile.on("NodeName", "filter"), profile.on("NodeAffinity", "filter")
    if name != affinity:
        off = "NodeAffinity" if name else "NodeName"
        warnings.append(
            f"{where}: {off} is disabled at filter, but berth checks nodeSelector, node "
            "affinity and spec.nodeName together (node-affinity): all are checked"
        )
    if not profile.on("NodeResourcesFit", "filter"):
        warnings.append(
            f"{where}: NodeResourcesFit is disabled at filter, but berth never places a pod "
            "on a node without room for it: free resources are still checked"
        )
    if not profile.on("NodeUnschedulable", "filter"):
        warnings.append(
            f"{where}: NodeUnschedulable is disabled, but berth never places pods on cordoned nodes"
        )
    for upstream in ("PodTopologySpread", "InterPodAffinity", "NodeAffinity", "NodeResourcesFit"):
        for first, second in (("preFilter", "filter"), ("preScore", "score")):
            if profile.on(upstream, first) != profile.on(upstream, second) and (
                upstream in IMPLEMENTS and first in IMPLEMENTS[upstream]
            ):
                warnings.append(
                    f"{where}: {upstream} is enabled at only one of {first} and {second}; berth "
                    f"runs them as one step: {second} decides"
                )


def _warn_missing(profile: Profile) -> None:
    names = [n for n in profile.named if n not in IMPLEMENTS or profile.anywhere(n)]
    idle = sorted({n for n in names if n in NOTHING_TO_DO})
    if idle:
        reasons = "; ".join(f"{n}: {NOTHING_TO_DO[n]}" for n in idle)
        profile.warnings.append(
            f"{profile.source}: plugins with nothing to act on in berth, skipped ({reasons})"
        )
    for name in names:
        if name in _HANDLED or name in NOTHING_TO_DO:
            continue
        does = MISSING.get(name)
        detail = f": it would have done {does}" if does else ""
        profile.warnings.append(
            f"{profile.source}: plugin {name} is not available in berth; skipped{detail}"
        )


def _strategy(profile: Profile) -> dict[str, Any]:
    """NodeResourcesFit's scoringStrategy as a berth scorer and its arguments."""
    args = profile.args.get("NodeResourcesFit", {})
    strategy = args.get("scoringStrategy") or {}
    where = f"{profile.source}.pluginConfig[NodeResourcesFit].args.scoringStrategy"
    if not isinstance(strategy, dict):
        raise ConfigError(f"{where}: expected a mapping with type and resources")
    kind = strategy.get("type", "LeastAllocated")
    if kind not in _STRATEGIES:
        raise ConfigError(f"{where}.type: expected one of {', '.join(_STRATEGIES)} (got {kind!r})")
    resources = strategy.get("resources") or [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 1},
    ]
    for index, item in enumerate(list_of(resources, f"{where}.resources")):
        weight = item.get("weight", 1) if isinstance(item, dict) else None
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise ConfigError(
                f"{where}.resources[{index}].weight: expected 1..100 (got {weight!r})"
            )
    result: dict[str, Any] = {"plugin": _STRATEGIES[kind], "resources": resources}
    if kind == "MostAllocated":
        result["onlyRequested"] = False
    if kind == "RequestedToCapacityRatio":
        shape = (strategy.get("requestedToCapacityRatio") or {}).get("shape")
        if shape is not None:
            result["shape"] = shape
    return result


#: pluginConfig argument names each plugin takes, and the berth argument they become.
_ARGUMENTS: dict[str, dict[str, str]] = {
    "NodeResourcesFit": {
        "scoringStrategy": "",
        "ignoredResources": "ignoredResources",
        "ignoredResourceGroups": "ignoredResourceGroups",
    },
    "NodeResourcesBalancedAllocation": {"resources": "resources"},
    "InterPodAffinity": {
        "hardPodAffinityWeight": "hardPodAffinityWeight",
        "ignorePreferredTermsOfExistingPods": "ignorePreferredTermsOfExistingPods",
    },
    "PodTopologySpread": {
        "defaultConstraints": "defaultConstraints",
        "defaultingType": "defaultingType",
    },
    "NodeAffinity": {"addedAffinity": "addedAffinity"},
    "DefaultPreemption": {"minCandidateNodesPercentage": "", "minCandidateNodesAbsolute": ""},
}


def _arguments(upstream: str, profile: Profile) -> dict[str, Any]:
    """berth plugin arguments from an upstream plugin's pluginConfig args; kube-scheduler's
    PodTopologySpread defaults to the System default constraints."""
    args = profile.args.get(upstream, {})
    known = _ARGUMENTS.get(upstream, {})
    result = {known[k]: v for k, v in args.items() if known.get(k)}
    if upstream == "PodTopologySpread":
        result.setdefault("defaultingType", "System")
    if upstream == "NodeResourcesBalancedAllocation":
        result["balance"] = "change"  # kube-scheduler v1.37 scores the change in balance
    if upstream in ("TaintToleration", "NodeAffinity"):
        result["normalize"] = True  # scaled over the feasible nodes, as DefaultNormalizeScore
    return result


def _plugin_config(raw: Any, where: str, profile: Profile) -> dict[str, dict[str, Any]]:
    args: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(list_of(raw, f"{where}.pluginConfig")):
        at = f"{where}.pluginConfig[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{at}: expected {{name: ..., args: {{...}}}}")
        name = item["name"]
        if name in args:
            raise ConfigError(f"{at}.name: {name} is configured twice")
        values = item.get("args") or {}
        if not isinstance(values, dict):
            raise ConfigError(f"{at}.args: expected a mapping")
        values = {k: v for k, v in values.items() if k not in ("apiVersion", "kind")}
        known = _ARGUMENTS.get(name)
        if known is None:
            if name in IMPLEMENTS or name in MISSING:
                profile.warnings.append(f"{at}: arguments of {name} are not used by berth")
            else:
                profile.warnings.append(f"{at}: plugin {name} is not available in berth")
        else:
            for key in values:
                if key not in known:
                    profile.warnings.append(f"{at}.args.{key}: unknown field, ignored")
                elif not known[key] and key != "scoringStrategy":
                    profile.warnings.append(
                        f"{at}.args.{key}: berth's preempt action chooses its candidates "
                        "itself; ignored"
                    )
        if not profile.configured(name):
            profile.warnings.append(f"{at}: {name} is not enabled in the profile; ignored")
        args[name] = values
    return args


def _search(percentage: Any, source: str) -> SearchConfig:
    if percentage is None:
        percentage = 0
    if (
        isinstance(percentage, bool)
        or not isinstance(percentage, int)
        or not 0 <= percentage <= 100
    ):
        raise ConfigError(
            f"{source}: percentageOfNodesToScore: expected a whole number 0..100 "
            f"(got {percentage!r})"
        )
    if percentage == 100:
        return SearchConfig(mode="full")
    return SearchConfig(mode="sampled", percentage=float(percentage), shuffle=False)
