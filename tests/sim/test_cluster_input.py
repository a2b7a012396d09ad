"""A cluster file is manifests or a machine list published with a trace, told apart by its
name and header."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.resources import GPU
from berth.sim.cluster_input import load_cluster, node_list_format

LISTS = {
    "openb node list": (
        "openb_node_list_gpu_node.csv",
        "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,V100M16\nn1,32000,131072,0,\n",
        "openb",
        {"n0": 8000, "n1": 0},
    ),
    "PAI machine spec": (
        "pai_machine_spec.csv",
        "m1,V100,96,512,8\nm2,CPU,96,512,0\n",
        "pai",
        {"m1": 8000, "m2": 0},
    ),
    "Alibaba 2018 machine_meta": (
        "machine_meta.csv",
        "m_1,0,1,2,96,100,USING\nm_2,0,1,3,64,100,USING\n",
        "alibaba2018",
        {"m-1": 0, "m-2": 0},
    ),
}


@pytest.mark.parametrize("name,text,fmt,gpus", LISTS.values(), ids=LISTS.keys())
def test_machine_lists(tmp_path: Path, name, text, fmt, gpus):
    path = tmp_path / name
    path.write_text(text)
    assert node_list_format(path) == fmt
    nodes = load_cluster(path).nodes
    assert {n.name: n.allocatable.get(GPU, 0) for n in nodes} == gpus


def test_manifests_stay_manifests(tmp_path: Path):
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, nvidia.com/gpu: '2'}}\n"
    )
    assert node_list_format(path) is None
    assert [n.allocatable[GPU] for n in load_cluster(path).nodes] == [2000]
