"""TimeSeries storage, accessors and CSV output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from berth.metrics.tables import write_timeseries_csv
from berth.sim.timeseries import TimeSeries, column_name

RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "pods"]


def _vec(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


def test_accessors_shapes_and_values() -> None:
    series = TimeSeries(["cpu", "memory"])
    series.sample(0, 3, 1, _vec(1000, 512), _vec(500, 256), _vec(4000, 8192))
    series.sample(60, 2, 2, _vec(2000, 1024), _vec(1500, 1000), _vec(4000, 8192))
    assert len(series) == 2
    np.testing.assert_array_equal(series.times, [0, 60])
    np.testing.assert_array_equal(series.pending, [3, 2])
    np.testing.assert_array_equal(series.running, [1, 2])
    assert series.allocated.shape == (2, 2)
    np.testing.assert_array_equal(series.used[1], [1500, 1000])
    np.testing.assert_array_equal(series.capacity[:, 1], [8192, 8192])


def test_empty_series_has_empty_arrays() -> None:
    series = TimeSeries(RESOURCES)
    assert series.times.shape == (0,)
    assert series.allocated.shape == (0, 4)


def test_grows_past_initial_capacity_without_losing_samples() -> None:
    series = TimeSeries(["cpu"])
    for i in range(5000):
        series.sample(i * 60.0, i, 0, _vec(i), _vec(i / 2), _vec(10_000))
    assert len(series) == 5000
    np.testing.assert_array_equal(series.allocated[:, 0], np.arange(5000))
    assert series.times[-1] == 4999 * 60.0


@pytest.mark.parametrize(
    ("vector", "expected"),
    [
        (_vec(1, 2, 3, 4, 99, 98), [1, 2, 3, 4]),  # axis grew: extras ignored
        (_vec(1, 2), [1, 2, 0, 0]),  # built before the axis grew: zero-padded
    ],
)
def test_vectors_are_fitted_to_resources(vector: np.ndarray, expected: list[float]) -> None:
    series = TimeSeries(RESOURCES)
    series.sample(0, 0, 0, vector, vector, vector)
    np.testing.assert_array_equal(series.allocated[0], expected)


def test_accessors_are_read_only() -> None:
    series = TimeSeries(["cpu"])
    series.sample(0, 0, 0, _vec(1), _vec(1), _vec(1))
    with pytest.raises(ValueError):
        series.allocated[0, 0] = 5


def test_rejects_time_going_backwards() -> None:
    series = TimeSeries(["cpu"])
    series.sample(10, 0, 0, _vec(1), _vec(1), _vec(1))
    with pytest.raises(ValueError, match="earlier"):
        series.sample(5, 0, 0, _vec(1), _vec(1), _vec(1))


def test_queue_allocation_known_and_late_queues() -> None:
    series = TimeSeries(["cpu"], queues=["a"])
    series.sample(0, 0, 0, _vec(1), _vec(1), _vec(10), {"a": _vec(1)})
    series.sample(1, 0, 0, _vec(3), _vec(3), _vec(10), {"a": _vec(1), "b": _vec(2)})
    assert series.queues == ["a", "b"]
    np.testing.assert_array_equal(series.queue_allocated("a")[:, 0], [1, 1])
    np.testing.assert_array_equal(series.queue_allocated("b")[:, 0], [0, 2])
    np.testing.assert_array_equal(series.queue_allocated("never")[:, 0], [0, 0])


@pytest.mark.parametrize(
    ("resource", "column"),
    [
        ("cpu", "cpu"),
        ("nvidia.com/gpu", "gpu"),
        ("example.com/fpga", "example_com_fpga"),
        ("ephemeral-storage", "ephemeral-storage"),
    ],
)
def test_column_name(resource: str, column: str) -> None:
    assert column_name(resource) == column


def test_colliding_column_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="collide"):
        TimeSeries(["a.b", "a/b"])


def test_write_csv_exact(tmp_path: Path) -> None:
    series = TimeSeries(["cpu", "nvidia.com/gpu"])
    series.sample(0, 4, 0, _vec(0, 0), _vec(0, 0), _vec(8000, 2000))
    series.sample(
        60.5,
        1,
        3,
        _vec(3000, 1000),
        _vec(1234.5678, 999.9999),
        _vec(8000, 2000),
        stranded=_vec(5000, 1000),
        gpu_fragmented=620.4,
    )
    series.sample(120.1234, 0, 4, _vec(3000.4, 2000), _vec(-0.0001, 2000), _vec(8000, 2000))
    path = tmp_path / "timeseries.csv"
    write_timeseries_csv(series, path)
    assert path.read_text() == (
        "time,pending,running,alloc_cpu,used_cpu,capacity_cpu,stranded_cpu,"
        "alloc_gpu,used_gpu,capacity_gpu,stranded_gpu,gpu_fragmented\n"
        "0,4,0,0,0,8000,0,0,0,2000,0,0\n"
        "60.5,1,3,3000,1234.568,8000,5000,1000,1000,2000,1000,620\n"
        "120.123,0,4,3000,0,8000,0,2000,2000,2000,0,0\n"
    )


def test_write_csv_is_byte_identical_for_identical_input(tmp_path: Path) -> None:
    def build() -> TimeSeries:
        series = TimeSeries(RESOURCES)
        rng = np.random.default_rng(7)
        for i in range(300):
            series.sample(
                i * 60 / 7, i % 5, i % 3, rng.random(4) * 1e4, rng.random(4) * 1e4, np.full(4, 1e4)
            )
        return series

    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    write_timeseries_csv(build(), first)
    write_timeseries_csv(build(), second)
    assert first.read_bytes() == second.read_bytes()


FAIRNESS_CASES = {
    # queue weights, per-queue cpu held (capacity 8000), expected shares, expected Jain index
    "equal shares": ({"a": 1, "b": 1}, {"a": 2000, "b": 2000}, [0.25, 0.25], 1.0),
    "one holds all": ({"a": 1, "b": 1}, {"a": 8000, "b": 0}, [1.0, 0.0], 1.0),
    "two of two unequal": ({"a": 1, "b": 1}, {"a": 6000, "b": 2000}, [0.75, 0.25], 0.8),
    "weighted shares met": ({"a": 3, "b": 1}, {"a": 6000, "b": 2000}, [0.75, 0.25], 1.0),
}


@pytest.mark.parametrize(
    "weights,held,shares,jain", FAIRNESS_CASES.values(), ids=FAIRNESS_CASES.keys()
)
def test_queue_shares_and_jain_fairness(weights, held, shares, jain) -> None:
    series = TimeSeries(["cpu", "pods"], list(weights), weights)
    series.sample(
        0,
        0,
        0,
        _vec(8000, 2),
        _vec(0, 0),
        _vec(8000, 110),
        queue_allocated={q: _vec(v, 1) for q, v in held.items()},
    )
    assert series.queue_shares()[0].tolist() == pytest.approx(shares)
    assert series.fairness()[0] == pytest.approx(jain)


def test_queue_columns_in_csv(tmp_path: Path) -> None:
    series = TimeSeries(["cpu"], ["a", "b"])
    series.sample(
        0, 0, 0, _vec(8000), _vec(0), _vec(8000), queue_allocated={"a": _vec(6000), "b": _vec(2000)}
    )
    path = tmp_path / "t.csv"
    write_timeseries_csv(series, path)
    header, row = path.read_text().splitlines()
    assert header.endswith(",share_a,share_b,fairness")
    assert row.endswith(",0.75,0.25,0.8")
