"""Fragmentation against a target workload, on small nodes computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.keys import GPU_PRODUCT_LABEL
from berth.cluster.fragmentation import (
    FEW_ROWS,
    Shape,
    Workload,
    fragmentation_after_share,
    node_fragmentation,
    target_workload,
)
from tests.builders import pod

# Half the pods ask half a device (1 core), half one whole GPU (1 core).
HALF_AND_WHOLE = Workload((Shape(1000, 500, 1), Shape(1000, 1000, 1)), np.array([1, 1]))


def _frag(workload, remaining, cpu_free, access=None):
    remaining = np.array(remaining, dtype=np.int32)
    access = np.ones((len(remaining), len(workload)), bool) if access is None else access
    return node_fragmentation(workload, remaining, np.array(cpu_free), access)


CASES = {
    # Both shapes fit; only the 300 left on device 1 is too small for either.
    "both fit": ([[1000, 300]], [8000], 300.0),
    # The whole-GPU shape finds no idle device: all 1,100 idle is fragment for it (half the
    # pods); the 500-shape can use the 800 device, so only the 300 counts: 0.5·1100 + 0.5·300.
    "whole shape lacks an idle device": ([[800, 300]], [8000], 700.0),
    # cpu short for both: every idle milli-GPU is fragment.
    "cpu short": ([[1000, 300]], [500], 1300.0),
    # A full node has nothing idle, so nothing fragmented.
    "full": ([[0, 0]], [8000], 0.0),
    # Slots past a node's devices (-1) are not capacity.
    "padding": ([[1000, -1]], [8000], 0.0),
}


@pytest.mark.parametrize("remaining,cpu,expected", CASES.values(), ids=CASES.keys())
def test_node_fragmentation(remaining, cpu, expected):
    assert _frag(HALF_AND_WHOLE, remaining, cpu)[0] == pytest.approx(expected)


def test_model_the_shape_may_not_use_counts_all_idle():
    access = np.array([[False, True]])
    # The 500-shape may not run here: 1,300 for it; the whole shape sees 300: 0.5·1300 + 0.5·300.
    assert _frag(HALF_AND_WHOLE, [[1000, 300]], [8000], access)[0] == pytest.approx(800.0)


def test_after_share_per_device():
    # Node [1000, 300]: a 200 share on device 1 leaves [1000, 100] -> 100 fragment; on device 0
    # it leaves [800, 300] -> 700 (no idle device for the whole shape). Devices too small: inf.
    after = fragmentation_after_share(
        HALF_AND_WHOLE,
        np.array([[1000, 300, 100]], dtype=np.int32),
        np.array([8000]),
        np.ones((1, 2), bool),
        200,
    )
    assert after[0, :2] == pytest.approx([0.5 * 300 + 0.5 * 1100 + 100, 200.0])
    assert after[0, 2] == np.inf


def test_target_workload_keeps_frequent_shapes_to_the_coverage():
    pods = (
        [pod(f"s{i}", cpu=1000, gpu=500) for i in range(6)]
        + [pod(f"w{i}", cpu=2000, gpu=2000) for i in range(3)]
        + [pod("rare", cpu=3000, gpu=250, node_selector={GPU_PRODUCT_LABEL: "T4"})]
    )
    workload = target_workload(pods, coverage=0.85)
    assert workload.shapes == (Shape(1000, 500, 1), Shape(2000, 1000, 2))
    assert workload.counts.tolist() == [6, 3]
    assert workload.covered == 9
    everything = target_workload(pods, coverage=1.0)
    assert everything.shapes[-1] == Shape(3000, 250, 1, ("T4",))


def test_target_workload_gpu_only_leaves_cpu_pods_out():
    pods = [pod("c", cpu=1000), pod("g", gpu=500)]
    assert target_workload(pods, gpu_only=True).shapes == (Shape(1000, 500, 1),)
    assert len(target_workload(pods).shapes) == 2


@st.composite
def _nodes_and_workload(draw):
    """A workload of up to five shapes and more rows than the few-rows path takes."""
    shapes = draw(
        st.lists(
            st.builds(
                Shape,
                st.sampled_from([0, 1000, 4000]),
                st.sampled_from([0, 150, 300, 500, 1000]),
                st.integers(0, 3),
            ),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    workload = Workload(
        tuple(shapes),
        np.array(draw(st.lists(st.integers(1, 9), min_size=len(shapes), max_size=len(shapes)))),
    )
    rows = draw(st.integers(FEW_ROWS + 1, FEW_ROWS + 6))
    devices = draw(st.integers(1, 4))
    value = st.sampled_from([-1, 0, 100, 150, 300, 450, 500, 700, 1000])
    remaining = np.array(
        draw(
            st.lists(
                st.lists(value, min_size=devices, max_size=devices), min_size=rows, max_size=rows
            )
        ),
        dtype=np.int32,
    )
    cpu = np.array(
        draw(st.lists(st.integers(0, 5000), min_size=rows, max_size=rows)), dtype=np.int64
    )
    access = np.array(
        draw(
            st.lists(
                st.lists(st.booleans(), min_size=len(shapes), max_size=len(shapes)),
                min_size=rows,
                max_size=rows,
            )
        )
    )
    return workload, remaining, cpu, access


@settings(max_examples=150, deadline=None)
@given(_nodes_and_workload(), st.sampled_from([100, 150, 300, 500]))
def test_few_rows_answer_bit_for_bit_as_many(case, share):
    # Rows past FEW_ROWS go through numpy, one row at a time through the lists: the same bits.
    workload, remaining, cpu, access = case
    many = node_fragmentation(workload, remaining, cpu, access)
    one_by_one = [
        node_fragmentation(workload, remaining[r : r + 1], cpu[r : r + 1], access[r : r + 1])[0]
        for r in range(len(remaining))
    ]
    assert many.tolist() == one_by_one
    many = fragmentation_after_share(workload, remaining, cpu, access, share)
    one_by_one = [
        fragmentation_after_share(
            workload, remaining[r : r + 1], cpu[r : r + 1], access[r : r + 1], share
        )[0].tolist()
        for r in range(len(remaining))
    ]
    assert many.tolist() == one_by_one
