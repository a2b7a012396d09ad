"""GPU placement policies of the FGD paper (fgd and its baselines) on small, hand-computed
nodes. Scores follow the paper's simulator (hkust-adsl/kubernetes-scheduler-simulator)."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.framework.config import parse_config
from berth.framework.podclass import PodClass
from berth.plugins.dotprod import DotProd
from berth.plugins.gpu_bestfit import GpuBestFit
from berth.plugins.gpu_clustering import GpuClustering
from berth.plugins.gpu_packing import GpuPacking
from berth.sim.fill import fill, policy_config
from tests.builders import node, pod, run, scheduler


def _config(policy: str, **arguments):
    plugins = [{"name": "resource-fit"}, {"name": policy, "arguments": arguments}]
    return parse_config({"actions": "allocate", "tiers": [{"plugins": plugins}]}, "test")


def _scores(plugin, nodes, bound, new):
    s = scheduler(nodes, _config(plugin.name), bound=bound)
    cls = s.search.compile(new)
    return plugin.score(cls, s.state, np.arange(s.state.n)).tolist()


def test_fgd_takes_the_device_that_grows_fragmentation_least():
    # Workload: half 0.5-GPU shares, half whole GPUs. Node a holds a 0.7 share on device 0.
    # A 0.3 share on a/device 0 fills it (fragment 300 -> 0); on a/device 1 it leaves no idle
    # device (-> 650); on the idle node b it strands 700 for the whole-GPU pods (-> 350).
    s = scheduler(
        [node("a", gpu=2000), node("b", gpu=2000)],
        _config("fgd"),
        bound=[(pod("held", gpu=700), "a")],
    )
    workload = [pod(f"s{i}", gpu=500) for i in range(5)] + [
        pod(f"w{i}", gpu=1000) for i in range(5)
    ]
    s.framework.on_workload(workload)
    new = pod("new", gpu=300)
    assert run(s, [new]) == {"new": "a"}
    assert new.gpu_devices == "0:300"
    fgd = s.framework.device_pickers[0]
    growth = fgd.growth(s.search.compile(pod("probe", gpu=300)), s.state, np.array([1]))
    assert growth[0].tolist() == pytest.approx([350.0, 350.0])  # b: either idle device


@pytest.mark.from_source  # patches the compiled PodClass (tests/conftest.py)
@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4),
    asks=st.lists(st.sampled_from([150, 250, 300, 460, 500, 700, 1000, 2000]), min_size=1),
    seed=st.integers(0, 3),
)
def test_fgd_picks_the_device_it_scored(sizes, asks, seed):
    # Right after the search scored a pod's class, fgd takes the device that scored the row
    # chosen instead of working the row out again: the same devices as working it out.
    nodes = [node(f"n{i}", cpu=64000, mem=65536, gpu=gpus * 1000) for i, gpus in enumerate(sizes)]

    def placed(recompute: bool) -> list[tuple[str, str]]:
        pods = [pod(f"p{i}", cpu=1000, gpu=ask) for i, ask in enumerate(asks)]
        if recompute:
            with patch.object(PodClass, "evaluated_now", return_value=False):
                fill(nodes, pods, policy_config("fgd"), seed)
        else:
            fill(nodes, pods, policy_config("fgd"), seed)
        return [(p.bound_node, p.gpu_devices) for p in pods]

    assert placed(recompute=False) == placed(recompute=True)


def test_fgd_learns_the_workload_from_waiting_pods_when_not_told():
    s = scheduler([node("a", gpu=2000), node("b", gpu=2000)], _config("fgd"))
    pods = [pod("x", gpu=500), pod("y", gpu=500)]
    run(s, pods)
    # Two half shares share one device: the other device and node b stay whole.
    assert {p.gpu_devices for p in pods} == {"0:500"}
    assert pods[0].bound_node == pods[1].bound_node
    assert len(s.framework.device_pickers[0].workload) == 1


PACKING = {
    # all devices idle: 33 - 4
    "idle node": ([node("g", gpu=4000)], [], pod("p", gpu=500), [29.0]),
    # share on a partly used device with 700 left: 100 - 7 tenths
    "shared device": ([node("g", gpu=4000)], [(pod("b", gpu=300), "g")], pod("p", gpu=500), [93.0]),
    # share too large for the used device takes an idle one on a used node: 50 - 1
    "idle device of used node": (
        [node("g", gpu=4000)],
        [(pod("b", gpu=300), "g")],
        pod("p", gpu=800),
        [49.0],
    ),
    # two whole GPUs on a used node: 50 - 2
    "whole GPUs on used node": (
        [node("g", gpu=4000)],
        [(pod("b", gpu=300), "g")],
        pod("p", gpu=2000),
        [48.0],
    ),
    # a whole GPU on the used node, its share on the used device: 50 - 1
    "whole GPU and a share on used node": (
        [node("g", gpu=4000)],
        [(pod("b", gpu=300), "g")],
        pod("p", gpu=1500),
        [49.0],
    ),
    # whole GPUs on an idle node: 33 - 4, as for a share
    "whole GPUs on idle node": ([node("g", gpu=4000)], [], pod("p", gpu=2000), [29.0]),
    "cpu pod": ([node("g", gpu=4000)], [], pod("p"), [0.0]),
}


@pytest.mark.parametrize("nodes,bound,new,expected", PACKING.values(), ids=PACKING.keys())
def test_gpu_packing_scores(nodes, bound, new, expected):
    assert _scores(GpuPacking(), nodes, bound, new) == pytest.approx(expected)


CLUSTERING = {
    # 25 · (8000 - idle) / 8000 on top of the band (a 4-GPU node: idle is at most 4000)
    "same kind only": ([(pod("b", gpu=300), "g")], pod("p", gpu=500), 75 + 25 * 4300 / 8000),
    "same kind among others": (
        [(pod("b", gpu=300), "g"), (pod("c", gpu=1000), "g")],
        pod("p", gpu=500),
        50 + 25 * 5300 / 8000,
    ),
    "no GPU pod yet": ([], pod("p", gpu=500), 25 + 25 * 4000 / 8000),
    "other kinds only": ([(pod("c", gpu=1000), "g")], pod("p", gpu=500), 25 * 5000 / 8000),
}


@pytest.mark.parametrize("bound,new,expected", CLUSTERING.values(), ids=CLUSTERING.keys())
def test_gpu_clustering_scores(bound, new, expected):
    scores = _scores(GpuClustering(), [node("g", cpu=8000, gpu=4000)], bound, new)
    assert scores == pytest.approx([expected])


def test_gpu_bestfit_prefers_the_node_left_fullest():
    nodes = [node("big", cpu=64000, gpu=8000), node("small", cpu=8000, gpu=1000)]
    scores = _scores(GpuBestFit(), nodes, [], pod("p", cpu=4000, gpu=500))
    # 100 · (1 - (0.5 · cpu left / 128 cores + 0.5 · GPU left / 8 GPUs))
    big = 100 * (1 - (0.5 * 60000 / 128000 + 0.5 * 7500 / 8000))
    small = 100 * (1 - (0.5 * 4000 / 128000 + 0.5 * 500 / 8000))
    assert scores == pytest.approx([big, small])


def test_dotprod_takes_the_device_with_least_free():
    s = scheduler([node("g", gpu=2000)], _config("dotprod"), bound=[(pod("b", gpu=600), "g")])
    new = pod("p", gpu=300)
    assert run(s, [new]) == {"p": "g"}
    assert new.gpu_devices == "0:300"
    assert isinstance(s.framework.device_pickers[0], DotProd)


def test_random_is_repeatable_for_a_seed_and_spreads():
    def placements(seed: int) -> list[str]:
        from berth.framework.scheduler import Scheduler

        s = Scheduler(_config("random"), seed=seed)
        for i in range(20):
            s.add_node(node(f"n{i}", cpu=64000, gpu=8000))
        pods = [pod(f"p{i}", gpu=500) for i in range(30)]
        binds = run(s, pods)
        return [binds[p.name] for p in pods]

    assert placements(1) == placements(1)
    assert placements(1) != placements(2)
    assert len(set(placements(1))) > 10
