"""docs/experiments/aryl: its configurations and inference pool, and one of its runs on a 3-day
slice of ITP cluster06 measured the way run.py measures the whole traces, so that neither the
inputs nor the runner can rot. Skipped when the public traces (../shared/traces, beside the
project) are not there."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from berth.api.manifest import load_files
from berth.cli import main
from berth.framework.config_files import load_config
from berth.framework.framework import Framework
from berth.sim.config import SimConfig

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "docs/experiments/aryl"
TRACES = ROOT.parent / "shared/traces/itp"


def _experiment():
    spec = importlib.util.spec_from_file_location("aryl_run", EXPERIMENT / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


run = _experiment()


@pytest.mark.parametrize("mode", list(run.MODES))
def test_configurations_load(mode):
    config = load_config(EXPERIMENT / run.MODES[mode][0])
    Framework(config)
    assert config.warnings == []
    sim = SimConfig.from_raw(config.simulation, "test")
    assert sim.loaning is not None
    lending = sim.loaning.idle_before_lend < 10**6
    assert lending == mode.startswith("loaning")
    policy = mode.partition("+")[2] or None
    assert (sim.scaling.policy if sim.scaling else None) == policy


def test_the_inference_pool():
    manifests = load_files([str(EXPERIMENT / "inference.yaml")])
    assert not manifests.errors
    pool = [n for n in manifests.nodes if n.labels.get("berth.io/pool") == "inference"]
    assert len(pool) == len(manifests.nodes) == 16
    (chat,) = manifests.workloads
    assert chat.name == run.INFERENCE_JOB.removeprefix("deployment-")


@pytest.mark.skipif(not (TRACES / "cluster06.csv").exists(), reason="public traces not present")
def test_a_slice_runs_and_is_measured(tmp_path, capsys):
    """Three days of cluster06 under loaning+aryl, every job elastic, then the runner's
    measures and table row."""
    trial = run.Run("cluster06", "loaning+aryl", 1.0)
    argv = run.argv(trial, TRACES, tmp_path)[1:]  # without the program
    assert main([*argv, "--from", "10d", "--to", "13d"]) == 0
    (tmp_path / trial.name / "wall.txt").write_text("1.0\n")
    measured = run.measure(trial, tmp_path)
    assert measured["jobs"] > 50
    assert measured["inference_wait_max"] <= 30  # the configuration's wait bound
    assert measured["gpu_hours_lost"] == 0  # every job elastic: none restarts from scratch
    assert measured["lent_gpus_mean"] > 0
    rows = run.table("cluster06", [(run.Run("cluster06", "baseline", 0.0), measured)])
    assert rows[0] == f"### cluster06 ({measured['jobs']:,} jobs)"
    assert rows[-2].startswith("| baseline | 0% |") and "1.00×" in rows[-2]
