"""load-aware on Koordinator's own LoadAwareScheduling tables (node 96 cores / 512Gi), the
estimate of pods bound since the last report, and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.objects import Pod
from berth.api.qos import BATCH_CPU, BATCH_MEMORY
from berth.framework.plugin import PluginArgumentError
from berth.plugins.load_aware import LoadAware
from berth.resources import GIB
from tests.builders import config, node, scheduler

CORES = 1000


def plain(name: str, cpu: int = 0, memory: int = 0, **fields) -> Pod:
    requests = {"cpu": cpu, "memory": memory, "pods": 1}
    return Pod(name, requests={k: v for k, v in requests.items() if v}, **fields)


def setup(reported: tuple[float, float] | None, **arguments):
    s = scheduler(
        [node("test-node-1", cpu=96 * CORES, mem=512 * 1024)],
        config(["predicates", {"name": "load-aware", "arguments": arguments}]),
    )
    usage = s.state.track_usage()
    if reported is not None:
        usage.set_reported(np.array([reported[0]]), np.array([reported[1]]))
    (plugin,) = [p for p in s.framework.filters if isinstance(p, LoadAware)]
    return s, plugin


def verdict(s, plugin, pod: Pod) -> tuple[bool, float]:
    cls = s.search.compile(pod)
    rows = np.arange(1)
    return bool(plugin.filter(cls, s.state, rows)[0]), float(plugin.score(cls, s.state, rows)[0])


@pytest.mark.parametrize(
    "name,reported,arguments,passes",
    [
        ("filter normal usage", (60 * CORES, 256 * GIB), {}, True),
        ("filter exceed cpu usage", (70 * CORES, 256 * GIB), {}, False),
        ("filter exceed memory usage", (30 * CORES, 500 * GIB), {}, False),
        (
            "filter exceed memory usage by custom usage thresholds",
            (30 * CORES, 316 * GIB),
            {"usageThresholds": {"memory": 60}},
            False,
        ),
        (
            "disable filter exceed memory usage",
            (30 * CORES, 500 * GIB),
            {"usageThresholds": {"cpu": 65, "memory": 0}},
            True,
        ),
    ],
)
def test_koordinator_filter_table(name, reported, arguments, passes) -> None:
    s, plugin = setup(reported, **arguments)
    assert verdict(s, plugin, plain("test-pod"))[0] is passes, name


@pytest.mark.parametrize(
    "name,reported,pod,score",
    [
        ("score empty node", (0, 0), plain("p", 16 * CORES, 32 * GIB), 90),
        ("score load node", (32 * CORES, 10 * GIB), plain("p", 16 * CORES, 32 * GIB), 72),
        (
            "score batch Pod",
            (0, 0),
            Pod(
                "p",
                requests={BATCH_CPU: 16 * CORES, BATCH_MEMORY: 32 * GIB, "pods": 1},
                priority=5000,
            ),
            90,
        ),
        ("score empty pod", (0, 0), plain("p"), 99),
    ],
)
def test_koordinator_score_table(name, reported, pod, score) -> None:
    s, plugin = setup(reported)
    assert verdict(s, plugin, pod)[1] == score, name


def test_pods_bound_since_the_report_count_at_their_estimate() -> None:
    # Reported 40 cores; a 16-core pod bound since adds 13.6 cores: 53.6 + 13.6 for the next
    # 16-core pod = 67.2 cores = 70% > 65%: refused. Once reported (at its usage, 8 cores),
    # 48 + 13.6 = 61.6 cores = 64%: accepted.
    s, plugin = setup((40 * CORES, 0))
    first = plain("first", 16 * CORES, GIB, utilization=0.5)
    s.place_bound(first, "test-node-1")
    assert verdict(s, plugin, plain("next", 16 * CORES, GIB))[0] is False
    usage = s.state.pod_usage
    usage.report(60.0, 1)
    usage.set_reported(np.array([48.0 * CORES]), np.array([0.0]))
    assert verdict(s, plugin, plain("next", 16 * CORES, GIB))[0] is True


@pytest.mark.parametrize(
    "arguments,message",
    [
        (
            {"usageThresholds": [65]},
            "argument usageThresholds: expected a mapping of cpu and memory",
        ),
        ({"usageThresholds": {"gpu": 1}}, "expected a mapping of cpu and memory"),
        ({"estimatedScalingFactors": {"cpu": -1}}, "estimatedScalingFactors.cpu: -1 is not"),
    ],
)
def test_bad_arguments(arguments, message) -> None:
    with pytest.raises(PluginArgumentError, match=message):
        LoadAware(arguments)
