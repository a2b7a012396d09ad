"""The ``simulation`` section of the configuration: latencies and what is wrong with it."""

from __future__ import annotations

import pytest

from berth.sim.config import SimConfig


def test_restart_latency_defaults_to_the_start_latency() -> None:
    assert SimConfig.from_raw({"startLatency": 30}, "c.yaml").restart == 30
    config = SimConfig.from_raw({"startLatency": 30, "restartLatency": 5}, "c.yaml")
    assert (config.start_latency, config.restart) == (30, 5)


@pytest.mark.parametrize(
    "raw,message",
    [
        (
            {"restartLatency": -1},
            "c.yaml: simulation.restartLatency: expected seconds >= 0 (got -1)",
        ),
        (
            {"restartLatency": "10s"},
            "c.yaml: simulation.restartLatency: expected seconds >= 0 (got '10s')",
        ),
        (
            {"startLatncy": 3},
            "c.yaml: simulation.startLatncy: unknown field (expected startLatency, restartLatency, "
            "sampleInterval, nodeFailures, colocation, loaning, scaling, preemption)",
        ),
        # Each section of its own is checked the same way (berth.sections).
        (
            {"colocation": {"cpuReclaim": 60}},
            "c.yaml: simulation.colocation.cpuReclaim: unknown field (expected "
            "cpuReclaimThresholdPercent, memoryReclaimThresholdPercent, "
            "batchCPUThresholdPercent, batchMemoryThresholdPercent, metricReportIntervalSeconds, "
            "cpuCalculatePolicy, memoryCalculatePolicy, cpuSuppressThresholdPercent, "
            "memoryEvictThresholdPercent, memoryEvictLowerPercent, "
            "cpuEvictBESatisfactionLowerPercent, cpuEvictBESatisfactionUpperPercent, "
            "sloCPUThresholdPercent)",
        ),
        ({"colocation": [1]}, "c.yaml: simulation.colocation: expected a mapping"),
        (
            {"preemption": {"work": "keep", "restartCosts": 5}},
            "c.yaml: simulation.preemption.restartCosts: unknown field (expected work, "
            "checkpointInterval, restartCost)",
        ),
        ({"preemption": "restart"}, "c.yaml: simulation.preemption: expected a mapping"),
        ({"loaning": 3}, "c.yaml: simulation.loaning: expected a mapping"),
        ({"scaling": "aryl"}, "c.yaml: simulation.scaling: expected a mapping with a policy"),
        (
            {"nodeFailures": ["n1"]},
            "c.yaml: simulation.nodeFailures[0]: expected a mapping with node and at",
        ),
    ],
)
def test_bad_simulation_section(raw, message) -> None:
    with pytest.raises(ValueError) as error:
        SimConfig.from_raw(raw, "c.yaml")
    assert str(error.value) == message
