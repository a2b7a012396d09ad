"""QoS classes, priority bands and usage curves: as Koordinator derives them, as manifests
give them, and what is wrong with bad ones."""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.qos import (
    PRIORITY_CLASS_LABEL,
    QOS_LABEL,
    PriorityBand,
    QoS,
    band_of,
    band_of_priority,
    qos_of,
)
from berth.api.usage import UsageCurveError, UsageProfile, parse_usage_curve
from berth.cluster.usage import PodUsage
from berth.resources import MIB, ResourceAxis
from tests.builders import pod


@pytest.mark.parametrize(
    "priority,band",
    [
        (9999, PriorityBand.PROD),
        (9000, PriorityBand.PROD),
        (8999, None),
        (7500, PriorityBand.MID),
        (5000, PriorityBand.BATCH),
        (5999, PriorityBand.BATCH),
        (3000, PriorityBand.FREE),
        (2999, None),
        (0, None),
    ],
)
def test_priority_bands(priority, band) -> None:
    assert band_of_priority(priority) == band


@pytest.mark.parametrize(
    "labels,requests,priority,qos,band",
    [
        ({QOS_LABEL: "LSE"}, {"cpu": 1000}, 0, QoS.LSE, PriorityBand.PROD),
        ({QOS_LABEL: "BE"}, {"kubernetes.io/batch-cpu": 1000}, 0, QoS.BE, PriorityBand.BATCH),
        # Kubernetes BestEffort (no cpu, no memory) is BE without a label.
        ({}, {"kubernetes.io/batch-cpu": 1000}, 0, QoS.BE, PriorityBand.BATCH),
        ({}, {"cpu": 1000}, 0, QoS.LS, PriorityBand.PROD),
        # The priority's band wins over the QoS default; the label over both.
        ({QOS_LABEL: "BE"}, {}, 7100, QoS.BE, PriorityBand.MID),
        (
            {QOS_LABEL: "LS", PRIORITY_CLASS_LABEL: "koord-free"},
            {"cpu": 1},
            9500,
            QoS.LS,
            PriorityBand.FREE,
        ),
        ({QOS_LABEL: "SYSTEM"}, {"cpu": 1}, 0, QoS.SYSTEM, PriorityBand.PROD),
    ],
)
def test_qos_and_band(labels, requests, priority, qos, band) -> None:
    assert qos_of(labels, requests) == qos
    assert band_of(labels, priority, qos) == band


def test_pod_properties_follow_the_labels() -> None:
    be = pod("b", cpu=0, mem=0, extra={"kubernetes.io/batch-cpu": 500})
    assert (be.qos, be.band, be.reclaimed) == (QoS.BE, PriorityBand.BATCH, True)
    online = pod("o", priority=9100)
    assert (online.qos, online.reclaimed) == (QoS.LS, False)


def test_usage_curve_interpolates_and_repeats() -> None:
    curve = parse_usage_curve("0=0.2,43200=0.6/0.4", 86400)
    assert curve.at(21600) == pytest.approx((0.4, 0.3))
    assert curve.at(86400 + 43200) == pytest.approx((0.6, 0.4))
    assert curve.at(64800) == pytest.approx((0.4, 0.3))  # back down towards midnight
    assert curve.mean() == pytest.approx((0.4, 0.3), abs=1e-3)
    assert parse_usage_curve(curve.render(), 86400) == curve
    flat = parse_usage_curve("0=0.1,100=0.5")
    assert flat.at(1000) == (0.5, 0.5)
    assert UsageProfile.constant(0.3).at(12345) == (0.3, 0.3)


@pytest.mark.parametrize(
    "text,period,message",
    [
        ("0:0.3", None, "point 1 '0:0.3': expected time=cpu[/memory]"),
        ("0=a", None, "point 1 '0=a': expected numbers"),
        ("0=0.1/0.2/0.3", None, "point 1 '0=0.1/0.2/0.3': expected time=cpu[/memory]"),
        ("0=0.1,0=0.2", None, "point 2 '0=0.2': times must be >= 0 and increase"),
        ("0=11", None, "point 1 '0=11': fractions must be from 0 to 10"),
        ("0=0.1,90000=0.2", 86400, "point 2 '90000=0.2': time must be below the period (86400s)"),
    ],
)
def test_bad_usage_curves(text, period, message) -> None:
    with pytest.raises(UsageCurveError) as error:
        parse_usage_curve(text, period)
    assert str(error.value) == message


def test_a_batch_band_pod_asking_plain_cpu_is_counted_at_what_it_uses() -> None:
    # priority 5000 is koord-batch (on reclaimed resources), but the pod asks cpu and memory,
    # not batch-cpu/batch-memory: its usage is of those, not zero.
    axis = ResourceAxis()
    usage = PodUsage(axis)
    plain = pod("plain", cpu=2000, mem=1024, priority=5000, utilization=0.5)
    assert plain.reclaimed
    usage.add(plain, 0, _vector(axis, plain))
    sums = usage.report(0.0, 1)
    assert sums.low_demand.tolist() == [[1000.0, 512.0 * MIB]]
    assert sums.low_request.tolist() == [[2000.0, 1024.0 * MIB]]


def _vector(axis, p):
    vector = np.zeros(len(axis.names), dtype=np.int64)
    for name, amount in p.requests.items():
        vector[axis.index(name)] = amount
    return vector
