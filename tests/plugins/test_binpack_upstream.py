"""Volcano's binpack tests (pkg/scheduler/plugins/binpack/binpack_test.go), ported: the plugin's
arguments, and its node scores. berth runs binpack as most-allocated with the same weights; the
score of a pod on a node it fits is Volcano's: weight × 100 × Σ wᵣ·(used+request)/allocatable
÷ Σ wᵣ over the weighted resources the pod requests. Volcano also scores nodes the pod does not
fit (as 0, or short of a resource the node lacks); berth scores only feasible nodes, so those
rows are checked as infeasible instead."""

from __future__ import annotations

import numpy as np
import pytest

from berth.framework.config import parse_config
from berth.plugins.most_allocated import MostAllocated
from tests.builders import scheduler, vnode, vpod

FOO = "example.com/foo"
GPU = "nvidia.com/gpu"


def binpack(arguments: dict) -> dict:
    return {"tiers": [{"plugins": [{"name": "binpack", "arguments": arguments}]}]}


def test_arguments():
    cfg = parse_config(
        binpack(
            {
                "binpack.weight": 10,
                "binpack.cpu": 5,
                "binpack.memory": 2,
                "binpack.resources": "nvidia.com/gpu, example.com/foo",
                "binpack.resources.nvidia.com/gpu": 7,
                "binpack.resources.example.com/foo": -3,
            }
        ),
        "t",
    )
    (spec,) = cfg.tiers[0]
    assert spec.name == "most-allocated"
    assert spec.arguments == {
        "weight": 10,
        "resources": {"cpu": 5, "memory": 2, GPU: 7, FOO: 1},
    }
    assert cfg.warnings == [
        "t: tiers[0].plugins[0].arguments.binpack.resources.example.com/foo: -3 is negative; "
        "using 1"
    ]


PODS = {
    "p1": vpod("p1", "1", "1Gi"),
    "p2": vpod("p2", "1.5", "0"),
    "p3": vpod("p3", "2", "10Gi", scalars={GPU: "2"}),
    "p4": vpod("p4", "3", "4Gi", scalars={FOO: "3"}),
}

NODE_CASES = {
    "weights 10, cpu 2, memory 3, gpu 7, foo 8": (
        {
            "binpack.weight": 10,
            "binpack.cpu": 2,
            "binpack.memory": 3,
            "binpack.resources": "nvidia.com/gpu, example.com/foo",
            "binpack.resources.nvidia.com/gpu": 7,
            "binpack.resources.example.com/foo": 8,
        },
        {"p1": {"n1": 700, "n2": 137.5}, "p2": {"n2": 375}, "p3": {"n2": 531.25}, "p4": {}},
    ),
    "weights 1, cpu 1, memory 1, gpu 23": (
        {
            "binpack.weight": 1,
            "binpack.cpu": 1,
            "binpack.memory": 1,
            "binpack.resources": "nvidia.com/gpu",
            "binpack.resources.nvidia.com/gpu": 23,
        },
        {"p1": {"n1": 75, "n2": 15.625}, "p2": {"n2": 37.5}, "p3": {"n2": 50.5}, "p4": {}},
    ),
}


@pytest.mark.parametrize("arguments,expected", NODE_CASES.values(), ids=NODE_CASES.keys())
def test_node_scores(arguments, expected):
    nodes = [
        vnode("n1", "2", "4Gi", 10),
        vnode("n2", "4", "16Gi", 10, scalars={GPU: "4"}),
        vnode("n3", "2", "4Gi", 10, scalars={FOO: "16"}),
    ]
    # As in Volcano's table p1 holds room on n1 and p2 on n3 while every pod is scored.
    s = scheduler(
        nodes,
        parse_config(binpack(arguments), "t"),
        bound=[(vpod("p1-held", "1", "1Gi"), "n1"), (vpod("p2-held", "1.5", "0"), "n3")],
    )
    (plugin,) = [p for p in s.framework.scorers if isinstance(p, MostAllocated)]
    for name, scores in expected.items():
        cls = s.search.compile(PODS[name])
        feasible = s.search.feasible(cls, slice(0, s.state.n), cls.filters)
        assert {s.state.names[r] for r in feasible} == set(scores), name
        got = plugin.weight * plugin.score(cls, s.state, feasible)
        want = [scores[s.state.names[r]] for r in feasible]
        assert np.allclose(got, want), name
