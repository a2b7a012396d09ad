"""Per-device GPU accounting: what fits, what a pod takes, and how it is given back."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.keys import GPU_MEMORY_ANNOTATION, GPU_PRODUCT_LABEL
from berth.api.objects import Node
from berth.api.selectors import Affinity, NodeSelectorTerm, Requirement
from berth.cluster.devices import (
    GPU_DEVICES_ANNOTATION,
    DeviceError,
    DeviceTable,
    GpuAsk,
    gpu_ask,
)
from berth.cluster.state import ClusterState
from tests.builders import node, place_one, pod, run, scheduler


def _memory(n: Node, mib: str) -> Node:
    n.annotations[GPU_MEMORY_ANNOTATION] = mib
    return n


def _model(*models: str) -> Affinity:
    req = Requirement(GPU_PRODUCT_LABEL, "In", models)
    return Affinity(node_required=(NodeSelectorTerm(expressions=(req,)),))


FIT_CASES = {
    "a share fits one device but not the sum of two": (
        [node("g", gpu=2000)],
        [(pod("a", gpu=400), "g"), (pod("b", gpu=400), "g"), (pod("c", gpu=500), "g")],
        pod("p", gpu=600),
        None,
    ),
    "three 0.6 shares do not fit two devices": (
        [node("g", gpu=2000)],
        [(pod("a", gpu=600), "g"), (pod("b", gpu=600), "g")],
        pod("p", gpu=600),
        None,
    ),
    "a share fits beside another on the same device": (
        [node("g", gpu=2000)],
        [(pod("a", gpu=600), "g"), (pod("b", gpu=600), "g")],
        pod("p", gpu=400),
        "g",
    ),
    "a whole GPU needs an idle device": (
        [node("g", gpu=2000)],
        [(pod("a", gpu=100), "g"), (pod("b", gpu=1000), "g")],
        pod("p", gpu=1000),
        None,
    ),
    "two whole GPUs need two idle devices": (
        [node("shared", gpu=4000), node("idle", gpu=2000)],
        [
            (pod("a", gpu=100), "shared"),
            (pod("b", gpu=100), "shared"),
            (pod("c", gpu=2000), "shared"),
        ],
        pod("p", gpu=2000),
        "idle",
    ),
    "whole and share: an idle device plus room on another": (
        [node("g", gpu=2000)],
        [(pod("a", gpu=400), "g")],
        pod("p", gpu=1500),
        "g",
    ),
    "whole and share: no second device with room": (
        [node("g", gpu=2000)],
        [(pod("a", gpu=600), "g")],
        pod("p", gpu=1500),
        None,
    ),
    "GPU model constraint": (
        [
            node("t4", gpu=8000, labels={GPU_PRODUCT_LABEL: "T4"}),
            node("v100", gpu=8000, labels={GPU_PRODUCT_LABEL: "V100"}),
        ],
        [],
        pod("p", gpu=500, affinity=_model("V100", "A100")),
        "v100",
    ),
    "GPU model constraint nobody meets": (
        [node("t4", gpu=8000, labels={GPU_PRODUCT_LABEL: "T4"})],
        [],
        pod("p", gpu=500, affinity=_model("A100")),
        None,
    ),
    "GPU memory per device": (
        [
            _memory(node("small", gpu=2000), "16384"),
            _memory(node("large", gpu=2000), "32768"),
        ],
        [],
        pod("p", gpu=500, annotations={GPU_MEMORY_ANNOTATION: "20000"}),
        "large",
    ),
    "GPU memory of a shared device is what is left of it": (
        [_memory(node("g", gpu=1000), "16384")],
        [(pod("a", gpu=300, annotations={GPU_MEMORY_ANNOTATION: "12000"}), "g")],
        pod("p", gpu=300, annotations={GPU_MEMORY_ANNOTATION: "8000"}),
        None,
    ),
}


@pytest.mark.parametrize("nodes,bound,new,expected", FIT_CASES.values(), ids=FIT_CASES.keys())
def test_device_fit(nodes, bound, new, expected):
    where, _ = place_one(nodes, new, bound)
    assert where == expected


REASON_CASES = {
    "share": (2, pod("p", gpu=500), "no GPU device with 500m free"),
    "whole": (3, pod("p", gpu=1000), "fewer than 1 idle GPU device"),
    "both": (4, pod("p", gpu=1300), "fewer than 1 idle GPU device plus one with 300m free"),
}


@pytest.mark.parametrize("gpus,new,reason", REASON_CASES.values(), ids=REASON_CASES.keys())
def test_device_reason(gpus, new, reason):
    # 400 milli-GPU free on each device: enough in sum, too little on any one.
    bound = [(pod(f"b{i}", cpu=100, gpu=600), "g") for i in range(gpus)]
    where, s = place_one([node("g", gpu=gpus * 1000)], new, bound)
    assert where is None
    assert s.pending_reason(new) == f"0/1 nodes available: 1 {reason}"


ASKS = {
    "none": (0, None),
    "share": (460, GpuAsk(0, 460)),
    "whole": (3000, GpuAsk(3, 0)),
    "both": (2500, GpuAsk(2, 500)),
}


@pytest.mark.parametrize("milli,ask", ASKS.values(), ids=ASKS.keys())
def test_gpu_ask(milli, ask):
    assert gpu_ask(milli) == ask


def test_bound_pods_record_their_devices():
    s = scheduler([node("g", gpu=4000)])
    pods = [pod("whole", gpu=2000), pod("share", gpu=460), pod("other", gpu=300)]
    assert run(s, pods) == {"whole": "g", "share": "g", "other": "g"}
    devices = {p.name: p.gpu_devices for p in pods}
    # Placed in name order: the second share joins the device the first one started (best
    # fit), and the whole GPUs are the lowest idle ones.
    assert devices == {"other": "0:300", "share": "0:460", "whole": "1,2"}
    assert pods[1].annotations[GPU_DEVICES_ANNOTATION] == "g-gpu0:460"
    assert pods[0].annotations[GPU_DEVICES_ANNOTATION] == "g-gpu1,g-gpu2"
    assert s.state.gpus.remaining[0].tolist() == [240, 0, 0, 1000]


def test_release_gives_devices_back():
    s = scheduler([node("g", gpu=2000)])
    pods = [pod("a", gpu=700), pod("b", gpu=1000)]
    run(s, pods)
    s.release(pods[0])
    assert sorted(s.state.gpus.remaining[0].tolist()) == [0, 1000]
    assert run(s, [pod("c", gpu=800)]) == {"c": "g"}


def test_statement_rollback_and_undone_eviction_restore_exact_devices():
    s = scheduler([node("g", gpu=2000)])
    victim = pod("victim", gpu=300)
    run(s, [victim])
    before = s.state.gpus.remaining[0].copy()
    from berth.framework.session import Session

    session = Session(s.state, s.framework, s.search, {}, s.queues, 0.0)
    job = s.jobs[f"default/{victim.group}"]
    statement = session.statement()
    statement.evict(job, victim, "test")
    assert s.state.gpus.remaining[0].sum() == 2000
    newcomer = pod("new", gpu=900)
    s.submit(newcomer)
    cls = s.search.compile(newcomer)
    statement.allocate(s.jobs[f"default/{newcomer.group}"], newcomer, 0, cls)
    statement.discard()
    assert s.state.gpus.remaining[0].tolist() == before.tolist()
    assert s.state.gpus.placements[victim.key].text() == victim.gpu_devices


def test_bad_gpu_memory_annotation_is_a_clear_error():
    state = ClusterState()
    with pytest.raises(DeviceError, match="node g: annotation berth.io/gpu-memory: 'lots'"):
        state.add_node(_memory(node("g", gpu=1000), "lots"))


def test_partial_gpu_allocatable_makes_a_smaller_last_device():
    state = ClusterState()
    state.add_node(node("g", gpu=2500))
    assert state.gpus.remaining[0].tolist() == [1000, 1000, 500]
    assert np.array_equal(state.gpus.fits(np.array([0]), GpuAsk(3, 0)), [False])


BAD_MEMORY = {
    "pod": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        "    berth.io/gpu-memory: 8GB\nspec:\n  containers:\n  - name: c\n",
        'm.yaml: Pod/p: metadata.annotations.berth.io/gpu-memory: "8GB" is not an integer',
    ),
    "node": (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n"
        "    berth.io/gpu-memory: '0'\nstatus:\n  allocatable: {cpu: '4'}\n",
        "m.yaml: Node/n: metadata.annotations.berth.io/gpu-memory: must be >= 1 (got 0)",
    ),
}


@pytest.mark.parametrize("text,problem", BAD_MEMORY.values(), ids=BAD_MEMORY.keys())
def test_bad_gpu_memory_in_manifests(tmp_path, text, problem):
    from berth.api.manifest import load_files

    path = tmp_path / "m.yaml"
    path.write_text(text)
    errors = [str(e) for e in load_files([path]).errors]
    assert len(errors) == 1 and errors[0].startswith(problem.replace("m.yaml", str(path)))


# A device: milli-GPU left (-1: no device) and GiB of memory.
SLOT = st.tuples(st.sampled_from([-1, 0, 150, 500, 999, 1000]), st.sampled_from([8, 16, 32]))


@settings(max_examples=150, deadline=None)
@given(
    table=st.lists(st.lists(SLOT, min_size=1, max_size=8), min_size=6, max_size=12),
    milli=st.sampled_from([150, 300, 500, 1000, 1500, 2000, 3500]),
    memory=st.sampled_from([0, 12, 20]),
)
def test_devices_fit_alike_row_by_row_and_together(table, milli, memory):
    # A handful of rows goes through lists, more through arrays: the same answers.
    devices = DeviceTable(len(table))
    for row, slots in enumerate(table):
        for device, (left, mib) in enumerate(slots):
            if device >= devices.width:
                devices._widen(device + 1)
            devices.remaining[row, device] = left
            devices.memory[row, device] = mib * 1024
    ask = gpu_ask(milli, memory * 1024)
    rows = np.arange(len(table))
    together = devices.fits(rows, ask).tolist()
    assert together == [bool(devices.fits(rows[r : r + 1], ask)[0]) for r in rows]
