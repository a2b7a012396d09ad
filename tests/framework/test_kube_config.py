"""KubeSchedulerConfiguration: profiles and plugin sets resolved as kube-scheduler resolves
them, mapped to berth's plugins and actions; what berth lacks is named, bad input refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.framework.config import ConfigError
from berth.framework.config_files import load_config
from berth.framework.framework import Framework
from berth.framework.kube_config import KUBE_API, KUBE_KIND, parse_kube_config
from berth.framework.plugin import PluginArgumentError


def kube(profile: dict[str, Any] | None = None, **top: Any):
    raw: dict[str, Any] = {"apiVersion": KUBE_API, "kind": KUBE_KIND, **top}
    if profile is not None:
        raw["profiles"] = [profile]
    return parse_kube_config(raw, "k.yaml")


def plugins(config) -> dict[str, tuple[dict, set[str]]]:
    """berth plugin → (arguments, extension points switched off)."""
    return {
        spec.name: (spec.arguments, set(spec.disabled)) for tier in config.tiers for spec in tier
    }


def weights(config) -> dict[str, float]:
    return {p.name: p.weight for p in Framework(config).scorers}


def test_default_profile():
    config = kube()
    assert config.actions == ["allocate", "preempt", "backfill"]
    assert [spec.name for spec in config.tiers[0]] == ["priority"]
    assert weights(config) == {
        "taint-toleration": 3,
        "node-affinity": 2,
        "topology-spread": 2,
        "pod-affinity": 2,
        "balanced-allocation": 1,
        "least-allocated": 1,
    }
    filters = [p.name for p in Framework(config).filters]
    assert sorted(filters) == [
        "node-affinity",
        "pod-affinity",
        "resource-fit",
        "taint-toleration",
        "topology-spread",
    ]
    assert plugins(config)["topology-spread"][0]["defaultingType"] == "System"
    assert config.scheduler_names == ("default-scheduler", "berth")
    assert config.search.mode == "sampled" and config.search.percentage == 0
    assert not config.search.shuffle
    assert config.warnings == [
        "k.yaml: profiles[0]: plugins with nothing to act on in berth, skipped (ImageLocality: "
        "container images are not modelled; NodePorts: host ports are not modelled; "
        "NodeVolumeLimits: volumes are not modelled; SchedulingGates: pods' schedulingGates are "
        "not modelled; VolumeBinding: volumes are not modelled; VolumeRestrictions: volumes are "
        "not modelled; VolumeZone: volumes are not modelled)"
    ]


WEIGHT_CASES = {
    "score weight": (
        {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
        {"least-allocated": 5},
    ),
    "multiPoint weight": (
        {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 7}]}},
        {"taint-toleration": 7},
    ),
    "score weight wins over multiPoint": (
        {
            "multiPoint": {"enabled": [{"name": "InterPodAffinity", "weight": 7}]},
            "score": {"enabled": [{"name": "InterPodAffinity", "weight": 9}]},
        },
        {"pod-affinity": 9},
    ),
    "no weight keeps the default": (
        {"score": {"enabled": [{"name": "NodeAffinity"}]}},
        {"node-affinity": 2},
    ),
}


@pytest.mark.parametrize("plugin_sets,expected", WEIGHT_CASES.values(), ids=WEIGHT_CASES.keys())
def test_score_weights(plugin_sets, expected):
    got = weights(kube({"plugins": plugin_sets}))
    assert {name: got[name] for name in expected} == expected


def test_dynamic_resources_is_berths_dra_filter():
    config = kube({"plugins": {"multiPoint": {"enabled": [{"name": "DynamicResources"}]}}})
    assert "dynamic-resources" in [p.name for p in Framework(config).filters]
    assert not any("DynamicResources" in warning for warning in config.warnings)


def test_disabled_at_one_point():
    config = kube(
        {
            "plugins": {
                "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
                "filter": {"disabled": [{"name": "TaintToleration"}]},
            }
        }
    )
    framework = Framework(config)
    assert "balanced-allocation" not in [p.name for p in framework.scorers]
    assert "taint-toleration" not in [p.name for p in framework.filters]
    assert "taint-toleration" in [p.name for p in framework.scorers]


def test_disable_every_default_and_choose():
    config = kube(
        {
            "plugins": {
                "multiPoint": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "NodeResourcesFit"}, {"name": "PrioritySort"}],
                }
            }
        }
    )
    assert config.actions == ["allocate", "backfill"]
    assert sorted(plugins(config)) == ["least-allocated", "priority", "resource-fit"]
    assert weights(config) == {"least-allocated": 1}
    assert not any("NodeName is disabled" in w for w in config.warnings)
    assert any("NodeUnschedulable is disabled" in w for w in config.warnings)


def test_score_disabled_with_star_keeps_filters():
    config = kube({"plugins": {"score": {"disabled": [{"name": "*"}]}}})
    assert weights(config) == {}
    assert "pod-affinity" in [p.name for p in Framework(config).filters]


def test_no_preemption_without_default_preemption():
    config = kube({"plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}})
    assert config.actions == ["allocate", "backfill"]


STRATEGY_CASES = {
    "MostAllocated": (
        {"type": "MostAllocated"},
        "most-allocated",
        {
            "onlyRequested": False,
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        },
    ),
    "RequestedToCapacityRatio": (
        {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "nvidia.com/gpu", "weight": 3}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        },
        "requested-to-capacity-ratio",
        {
            "resources": [{"name": "nvidia.com/gpu", "weight": 3}],
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
        },
    ),
}


@pytest.mark.parametrize(
    "strategy,plugin,arguments", STRATEGY_CASES.values(), ids=STRATEGY_CASES.keys()
)
def test_scoring_strategy(strategy, plugin, arguments):
    config = kube(
        {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]}
    )
    got, _ = plugins(config)[plugin]
    assert {k: v for k, v in got.items() if k != "weight"} == arguments
    assert "least-allocated" not in plugins(config)
    Framework(config)


def test_plugin_arguments_reach_berth_plugins():
    config = kube(
        {
            "pluginConfig": [
                {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 4}},
                {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/foo"]}},
                {
                    "name": "PodTopologySpread",
                    "args": {
                        "defaultingType": "List",
                        "defaultConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "zone",
                                "whenUnsatisfiable": "ScheduleAnyway",
                            }
                        ],
                    },
                },
            ]
        }
    )
    framework = Framework(config)
    by_name = {p.name: p for p in framework.plugins}
    assert by_name["pod-affinity"].hard_weight == 4
    assert by_name["resource-fit"].ignored == {"example.com/foo"}
    assert [c.topology_key for c in by_name["topology-spread"].defaults] == ["zone"]


def test_added_affinity_is_read():
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
            ]
        }
    }
    config = kube({"pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": added}}]})
    plugin = next(p for p in Framework(config).plugins if p.name == "node-affinity")
    assert len(plugin.added_required) == 1


BAD = {
    "two profiles": (
        {"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]},
        "k.yaml: profiles: 2 profiles (a, b); berth runs one profile per run: keep the one to "
        "simulate",
    ),
    "unknown extension point": (
        {"profiles": [{"plugins": {"scoring": {}}}]},
        "k.yaml: profiles[0].plugins.scoring: unknown extension point",
    ),
    "bad strategy type": (
        {
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": {"type": "Spread"}},
                        }
                    ]
                }
            ]
        },
        "scoringStrategy.type: expected one of LeastAllocated, MostAllocated, "
        "RequestedToCapacityRatio (got 'Spread')",
    ),
    "plugin configured twice": (
        {"profiles": [{"pluginConfig": [{"name": "NodeAffinity"}, {"name": "NodeAffinity"}]}]},
        "k.yaml: profiles[0].pluginConfig[1].name: NodeAffinity is configured twice",
    ),
    "percentage out of range": (
        {"percentageOfNodesToScore": 150},
        "k.yaml: percentageOfNodesToScore: expected a whole number 0..100 (got 150)",
    ),
    "negative weight": (
        {
            "profiles": [
                {"plugins": {"score": {"enabled": [{"name": "NodeAffinity", "weight": -2}]}}}
            ]
        },
        "k.yaml: profiles[0].plugins.score.enabled[0].weight: expected a whole number >= 0 "
        "(got -2)",
    ),
}


@pytest.mark.parametrize("raw,message", BAD.values(), ids=BAD.keys())
def test_bad_configuration_is_refused(raw, message):
    with pytest.raises(ConfigError) as error:
        parse_kube_config({"apiVersion": KUBE_API, "kind": KUBE_KIND, **raw}, "k.yaml")
    assert message in str(error.value)


def test_other_api_version_is_refused():
    with pytest.raises(
        ConfigError, match="apiVersion: 'kubescheduler.config.k8s.io/v1beta3' is not supported"
    ):
        parse_kube_config(
            {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KUBE_KIND}, "k"
        )


def test_bad_plugin_argument_fails_when_the_framework_is_built():
    config = kube(
        {"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 200}}]}
    )
    with pytest.raises(
        PluginArgumentError,
        match=r"\(InterPodAffinity\): plugin pod-affinity: argument hardPodAffinityWeight: "
        r"must be 0..100",
    ):
        Framework(config)


WARNING_CASES = {
    "a plugin berth lacks": (
        {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}}}]},
        "k.yaml: profiles[0]: plugin Coscheduling is not available in berth; skipped: it would "
        "have done gang scheduling by scheduling.x-k8s.io PodGroups",
    ),
    "an unknown plugin": (
        {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "MyFilter"}]}}}]},
        "k.yaml: profiles[0]: plugin MyFilter is not available in berth; skipped",
    ),
    "backoff": ({"podMaxBackoffSeconds": 5}, "k.yaml: podMaxBackoffSeconds: not modelled"),
    "extenders": (
        {"extenders": [{"urlPrefix": "http://x"}]},
        "k.yaml: extenders[0]: extender http://x is not available in berth",
    ),
    "unknown argument": (
        {"profiles": [{"pluginConfig": [{"name": "InterPodAffinity", "args": {"weight": 3}}]}]},
        "k.yaml: profiles[0].pluginConfig[0].args.weight: unknown field, ignored",
    ),
    "only one of preFilter and filter": (
        {"profiles": [{"plugins": {"preFilter": {"disabled": [{"name": "PodTopologySpread"}]}}}]},
        "PodTopologySpread is enabled at only one of preFilter and filter; berth runs them as one "
        "step: filter decides",
    ),
    "NodeName without NodeAffinity": (
        {"profiles": [{"plugins": {"filter": {"disabled": [{"name": "NodeAffinity"}]}}}]},
        "NodeAffinity is disabled at filter, but berth checks nodeSelector, node affinity and "
        "spec.nodeName together (node-affinity): all are checked",
    ),
}


@pytest.mark.parametrize("raw,warning", WARNING_CASES.values(), ids=WARNING_CASES.keys())
def test_what_berth_does_not_do_is_a_warning(raw, warning):
    config = parse_kube_config({"apiVersion": KUBE_API, "kind": KUBE_KIND, **raw}, "k.yaml")
    assert any(warning in w for w in config.warnings), config.warnings


PERCENTAGE_CASES = {
    "unset: adaptive sampling": ({}, ("sampled", 0.0)),
    "top level": ({"percentageOfNodesToScore": 30}, ("sampled", 30.0)),
    "the profile's wins": (
        {"percentageOfNodesToScore": 30, "profiles": [{"percentageOfNodesToScore": 100}]},
        ("full", 0.0),
    ),
}


@pytest.mark.parametrize("raw,expected", PERCENTAGE_CASES.values(), ids=PERCENTAGE_CASES.keys())
def test_percentage_of_nodes_to_score(raw, expected):
    config = parse_kube_config({"apiVersion": KUBE_API, "kind": KUBE_KIND, **raw}, "k")
    assert (config.search.mode, config.search.percentage) == expected


def test_a_named_profile_takes_only_its_pods():
    assert kube({"schedulerName": "batch"}).scheduler_names == ("batch",)


def test_load_config_reads_it_from_a_file_and_from_a_configmap(tmp_path: Path):
    raw = {"apiVersion": KUBE_API, "kind": KUBE_KIND, "profiles": [{"schedulerName": "x"}]}
    plain = tmp_path / "kube.yaml"
    plain.write_text(yaml.safe_dump(raw))
    wrapped = tmp_path / "cm.yaml"
    wrapped.write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"config.yaml": yaml.safe_dump(raw)}}
        )
    )
    for path in (plain, wrapped):
        config = load_config(path)
        assert config.scheduler_names == ("x",)
        assert not any("unknown field" in w for w in config.warnings)
