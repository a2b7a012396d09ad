"""The daily usage shape from machine samples, and the curve a workload gets from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.traces.errors import TraceLog
from berth.traces.formats.alibaba2018 import UsageSample, read_usage
from berth.traces.model import TraceOptions
from berth.traces.usage_shape import ShapeError, diurnal_shape

USAGE = Path(__file__).resolve().parents[3] / "shared/traces/alibaba-2018/machine_usage_subset.csv"


def test_hourly_means_over_the_daily_mean() -> None:
    # Two days; cpu 30% at hours 0-11 and 10% at hours 12-23 on both; memory flat 50%.
    samples = [
        UsageSample("m", day * 86400 + hour * 3600 + 10, 30.0 if hour < 12 else 10.0, 50.0)
        for day in (0, 1)
        for hour in range(24)
    ]
    shape = diurnal_shape(samples)
    assert shape.cpu == (1.5,) * 12 + (0.5,) * 12
    assert shape.memory == (1.0,) * 24
    curve = shape.curve(0.4, 0.6)
    assert curve.period == 86400 and curve.at(3600) == pytest.approx((0.6, 0.6))
    assert curve.at(86400 + 13 * 3600) == pytest.approx((0.2, 0.6))
    assert curve.mean() == pytest.approx((0.4, 0.6), abs=0.01)


def test_an_hour_without_samples_is_refused() -> None:
    samples = [UsageSample("m", hour * 3600.0, 20.0, 20.0) for hour in range(23)]
    with pytest.raises(ShapeError, match="no usage samples in hour 23 of the day"):
        diurnal_shape(samples)
    with pytest.raises(ShapeError, match="no usage samples"):
        diurnal_shape([])


@pytest.mark.skipif(not USAGE.exists(), reason="Alibaba 2018 usage sample not present")
def test_alibaba_2018_shape_peaks_in_the_morning() -> None:
    shape = diurnal_shape(read_usage(USAGE, TraceOptions(), TraceLog()))
    assert shape.samples == 100_002
    assert max(shape.cpu) == shape.cpu[6] == 1.5203  # 06:00 in the trace's clock
    assert min(shape.cpu) == shape.cpu[23] == 0.7492
    assert 0.97 < min(shape.memory) and max(shape.memory) < 1.02  # memory hardly moves
