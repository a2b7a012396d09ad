"""docs/experiments/itp-queues: its configurations and queue rule on a 5-day slice of ITP cluster06.

Runs the experiment's own ``berth compare`` arguments (run.py's ``compare_argv``) on the jobs
submitted in one 5-day window, so the configurations cannot rot. Skipped when the public traces
(../shared/traces, beside the project) are not there.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from berth.api.manifest import load_files
from berth.cli import main
from berth.framework.config_files import load_config
from berth.framework.framework import Framework

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "docs/experiments/itp-queues"
TRACE = ROOT.parent / "shared/traces/itp/cluster06.csv"
#: Jobs submitted in [START, END) trace seconds: 264 jobs, 8 reclaimed pods under (c).
START, END = 2_176_566, 2_608_566


def _experiment():
    spec = importlib.util.spec_from_file_location("itp_queues_run", EXPERIMENT / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _experiment()


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("name", run.CONFIGS)
def test_configurations_load(name):
    config = load_config(EXPERIMENT / name)
    Framework(config)
    assert config.warnings == []


def test_fifo_has_no_gang_and_the_others_differ_only_in_actions():
    fifo, gang, full = (load_config(EXPERIMENT / name) for name in run.CONFIGS)
    names = [{p.name for tier in c.tiers for p in tier} for c in (fifo, gang, full)]
    assert not names[0] & {"gang", "priority", "drf", "proportion"}
    assert {"gang", "priority", "drf", "proportion"} <= names[1] == names[2]
    assert fifo.actions == ["allocate", "backfill"]
    assert gang.actions == ["enqueue", "allocate", "backfill"]
    assert full.actions == ["enqueue", "allocate", "preempt", "reclaim", "backfill"]


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    if not TRACE.is_file():
        pytest.skip(f"{TRACE} not present")
    folder = tmp_path_factory.mktemp("itp")
    path = folder / "cluster06-window.csv"
    with open(TRACE, newline="") as source, open(path, "w", newline="") as sink:
        reader = csv.reader(source)
        writer = csv.writer(sink)
        writer.writerow(next(reader))
        writer.writerows(row for row in reader if START <= float(row[1]) < END)
    return path


def test_queue_rule_converts_to_three_weighted_queues(window, tmp_path):
    out = tmp_path / "workload.yaml"
    assert main(["trace", "convert", str(window), "--out", str(out), "--queues", run.QUEUES]) == 0
    manifests = load_files([out])
    assert not manifests.errors
    weights = {q.name: q.weight for q in manifests.queues}
    assert weights == {"prod": 3, "research": 2, "dev": 1}
    used = {group.queue for group in manifests.groups}
    assert used == set(weights)


@pytest.fixture(scope="module")
def compared(window, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "cmp"
    assert main(run.compare_argv(window, out, "--jobs", "1")) == 0
    return out


def test_all_three_runs_complete(compared):
    table = json.loads((compared / "compare.json").read_text())
    assert table["configs"] == list(run.NAMES)
    for name in run.NAMES:
        summary = json.loads((compared / name / "summary.json").read_text())
        assert summary["jobs"]["submitted"] == 264
        assert summary["jobs"]["completed"] > 250
        assert summary["queueing_delay"]["mean"] > 0  # the cluster is contended
        assert 0 < summary["fairness"] <= 1


def test_only_fifo_places_gangs_piecemeal(compared):
    def split_jobs(name: str) -> int:
        binds: dict[str, set[str]] = {}
        for pod in _rows(compared / name / "pods.csv"):
            binds.setdefault(pod["job"], set()).add(pod["bind_time"])
        return sum(1 for times in binds.values() if len(times) > 1)

    fifo, gang, full = (split_jobs(name) for name in run.NAMES)
    assert fifo > 0  # workers of one job bound at different times: no gang
    assert gang == full == 0


def test_only_preempt_reclaim_evicts_and_evictions_are_reclaims(compared):
    counts = {
        name: json.loads((compared / name / "summary.json").read_text())["pods"]["evicted"]
        for name in run.NAMES
    }
    assert counts["fifo"] == counts["gang-drf"] == 0
    assert counts["preempt-reclaim"] > 0
    evicted = [
        p for p in _rows(compared / "preempt-reclaim" / "pods.csv") if p["phase"] == "Evicted"
    ]
    assert len(evicted) == counts["preempt-reclaim"]
    # ITP jobs carry no priority, so preempt has no lower-priority victims: all are reclaims.
    assert all(p["reason"].startswith("reclaimed by queue ") for p in evicted)
