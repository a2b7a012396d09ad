"""The starvation guard's choice of elastic workers to take off: whole servers freed for a
starving gang, cheapest first, never a job below its minimum, nothing cut when the slots fit
already or cannot be freed; and its setting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.controllers.scaling.config import ScalingConfig, ScalingConfigError
from berth.controllers.scaling.starvation import free_servers, slots
from berth.defaults import STARVATION_WAIT

SERVER = (0, 0, 8)  # a slot of a whole 8-GPU server (cpu and memory not asked)


def cut(free, workers, budgets, need, slot=SERVER):
    """``free``: GPUs free per node; ``workers``: (node, job, GPUs) of each elastic worker
    above nothing; returns the workers taken off, or None."""
    rows = np.array([w[0] for w in workers], dtype=np.intp)
    jobs = np.array([w[1] for w in workers], dtype=np.intp)
    requests = np.array([(0, 0, w[2]) for w in workers], dtype=np.float64).reshape(-1, 3)
    room = np.array([(0, 0, f) for f in free], dtype=np.float64)
    out = free_servers(
        room, rows, jobs, requests, np.array(budgets), np.array(slot, dtype=np.float64), need
    )
    return None if out is None else out.tolist()


@pytest.mark.parametrize(
    ("free", "workers", "budgets", "need", "expected", "slot"),
    [
        # Two idle servers already: nothing to cut.
        ([8, 8, 0], [(2, 0, 8)], [1], 2, [], SERVER),
        # One server held by two 4-GPU workers above the minimum: both go.
        ([8, 0], [(1, 0, 4), (1, 0, 4)], [2], 2, [0, 1], SERVER),
        # The server with 4 GPUs free needs one worker off, the other two: the cheap one.
        ([0, 4, 0], [(0, 0, 4), (0, 1, 4), (1, 0, 4)], [2, 2], 1, [2], SERVER),
        # A job at its minimum (budget 0) keeps its workers: the next server is used.
        ([0, 0], [(0, 0, 8), (1, 1, 4), (1, 1, 4)], [0, 2], 1, [1, 2], SERVER),
        # The budget runs out on the first server: its workers stay, the second is freed.
        ([0, 0], [(0, 0, 4), (0, 0, 4), (1, 1, 8)], [1, 1], 1, [2], SERVER),
        # Not enough servers can be freed (a job may lose one worker only): nothing is cut.
        ([0, 0], [(0, 0, 8), (1, 0, 8)], [1], 2, None, SERVER),
        # Half-server slots: freeing 4 GPUs on a server is enough for one.
        ([0], [(0, 0, 2), (0, 0, 2), (0, 0, 2), (0, 0, 2)], [4], 1, [0, 1], (0, 0, 4)),
        # No worker above a minimum anywhere: None.
        ([4, 4], [], [], 1, None, SERVER),
    ],
)
def test_whole_servers_are_freed_for_a_starving_gang(
    free, workers, budgets, need, expected, slot
) -> None:
    assert cut(free, workers, budgets, need, slot) == expected


def test_a_freed_cut_always_fits_the_gang_and_keeps_every_minimum() -> None:
    """A random check of the guarantees: after the cut the gang's slots fit, and no job lost
    more workers than it had above its minimum."""

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(st.integers(0, 8), min_size=1, max_size=6),
        st.lists(
            st.tuples(st.integers(0, 5), st.integers(0, 2), st.sampled_from([1, 2, 4])), max_size=12
        ),  # fmt: skip
        st.lists(st.integers(0, 4), min_size=3, max_size=3),
        st.integers(1, 4),
        st.sampled_from([2, 4, 8]),
    )
    def check(free, workers, budgets, need, gpus) -> None:
        nodes = len(free)
        workers = [(n % nodes, j, g) for n, j, g in workers]
        # A node holds at most 8 GPUs.
        used = np.bincount([w[0] for w in workers], [w[2] for w in workers], minlength=nodes)
        free = [max(min(f, 8 - int(u)), 0) for f, u in zip(free, used, strict=True)]
        out = cut(free, workers, budgets, need, (0, 0, gpus))
        if out is None:
            return
        room = np.array([(0, 0, f) for f in free], dtype=np.float64)
        for i in out:
            room[workers[i][0], 2] += workers[i][2]
        assert slots(room, np.array((0, 0, gpus), dtype=np.float64)).sum() >= need
        lost = np.bincount([workers[i][1] for i in out], minlength=3)
        assert (lost <= np.array(budgets)).all()

    check()


@pytest.mark.parametrize(
    ("raw", "loaning", "wait"),
    [
        ({}, True, STARVATION_WAIT),
        ({}, False, math.inf),  # without loaning, as before the guard unless set
        ({"starvationWait": 600}, False, 600.0),
        ({"starvationWait": "off"}, True, math.inf),
        ({"starvationWait": False}, True, math.inf),  # `off` unquoted in YAML
        ({"starvationWait": 0}, True, 0.0),
    ],
)
def test_the_wait_setting(raw, loaning, wait) -> None:
    config = ScalingConfig.from_raw({"policy": "aryl", **raw}, "c.yaml")
    assert config.wait_with(loaning) == wait


@pytest.mark.parametrize("bad", [-1, "2h", True, [1]])
def test_a_bad_wait_is_refused_in_one_line(bad) -> None:
    with pytest.raises(ScalingConfigError) as caught:
        ScalingConfig.from_raw({"policy": "aryl", "starvationWait": bad}, "c.yaml")
    assert str(caught.value) == (
        f"c.yaml: simulation.scaling.starvationWait: expected seconds >= 0 or off (got {bad!r})"
    )
