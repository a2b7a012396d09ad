"""Scheduler configuration: the default, Volcano files (plain and ConfigMap-wrapped), action and
plugin mapping, extension-point switches, and the errors that name the offending field."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from berth.framework.config import ConfigError, PluginSpec, SchedulerConfig, parse_config
from berth.framework.config_files import load_config
from berth.framework.framework import Framework
from berth.framework.plugin import PluginArgumentError
from berth.framework.scheduler import Scheduler
from tests.builders import node, pod, run, scheduler

VOLCANO = textwrap.dedent("""\
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
      - name: conformance
    - plugins:
      - name: drf
      - name: predicates
      - name: proportion
      - name: nodeorder
      - name: binpack
""")


def names(plugins) -> list[str]:
    return [p.name for p in plugins]


def test_default_config():
    cfg = load_config(None)
    assert cfg.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in tier] for tier in cfg.tiers] == [
        ["priority", "gang"],
        [
            "proportion",
            "resource-fit",
            "node-affinity",
            "taint-toleration",
            "pod-affinity",
            "topology-spread",
            "least-allocated",
            "balanced-allocation",
            "gpu-packing",
        ],
    ]
    assert cfg.warnings == []
    assert cfg.search.mode == "full"
    assert cfg.period == 1.0
    fw = Framework(cfg)
    assert names(fw.filters) == [
        "node-affinity",
        "taint-toleration",
        "resource-fit",
        "pod-affinity",
        "topology-spread",
    ]
    assert names(fw.scorers) == [
        "node-affinity",
        "taint-toleration",
        "pod-affinity",
        "topology-spread",
        "least-allocated",
        "balanced-allocation",
        "gpu-packing",
    ]
    assert names(fw.job_orders) == ["priority", "gang"]
    assert names(fw.task_orders) == ["priority"]
    assert names(fw.job_valids) == ["gang"]
    assert names(fw.job_readies) == names(fw.job_pipelineds) == ["gang"]
    assert names(fw.job_starvings) == ["priority", "gang"]
    # proportion enforces queue capability by default
    assert names(fw.queue_orders) == names(fw.overuseds) == ["proportion"]
    assert names(fw.allocatables) == ["proportion"]
    assert [names(tier) for tier in fw.job_enqueueables] == [["proportion"]]
    assert names(fw.allocation_watchers) == names(fw.enqueue_watchers) == ["proportion"]
    # Victims: priority's for preempt, proportion's for reclaim (gang's votes are off).
    assert names(fw.preemptables) == ["priority"]
    assert names(fw.reclaimables) == ["proportion"]
    assert names(fw.preemptives) == ["proportion"]


def test_volcano_config_loads_without_warnings():
    cfg = parse_config(yaml.safe_load(VOLCANO), "volcano-scheduler.conf")
    assert cfg.actions == ["enqueue", "allocate", "backfill"]
    assert cfg.warnings == []
    fw = Framework(cfg)
    assert names(fw.job_orders) == ["priority", "gang", "drf"]
    assert names(fw.preemptables) == ["priority", "gang", "conformance", "drf"]
    assert names(fw.reclaimables) == ["gang", "conformance", "proportion"]
    assert [p.tier for p in fw.preemptables] == [0, 0, 0, 1]
    assert names(fw.queue_orders) == ["proportion"]  # drf orders queues only with a hierarchy
    assert set(names(fw.filters)) == {
        "resource-fit",
        "node-affinity",
        "taint-toleration",
        "pod-affinity",
        "topology-spread",
    }
    # nodeorder's defaults (mostrequested weight 0 is dropped) and binpack's most-allocated
    assert sorted(names(fw.scorers)) == sorted(
        [
            "least-allocated",
            "balanced-allocation",
            "node-affinity",
            "pod-affinity",
            "taint-toleration",
            "topology-spread",
            "most-allocated",
        ]
    )
    s = scheduler([node("n")], cfg)
    assert run(s, [pod("p")]) == {"p": "n"}


def test_configmap_wrapped_config_loads(tmp_path):
    inner = textwrap.indent(VOLCANO, "    ")
    path = tmp_path / "cm.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: volcano-scheduler-configmap\n"
        f"data:\n  volcano-scheduler.conf: |\n{inner}"
    )
    cfg = load_config(path)
    assert cfg.actions == ["enqueue", "allocate", "backfill"]
    assert cfg.source == str(path)
    assert cfg.warnings == []
    assert [p.name for p in cfg.tiers[0]] == ["priority", "gang", "conformance"]


def test_plain_file_loads(tmp_path):
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(VOLCANO)
    assert load_config(path).actions == ["enqueue", "allocate", "backfill"]


def test_empty_file_gives_the_default(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    cfg = load_config(path)
    assert cfg.actions == load_config(None).actions
    assert [[p.name for p in t] for t in cfg.tiers] == [
        [p.name for p in t] for t in load_config(None).tiers
    ]


FILE_ERRORS = {
    "missing file": (None, "cannot read"),
    "invalid yaml": ("actions: [enqueue\n", "invalid YAML at line 2, column 1"),
    "ConfigMap without a string": (
        "kind: ConfigMap\ndata:\n  conf: {actions: x}\n",
        "ConfigMap: data: expected one scheduler configuration",
    ),
    "ConfigMap without data": ("kind: ConfigMap\n", "ConfigMap: data"),
}


@pytest.mark.parametrize("text,message", FILE_ERRORS.values(), ids=FILE_ERRORS.keys())
def test_file_errors(tmp_path, text, message):
    path = tmp_path / "conf.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_configmap_with_invalid_embedded_yaml(tmp_path):
    path = tmp_path / "cm.yaml"
    path.write_text("kind: ConfigMap\ndata:\n  volcano-scheduler.conf: |\n    actions: [enqueue\n")
    with pytest.raises(ConfigError, match="ConfigMap: data: invalid YAML at line"):
        load_config(path)


ACTION_CASES = {
    "string": ("enqueue, allocate, backfill", ["enqueue", "allocate", "backfill"], []),
    "list": (["allocate", "backfill"], ["allocate", "backfill"], []),
    "preempt and reclaim": (
        "enqueue, allocate, preempt, reclaim, backfill",
        ["enqueue", "allocate", "preempt", "reclaim", "backfill"],
        [],
    ),
    "shuffle warns": ("allocate, shuffle", ["allocate"], ["shuffle"]),
}


@pytest.mark.parametrize("raw,expected,warned", ACTION_CASES.values(), ids=ACTION_CASES.keys())
def test_actions(raw, expected, warned):
    cfg = parse_config({"actions": raw}, "t")
    assert cfg.actions == expected
    assert len(cfg.warnings) == len(warned)
    for name, warning in zip(warned, cfg.warnings, strict=True):
        assert warning == f"t: actions: {name} is not available in berth yet; skipped"


@pytest.mark.parametrize(
    ("name", "suggested"),
    [("priorty", "priority"), ("proportoin", "proportion"), ("nodeordr", "nodeorder")],
)
def test_a_misspelt_plugin_is_an_error_naming_the_closest(name, suggested):
    raw = {"actions": "enqueue, allocate", "tiers": [{"plugins": [{"name": name}]}]}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "t")
    assert str(err.value) == (
        f"t: tiers[0].plugins[0]: unknown plugin {name!r} (did you mean {suggested}?)"
    )


def test_a_volcano_plugin_berth_lacks_is_skipped_with_a_warning():
    raw = {"actions": "enqueue, allocate", "tiers": [{"plugins": [{"name": "tdm"}]}]}
    cfg = parse_config(raw, "t")
    assert cfg.warnings == ["t: tiers[0].plugins[0]: plugin tdm is not available in berth; skipped"]


def test_unknown_action_is_an_error_naming_it():
    with pytest.raises(ConfigError, match="unknown action 'gobble'"):
        parse_config({"actions": "enqueue, gobble"}, "t")


def specs(raw_plugin: dict) -> list:
    cfg = parse_config({"tiers": [{"plugins": [raw_plugin]}]}, "t")
    return cfg.tiers[0]


BINPACK_CASES = {
    "defaults": ({}, 1, {"cpu": 1, "memory": 1}),
    "weight and cpu": ({"binpack.weight": 10, "binpack.cpu": 3}, 10, {"cpu": 3, "memory": 1}),
    "gpu listed, default weight": (
        {"binpack.resources": "nvidia.com/gpu"},
        1,
        {"cpu": 1, "memory": 1, "nvidia.com/gpu": 1},
    ),
    "gpu listed with weight": (
        {
            "binpack.resources": "nvidia.com/gpu, example.com/foo",
            "binpack.resources.nvidia.com/gpu": 5,
            "binpack.memory": 0,
        },
        1,
        {"cpu": 1, "memory": 0, "nvidia.com/gpu": 5, "example.com/foo": 1},
    ),
}


@pytest.mark.parametrize(
    "arguments,weight,resources", BINPACK_CASES.values(), ids=BINPACK_CASES.keys()
)
def test_binpack_maps_to_most_allocated(arguments, weight, resources):
    (spec,) = specs({"name": "binpack", "arguments": arguments})
    assert spec.name == "most-allocated"
    assert spec.arguments == {"weight": weight, "resources": resources}
    assert "filter" in spec.disabled
    (plugin,) = Framework(
        parse_config({"tiers": [{"plugins": [{"name": "binpack", "arguments": arguments}]}]}, "t")
    ).scorers
    assert plugin.name == "most-allocated" and plugin.weight == weight


def test_binpack_gpu_weight_packs_gpu_pods():
    cfg = parse_config(
        {
            "actions": "allocate",
            "tiers": [
                {
                    "plugins": [
                        {"name": "resource-fit"},
                        {
                            "name": "binpack",
                            "arguments": {
                                "binpack.resources": "nvidia.com/gpu",
                                "binpack.resources.nvidia.com/gpu": 5,
                            },
                        },
                    ]
                }
            ],
        },
        "t",
    )
    nodes = [node("busy-cpu", gpu=8000), node("busy-gpu", gpu=8000)]
    bound = [
        (pod("c", cpu=3000, mem=6000), "busy-cpu"),
        (pod("g", cpu=10, mem=10, gpu=4000), "busy-gpu"),
    ]
    s = scheduler(nodes, cfg, bound=bound)
    assert run(s, [pod("p", cpu=100, mem=100, gpu=1000)]) == {"p": "busy-gpu"}


def test_nodeorder_weights():
    tier = specs(
        {"name": "nodeorder", "arguments": {"leastrequested.weight": 0, "mostrequested.weight": 2}}
    )
    weights = {s.name: s.arguments["weight"] for s in tier}
    assert weights["least-allocated"] == 0 and weights["most-allocated"] == 2
    assert all("filter" in s.disabled for s in tier)
    fw = Framework(
        parse_config(
            {
                "tiers": [
                    {
                        "plugins": [
                            {
                                "name": "nodeorder",
                                "arguments": {
                                    "leastrequested.weight": 0,
                                    "mostrequested.weight": 2,
                                },
                            }
                        ]
                    }
                ]
            },
            "t",
        )
    )
    assert "least-allocated" not in names(fw.scorers)
    assert "most-allocated" in names(fw.scorers)
    # no predicates configured: only the checks every allocation makes (free room, nodeName)
    assert names(fw.filters) == ["node-name", "resource-fit"]


#: Filters include resource-fit whatever the configuration (every allocation checks it), and
#: node-name when node-affinity's filter is missing (a named node is always honoured).
SWITCH_CASES = {
    "predicates with enablePredicate false": (
        {"name": "predicates", "enablePredicate": False},
        ["node-name", "resource-fit"],
        [],
    ),
    "predicates alone": (
        {"name": "predicates"},
        ["node-affinity", "taint-toleration", "resource-fit", "pod-affinity", "topology-spread"],
        [],
    ),
    "nodeorder with enableNodeOrder false": (
        {"name": "nodeorder", "enableNodeOrder": False},
        ["node-name", "resource-fit"],
        [],
    ),
    "binpack with enableNodeOrder false": (
        {"name": "binpack", "enableNodeOrder": False},
        ["node-name", "resource-fit"],
        [],
    ),
    "a berth filter switched off": (
        {"name": "node-affinity", "enablePredicate": False},
        ["node-name", "resource-fit"],
        ["node-affinity"],
    ),
    "a berth scorer switched off": (
        {"name": "least-allocated", "enableNodeOrder": False},
        ["node-name", "resource-fit"],
        [],
    ),
    "enabled spelling": (
        {"name": "node-affinity", "enabledNodeOrder": False},
        ["node-affinity", "resource-fit"],
        [],
    ),
}


@pytest.mark.parametrize("item,filters,scorers", SWITCH_CASES.values(), ids=SWITCH_CASES.keys())
def test_extension_point_switches(item, filters, scorers):
    fw = Framework(parse_config({"tiers": [{"plugins": [item]}]}, "t"))
    assert names(fw.filters) == filters
    assert names(fw.scorers) == scorers


def test_job_order_switch():
    fw = Framework(
        parse_config(
            {
                "tiers": [
                    {"plugins": [{"name": "priority", "enableJobOrder": False}, {"name": "gang"}]}
                ]
            },
            "t",
        )
    )
    assert names(fw.job_orders) == ["gang"]
    assert names(fw.task_orders) == ["priority"]


QUEUE_SWITCH_CASES = {
    "drf alone: job order and preemption": (
        {"name": "drf"},
        {
            "job_orders": ["drf"],
            "preemptables": ["drf"],
            "queue_orders": [],
            "allocation_watchers": [],
        },
    ),
    "drf enablePreemptable false": (
        {"name": "drf", "enablePreemptable": False},
        {"preemptables": []},
    ),
    "drf enableHierarchy orders queues": (
        {"name": "drf", "enableHierarchy": True},
        {"queue_orders": ["drf"], "allocation_watchers": ["drf"]},
    ),
    "drf enableNamespaceOrder keeps namespace totals": (
        {"name": "drf", "enableNamespaceOrder": True},
        {"allocation_watchers": ["drf"]},
    ),
    "proportion enableQueueOrder and enableReclaimable false": (
        {"name": "proportion", "enableQueueOrder": False, "enableReclaimable": False},
        {"queue_orders": [], "reclaimables": [], "overuseds": ["proportion"]},
    ),
    "proportion enabledOverused and enabledAllocatable false": (
        {"name": "proportion", "enabledOverused": False, "enabledAllocatable": False},
        {"overuseds": [], "allocatables": []},
    ),
    "capacity": (
        {"name": "capacity"},
        {"preemptives": ["capacity"], "overuseds": [], "allocatables": ["capacity"]},
    ),
    "proportion": (
        {"name": "proportion"},
        {"preemptives": ["proportion"], "overuseds": ["proportion"]},
    ),
    "capacity enablePreemptive false": (
        {"name": "capacity", "enablePreemptive": False},
        {"preemptives": []},
    ),
    "conformance": (
        {"name": "conformance"},
        {"preemptables": ["conformance"], "reclaimables": ["conformance"]},
    ),
    "overcommit enableJobEnqueued false": (
        {"name": "overcommit", "enableJobEnqueued": False},
        {"enqueue_watchers": ["overcommit"]},
    ),
}


@pytest.mark.parametrize(
    "item,expected", QUEUE_SWITCH_CASES.values(), ids=QUEUE_SWITCH_CASES.keys()
)
def test_queue_extension_point_switches(item, expected):
    fw = Framework(parse_config({"tiers": [{"plugins": [item]}]}, "t"))
    for bucket, plugins in expected.items():
        assert names(getattr(fw, bucket)) == plugins, bucket


def test_job_enqueueable_votes_are_kept_per_tier():
    fw = Framework(
        parse_config(
            {
                "tiers": [
                    {"plugins": [{"name": "priority"}, {"name": "sla"}]},
                    {"plugins": [{"name": "gang"}]},
                    {"plugins": [{"name": "overcommit"}, {"name": "proportion"}]},
                ]
            },
            "t",
        )
    )
    assert [names(tier) for tier in fw.job_enqueueables] == [["sla"], ["overcommit", "proportion"]]


def test_disabled_predicate_lets_a_selector_mismatch_through():
    cfg = parse_config(
        {
            "actions": "allocate",
            "tiers": [
                {
                    "plugins": [
                        {"name": "resource-fit"},
                        {"name": "node-affinity", "enablePredicate": False},
                    ]
                }
            ],
        },
        "t",
    )
    s = scheduler([node("n")], cfg)
    assert run(s, [pod("p", node_selector={"pool": "none"})]) == {"p": "n"}


CONFIG_ERRORS = {
    "not a mapping": (["actions"], "expected a mapping"),
    "actions type": ({"actions": 3}, "actions: expected a list"),
    "tiers type": ({"tiers": {"plugins": []}}, "tiers: expected a list"),
    "tier shape": ({"tiers": [{"plugin": []}]}, "tiers[0]: expected {plugins: [...]}"),
    "plugin shape": (
        {"tiers": [{"plugins": [{"name": "gang"}, {"nam": "x"}]}]},
        "tiers[0].plugins[1]: expected {name: ..., arguments: {...}}",
    ),
    "arguments shape": (
        {"tiers": [{"plugins": [{"name": "gang", "arguments": [1]}]}]},
        "tiers[0].plugins[0].arguments: expected a mapping",
    ),
    "binpack.resources type": (
        {"tiers": [{"plugins": [{"name": "binpack", "arguments": {"binpack.resources": 3}}]}]},
        "binpack.resources: expected a comma list",
    ),
    "search type": ({"search": "fast"}, "search: expected a mapping"),
    "search mode": ({"search": {"mode": "greedy"}}, "search.mode: expected full or sampled"),
    "search percentage range": (
        {"search": {"percentageOfNodesToScore": 150}},
        "search.percentageOfNodesToScore: expected 0..100",
    ),
    "search percentage type": (
        {"search": {"percentageOfNodesToScore": "half"}},
        "search.percentageOfNodesToScore: expected a number",
    ),
    "search minFeasibleNodes bool": (
        {"search": {"minFeasibleNodes": True}},
        "search.minFeasibleNodes: expected a number",
    ),
    "search shuffle type": ({"search": {"shuffle": "yes"}}, "search.shuffle: expected true"),
    "period zero": ({"period": 0}, "period: expected seconds > 0"),
    "period negative": ({"period": -1.5}, "period: expected seconds > 0"),
    "period type": ({"period": "1s"}, "period: expected seconds > 0"),
    "period bool": ({"period": True}, "period: expected seconds > 0"),
    "schedulerNames type": ({"schedulerNames": [1]}, "schedulerNames: expected a list"),
    "enable switch not a boolean": (
        {"tiers": [{"plugins": [{"name": "gang", "enableJobReady": "no"}]}]},
        "tiers[0].plugins[0].enableJobReady: expected true or false (got 'no')",
    ),
    "configurations type": ({"configurations": {"preempt": {}}}, "configurations: expected a list"),
    "configurations entry": (
        {"configurations": [{"arguments": {}}]},
        "configurations[0]: expected {name: <action>, arguments: {...}}",
    ),
    "configurations arguments type": (
        {"configurations": [{"name": "preempt", "arguments": [1]}]},
        "configurations[0].arguments: expected a mapping",
    ),
    "configurations argument value": (
        {"configurations": [{"name": "preempt", "arguments": {"maxCandidateNodesAbsolute": "5"}}]},
        "configurations[0].arguments.maxCandidateNodesAbsolute: expected an integer (got '5')",
    ),
    "simulation type": ({"simulation": [1]}, "simulation: expected a mapping"),
}


@pytest.mark.parametrize("raw,message", CONFIG_ERRORS.values(), ids=CONFIG_ERRORS.keys())
def test_config_errors_name_the_field(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "conf.yaml")
    assert str(err.value).startswith("conf.yaml: ")
    assert message in str(err.value)


def test_search_settings_parse():
    cfg = parse_config(
        {
            "search": {
                "mode": "sampled",
                "percentageOfNodesToScore": 20,
                "minFeasibleNodes": 50,
                "shuffle": False,
                "shuffleMaxAllocation": 0.5,
            },
            "period": 2,
        },
        "t",
    )
    s = cfg.search
    assert (s.mode, s.percentage, s.min_feasible, s.shuffle, s.shuffle_max_allocation) == (
        "sampled",
        20.0,
        50,
        False,
        0.5,
    )
    assert cfg.period == 2.0


@pytest.mark.parametrize(
    "raw",
    [{"actionz": "allocate"}, {"value": {"actions": "allocate"}}, {"tier": [], "plugin": []}],
)
def test_a_mapping_with_no_configuration_field_is_refused(raw):
    with pytest.raises(ConfigError, match="t: no scheduler configuration field in it"):
        parse_config(raw, "t")


def test_unknown_top_level_field_warns_and_scheduler_names_parse():
    cfg = parse_config({"actionz": "allocate", "schedulerNames": "volcano"}, "t")
    assert cfg.warnings == ["t: actionz: unknown field, ignored"]
    assert cfg.scheduler_names == ("volcano",)


ARGUMENT_ERRORS = {
    "weight not a number": (
        {"name": "least-allocated", "arguments": {"weight": "heavy"}},
        "plugin least-allocated: argument weight: 'heavy' is not a number",
    ),
    "nodeorder weight not a number": (
        {"name": "nodeorder", "arguments": {"leastrequested.weight": "x"}},
        "plugin least-allocated: argument weight: 'x' is not a number",
    ),
    "binpack weight not a number": (
        {"name": "binpack", "arguments": {"binpack.weight": "x"}},
        "plugin most-allocated: argument weight: 'x' is not a number",
    ),
    "overcommit factor not a number": (
        {"name": "overcommit", "arguments": {"overcommit-factor": "lots"}},
        "plugin overcommit: argument overcommit-factor: 'lots' is not a number",
    ),
    "sla waiting time not a duration": (
        {"name": "sla", "arguments": {"sla-waiting-time": "soon"}},
        "plugin sla: argument sla-waiting-time: 'soon' is not a duration "
        "(expected e.g. 30m, 1h, 1h30m)",
    ),
    "enableHierarchy not a boolean": (
        {"name": "drf", "enableHierarchy": "yes"},
        "plugin drf: argument enableHierarchy: 'yes' is not true or false",
    ),
}


@pytest.mark.parametrize("item,message", ARGUMENT_ERRORS.values(), ids=ARGUMENT_ERRORS.keys())
def test_plugin_argument_errors_name_the_file_and_tier(item, message):
    with pytest.raises(ConfigError) as err:
        parse_config({"tiers": [{"plugins": [{"name": "gang"}]}, {"plugins": [item]}]}, "t")
    assert str(err.value) == f"t: tiers[1].plugins[0]: {message}"


def test_a_plugin_built_without_a_file_names_the_plugin():
    with pytest.raises(PluginArgumentError, match="^plugin least-allocated: argument weight"):
        Scheduler(SchedulerConfig(["allocate"], [[PluginSpec("least-allocated", {"weight": "x"})]]))


MISSPELT = {
    "misspelt weight": (
        {"name": "least-allocated", "arguments": {"wieght": 2}},
        "t: tiers[0].plugins[0]: plugin least-allocated: argument wieght: unknown to this "
        "plugin, ignored (it reads weight, resources)",
    ),
    "another plugin's argument": (
        {"name": "sla", "arguments": {"overcommit-factor": 2}},
        "t: tiers[0].plugins[0]: plugin sla: argument overcommit-factor: unknown to this "
        "plugin, ignored (it reads weight, sla-waiting-time)",
    ),
}


@pytest.mark.parametrize("item,warning", MISSPELT.values(), ids=MISSPELT.keys())
def test_arguments_a_plugin_never_reads_are_warned_about(item, warning):
    assert parse_config({"tiers": [{"plugins": [item]}]}, "t").warnings == [warning]


def test_arguments_a_plugin_reads_raise_no_warning():
    item = {"name": "least-allocated", "arguments": {"weight": 2, "resources": {"cpu": 1}}}
    assert parse_config({"tiers": [{"plugins": [item]}]}, "t").warnings == []


RESOURCE_ERRORS = {
    "weight not a number": (
        {"cpu": "lots"},
        "plugin most-allocated: argument resources.cpu: 'lots' is not a number",
    ),
    "negative weight": (
        {"cpu": -1},
        "plugin most-allocated: argument resources.cpu: must be >= 0 (got -1)",
    ),
    "list without names": (
        [{"weight": 1}],
        "plugin most-allocated: argument resources: expected a list of {name, weight}",
    ),
    "not a mapping": ("cpu", "plugin most-allocated: argument resources: expected a mapping"),
}


def most_allocated_with(resources):
    return parse_config(
        {
            "actions": "allocate",
            "tiers": [
                {
                    "plugins": [
                        {"name": "resource-fit"},
                        {"name": "most-allocated", "arguments": {"resources": resources}},
                    ]
                }
            ],
        },
        "t",
    )


@pytest.mark.parametrize("resources,message", RESOURCE_ERRORS.values(), ids=RESOURCE_ERRORS.keys())
def test_bad_resources_argument_is_reported(resources, message):
    with pytest.raises(ConfigError) as err:
        most_allocated_with(resources)
    assert str(err.value).startswith(f"t: tiers[0].plugins[1]: {message}")


def test_overcommit_factor_below_one_falls_back_to_volcanos_default():
    cfg = parse_config(
        {"tiers": [{"plugins": [{"name": "overcommit", "arguments": {"overcommit-factor": 0.8}}]}]},
        "t",
    )
    assert cfg.warnings == [
        "t: tiers[0].plugins[0].arguments.overcommit-factor: 0.8 is below 1; "
        "using Volcano's default 1.2"
    ]
    (plugin,) = Framework(cfg).plugins
    assert plugin.factor == 1.2


def test_unknown_plugin_keys_warn_and_unused_switches_are_named():
    cfg = parse_config(
        {
            "tiers": [
                {
                    "plugins": [
                        {"name": "gang", "enableJobPipelined": False, "enableTargetJob": True},
                        {"name": "priority", "weigth": 2},
                    ]
                }
            ]
        },
        "t",
    )
    assert cfg.warnings == [
        "t: tiers[0].plugins[0].enableTargetJob: berth has no such extension point; ignored",
        "t: tiers[0].plugins[1].weigth: unknown field, ignored",
    ]
    fw = Framework(cfg)
    assert names(fw.job_pipelineds) == [] and names(fw.job_readies) == ["gang"]


STARVING_SWITCHES = {
    "both vote: gang decides": ({}, ["priority", "gang"]),
    "gang off: any pending pod starves": ({"enableJobStarving": False}, ["priority"]),
}


@pytest.mark.parametrize("gang,voters", STARVING_SWITCHES.values(), ids=STARVING_SWITCHES.keys())
def test_starvation_switches(gang, voters):
    fw = Framework(
        parse_config(
            {"tiers": [{"plugins": [{"name": "priority"}, {"name": "gang", **gang}]}]}, "t"
        )
    )
    assert names(fw.job_starvings) == voters


def test_configurations_block_is_read():
    cfg = parse_config(
        {
            "actions": "enqueue, allocate, preempt",
            "configurations": [
                {"name": "preempt", "arguments": {"maxCandidateNodesAbsolute": 3}},
                {"name": "allocate", "arguments": {"predicateErrorCacheEnable": False}},
                {"name": "gangpreempt", "arguments": {"maxDomains": 2}},
                {"name": "preempt", "arguments": {"minCandidateNodesRatio": 5}},
            ],
        },
        "t",
    )
    assert cfg.action_arguments == {
        "preempt": {"maxCandidateNodesAbsolute": 3},
        "allocate": {"predicateErrorCacheEnable": False},
    }
    assert cfg.warnings == [
        "t: configurations[2]: berth has no action 'gangpreempt'; ignored",
        "t: configurations[3].arguments.minCandidateNodesRatio: not an argument of preempt; "
        "ignored",
    ]
    preempt = Scheduler(cfg).actions[-1]
    assert preempt.examined == 3


def test_volcano_list_of_actions_and_newer_actions():
    cfg = parse_config({"actions": ["enqueue", "allocate", "gangpreempt", "backfill"]}, "t")
    assert cfg.actions == ["enqueue", "allocate", "backfill"]
    assert cfg.warnings == ["t: actions: gangpreempt is not available in berth yet; skipped"]


@pytest.mark.parametrize(
    "plugins",
    [["resource-fit"], [{"name": "node-affinity", "enablePredicate": False}], ["node-affinity"]],
    ids=["no node-affinity", "node-affinity switched off", "node-affinity"],
)
def test_a_named_node_is_honoured_whatever_the_plugins(plugins):
    cfg = parse_config({"actions": "allocate", "tiers": [{"plugins": plugins}]}, "t")
    s = scheduler([node("a"), node("b")], cfg)
    assert run(s, [pod("p", node_name="b")]) == {"p": "b"}
    missing = pod("q", node_name="gone")
    assert run(s, [missing]) == {}
    assert "0/2 nodes available: 2 " in s.pending_reason(missing)


def test_capacity_ancestor_reclaim_level_is_named_as_unsupported():
    cfg = parse_config(
        {"tiers": [{"plugins": [{"name": "capacity", "arguments": {"ancestorReclaimLevel": 1}}]}]},
        "t",
    )
    assert cfg.warnings == [
        "t: tiers[0].plugins[0].arguments.ancestorReclaimLevel: not available in berth; "
        "victims are judged by their own queue only"
    ]
