"""gpu-load-aware on hand-computed nodes (the last node of the list scored with its own
figures), estimates learned from an owner's departed pods, and bad arguments.

Nodes have 8 GPUs, 32 cores and 128 GiB; the pod placed asks 2 GPUs, 4 cores and 16 GiB.
Weights are GPU 2, cpu 1, memory 1, so a node's score is (2·gpu + cpu + memory) / 4 of the
whole-percent shares left free after the estimate.
"""

from __future__ import annotations

import numpy as np
import pytest

from berth.framework.plugin import PluginArgumentError
from berth.plugins.gpu_load_aware import GpuLoadAware
from berth.resources import GPU
from tests.builders import config, node, pod, run, scheduler

GIB_MIB = 1024


def gpu_node(name: str):
    return node(name, cpu=32000, mem=128 * GIB_MIB, gpu=8000)


def busy(name: str, gpu: int, cpu: int, mem_gib: int, used: float, **fields):
    return pod(name, cpu=cpu, mem=mem_gib * GIB_MIB, gpu=gpu, utilization=used, **fields)


def incoming(name: str = "new", **fields):
    return pod(name, cpu=4000, mem=16 * GIB_MIB, gpu=2000, **fields)


def setup(bound=(), **arguments):
    plugins = ["predicates", {"name": "gpu-load-aware", "arguments": arguments}]
    s = scheduler([gpu_node("a"), gpu_node("full"), gpu_node("idle")], config(plugins), bound=bound)
    (plugin,) = [p for p in s.framework.scorers if isinstance(p, GpuLoadAware)]
    return s, plugin


def scores(s, plugin, new) -> list[float]:
    cls = s.search.compile(new)
    return plugin.score(cls, s.state, np.arange(s.state.n)).tolist()


BOUND = [
    # a: half of 4 GPUs, 8 cores and 32 GiB in use -> 2 GPUs, 4 cores, 16 GiB used
    (busy("half", 4000, 8000, 32, 0.5), "a"),
    # full: all 8 GPUs busy, 16 cores and 64 GiB
    (busy("all", 8000, 16000, 64, 1.0), "full"),
]


def test_hand_computed_scores_the_last_node_with_its_own_figures():
    s, plugin = setup(BOUND)
    # a: gpu (8000-2000-2000)/8000 = 50, cpu (32-4-4)/32 = 75, memory (128-16-16)/128 = 75
    # full: gpu over -> 0, cpu (32-16-4)/32 = 37.5 -> 37, memory 37.5 -> 37
    # idle (last in the list): gpu 75, cpu 87.5 -> 87, memory 87.5 -> 87
    assert scores(s, plugin, incoming()) == [62.0, 18.0, 81.0]


def test_the_least_used_node_wins_even_when_it_is_last():
    s, _ = setup(BOUND)
    assert run(s, [incoming()]) == {"new": "idle"}


@pytest.mark.parametrize(
    "weights,expected",
    [
        ({GPU: 1}, [50.0, 0.0, 75.0]),
        ({"cpu": 1}, [75.0, 37.0, 87.0]),
        ({GPU: 1, "memory": 1}, [62.0, 18.0, 81.0]),
    ],
)
def test_resource_weights(weights, expected):
    s, plugin = setup(BOUND, resourceWeights=weights)
    assert scores(s, plugin, incoming()) == expected


def test_an_owner_is_estimated_by_the_most_its_departed_pods_used():
    s, plugin = setup(BOUND)
    first = busy("train-0", 2000, 4000, 16, 0.25, group="train")
    s.place_bound(first, "idle")
    s.release(first)
    # estimate: a quarter of the request: 500 milli-GPU, 1 core, 4 GiB
    # a: gpu (8000-2000-500)/8000 = 68.75 -> 68, cpu (32-4-1)/32 = 84.375 -> 84, memory 84
    # full: gpu over -> 0, cpu (32-16-1)/32 = 46.875 -> 46, memory 46
    # idle: gpu 7500/8000 = 93.75 -> 93, cpu 31/32 = 96.875 -> 96, memory 96
    assert scores(s, plugin, incoming("train-1", group="train")) == [76.0, 23.0, 94.0]
    # another job's pod is still estimated at its full request
    assert scores(s, plugin, incoming("other", group="other"))[0] == 62.0
    second = busy("train-2", 2000, 4000, 16, 0.5, group="train")
    s.place_bound(second, "idle")
    s.release(second)
    # the profile keeps the larger use: half the request now
    # a: gpu (8000-2000-1000)/8000 = 62.5 -> 62, cpu (32-4-2)/32 = 81.25 -> 81, memory 81
    assert scores(s, plugin, incoming("train-3", group="train"))[0] == 71.0


def test_departed_pods_are_measured_only_for_a_plugin_that_reads_them():
    for plugins, kept in (
        (["predicates", "gpu-load-aware"], ["default/train"]),
        (["predicates"], []),
    ):
        s = scheduler([gpu_node("idle")], config(plugins))
        done = busy("train-0", 2000, 4000, 16, 0.25, group="train")
        s.place_bound(done, "idle")
        s.release(done)
        assert [owner for owner, _ in s.state.profiles.items()] == kept


def test_pods_without_gpus_are_not_scored():
    s, plugin = setup()
    cls = s.search.compile(pod("cpu-only", cpu=1000))
    assert not plugin.relevant(cls, "score")


@pytest.mark.parametrize(
    "arguments,message",
    [
        ({"resourceWeights": [1, 2]}, "expected a mapping of nvidia.com/gpu, cpu, memory"),
        ({"resourceWeights": {"disk": 1}}, "expected a mapping"),
        ({"resourceWeights": {"cpu": -1}}, "resourceWeights.cpu: -1 is not a whole number"),
        ({"resourceWeights": {"cpu": 0}}, "at least one weight must be > 0"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(PluginArgumentError, match=message):
        GpuLoadAware(arguments)
