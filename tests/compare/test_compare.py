"""berth compare: the same inputs under several configurations, one report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from berth.cli import main
from berth.compare import config_names

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
INPUTS = [
    "--cluster",
    str(EXAMPLES / "cluster.yaml"),
    "--workload",
    str(EXAMPLES / "workload.yaml"),
]


@pytest.mark.parametrize(
    "configs,names",
    [
        (["default", "a/binpack.yaml"], ["default", "binpack"]),
        (["x/p.yaml", "y/p.yaml", "p.yml"], ["p", "p-2", "p-3"]),
    ],
)
def test_config_names_are_unique_stems(configs, names):
    assert config_names(configs) == names


def _default_and_binpack(out: Path, *extra: str) -> int:
    binpack = str(EXAMPLES / "binpack.yaml")
    argv = ["compare", *INPUTS, "--config", "default", "--config", binpack, "--out", str(out)]
    return main([*argv, *extra])


@pytest.mark.parametrize("jobs", ["1", "2"], ids=["serial", "parallel"])
def test_compare_writes_one_report_with_ratios(tmp_path, capsys, jobs):
    out = tmp_path / "cmp"
    assert _default_and_binpack(out, "--jobs", jobs) == 0
    for name in (
        "compare.html",
        "compare.json",
        "compare_queueing_cdf.png",
        "compare_jct_cdf.png",
        "compare_allocation.png",
    ):
        assert (out / name).is_file(), name
    for config in ("default", "binpack"):
        assert (out / config / "summary.json").is_file()
        assert (out / config / "report.html").is_file()
    table = json.loads((out / "compare.json").read_text())
    assert table["configs"] == ["default", "binpack"]
    rows = {row["metric"]: row for row in table["rows"]}
    completed = rows["jobs completed"]
    assert completed["values"] == {"default": 2.0, "binpack": 2.0}
    assert completed["ratio_to_first"] == {"default": 1.0, "binpack": 1.0}
    assert "nvidia.com/gpu allocation" in rows and "pods allocation" not in rows
    for metric in ("pods evicted", "pods preempted", "pods reclaimed"):
        assert rows[metric]["values"] == {"default": 0.0, "binpack": 0.0}, metric
    assert "Comparison" in capsys.readouterr().out


def test_compare_needs_two_configs(tmp_path, capsys):
    rc = main(["compare", *INPUTS, "--config", "default", "--out", str(tmp_path / "c")])
    assert rc == 1
    assert "at least two configurations" in capsys.readouterr().err


def test_compare_rejects_a_bad_config_before_running_anything(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("actions: enqueue, teleport\n")
    out = tmp_path / "c"
    rc = main(["compare", *INPUTS, "--config", "default", "--config", str(bad), "--out", str(out)])
    assert rc == 1
    assert "unknown action 'teleport'" in capsys.readouterr().err
    assert not out.exists()


def test_compare_shows_each_configurations_warnings_and_same_policies(tmp_path, capsys):
    import yaml

    from berth.framework.config import DEFAULT_CONFIG

    same = tmp_path / "same.yaml"
    same.write_text(yaml.safe_dump({**DEFAULT_CONFIG, "colour": "blue"}))
    out = tmp_path / "c"
    rc = main(["compare", *INPUTS, "--config", "default", "--config", str(same), "--out", str(out)])
    assert rc == 0
    err = capsys.readouterr().err
    assert f"warning: [same] {same}: colour: unknown field, ignored" in err
    assert "warning: [same] runs the same policy as [default]" in err
    table = json.loads((out / "compare.json").read_text())
    assert set(table["provenance"]["configuration"]) == {"default", "same"}
    assert table["provenance"]["command"][:2] == ["berth", "compare"]


@pytest.mark.parametrize("workers", [1, 2])
def test_compare_reports_progress_per_configuration(tmp_path, workers):
    from berth.compare import RunProgress, compare
    from berth.sim.inputs import InputSpec

    events: list[RunProgress] = []
    spec = InputSpec(cluster=INPUTS[1], workloads=(INPUTS[3],), until=3600)
    compare(spec, ["default", "default"], tmp_path / "c", workers, progress=events.append)
    by_run = {name: [e for e in events if e.name == name] for name in ("default", "default-2")}
    for name, seen in by_run.items():
        start, *during, end = seen
        assert start.nodes > 0 and start.horizon == 3600, name
        assert end.done and not any(e.done for e in during), name
        assert [e.now for e in during] == sorted(e.now for e in during)


def test_compare_runs_every_seed_and_keeps_every_value(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert _default_and_binpack(out, "--seeds", "2", "--seed", "3", "--jobs", "1") == 0
    table = json.loads((out / "compare.json").read_text())
    assert table["seeds"] == {"default": [3, 4], "binpack": [3, 4]}
    for config in ("default", "binpack"):
        for seed in (3, 4):
            summary = json.loads((out / config / f"seed-{seed}" / "summary.json").read_text())
            assert summary["seed"] == seed
    rows = {row["metric"]: row for row in table["rows"]}
    completed = rows["jobs completed"]
    assert completed["runs"] == {"default": [2.0, 2.0], "binpack": [2.0, 2.0]}
    assert completed["spread"] == {"default": 0.0, "binpack": 0.0}
    assert completed["verdict"] == {"binpack": "same"}
    html = (out / "compare.html").read_text()
    assert "means over 2 seeds" in html and "default/seed-4/report.html" in html
    assert table["breakdowns"]["size"]["by"] in ("GPUs per job", "pods per job")
    assert "2 ± 0" in capsys.readouterr().out  # jobs completed, mean ± spread
