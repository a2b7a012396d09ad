"""The ``simulation`` section of the configuration: latencies and what is wrong with it."""

from __future__ import annotations

import pytest

from berth.sim.config import SimConfig, SimConfigError


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
    ],
)
def test_bad_simulation_section(raw, message) -> None:
    with pytest.raises(SimConfigError) as error:
        SimConfig.from_raw(raw, "c.yaml")
    assert str(error.value) == message
