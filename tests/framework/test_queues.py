"""Queue helpers: vectors of several widths stacked into one matrix as wide as the axis."""

from __future__ import annotations

import numpy as np
import pytest

from berth.framework.queues import stacked

CASES = {
    "all as wide as the axis": ([[1, 2, 3], [4, 5, 6]], 3, [[1, 2, 3], [4, 5, 6]]),
    "one built before a resource was seen": ([[1, 2, 3], [4, 5]], 3, [[1, 2, 3], [4, 5, 0]]),
    "all short": ([[1], [2]], 3, [[1, 0, 0], [2, 0, 0]]),
    "one wider: cut to the axis": ([[1, 2, 3, 9], [4, 5, 6]], 3, [[1, 2, 3], [4, 5, 6]]),
    "none": ([], 3, np.zeros((0, 3))),
}


@pytest.mark.parametrize(("vectors", "width", "expected"), CASES.values(), ids=CASES.keys())
def test_stacked(vectors, width, expected):
    matrix = stacked([np.array(v, dtype=np.int64) for v in vectors], width)
    assert matrix.shape == (len(vectors), width)
    assert np.array_equal(matrix, np.array(expected).reshape(len(vectors), width))
