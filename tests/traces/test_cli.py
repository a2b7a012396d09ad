"""``berth trace info`` and ``berth trace convert`` through their handlers."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from berth.api.manifest import load_files

Run = Callable[..., int]


def cells(output: str) -> dict[str, list[str]]:
    """Table rows by their first cell: ``{"jobs": ["4"], ...}``."""
    rows = {}
    for line in output.splitlines():
        if "│" in line:
            parts = [part.strip() for part in line.strip().strip("│").split("│")]
            rows[parts[0]] = parts[1:]
    return rows


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_info_on_jobs(berth_trace: Run, data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert berth_trace("info", str(data / "philly" / "philly_jobs.csv")) == 0
    out = capsys.readouterr().out
    assert "philly_jobs.csv: philly jobs" in out
    rows = cells(out)
    assert rows["rows"] == ["4"]
    assert rows["skipped bad rows"] == ["0"]
    assert rows["jobs"] == ["4"]
    assert rows["pods"] == ["6"]
    assert rows["time span"] == ["1h 7m"]
    assert rows["arrival rate"] == ["3.6 jobs/hour"]
    # GPUs per job (0, 1, 16, 12), then CPU cores (4, 8, 128, 96): size, jobs, share.
    assert rows["0"] == ["1", "25.0%"]
    assert rows["9–16"] == ["2", "50.0%"]
    assert rows["65–128"] == ["2", "50.0%"]
    assert rows["3–4"] == ["1", "25.0%"]
    # Durations 60, 1800, 3600 and 7200 s.
    assert rows["45m"] == ["1h 42m", "1h 58m", "2h", "0 jobs"]


def test_info_on_nodes(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "nodes.csv",
        """
        sn,cpu_milli,memory_mib,gpu,model
        n0,64000,262144,2,P100
        n1,96000,393216,8,G2
        n2,96000,393216,8,G2
        n3,32000,131072,0,
        """,
    )
    assert berth_trace("info", str(path)) == 0
    rows = cells(capsys.readouterr().out)
    assert rows["nodes"] == ["4"]
    assert rows["CPU cores"] == ["288"]
    assert rows["memory"] == ["1,152 GiB"]
    assert rows["GPUs"] == ["18"]
    assert rows["G2"] == ["2", "16"]
    assert rows["(no GPU)"] == ["1", "0"]


def test_info_on_usage(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "machine_usage.csv",
        """
        m_1,0,10,50,,,1,1,1
        m_1,10,30,70,,,1,1,1
        m_2,3600,20,60,,,1,1,1
        """,
    )
    assert berth_trace("info", str(path)) == 0
    rows = cells(capsys.readouterr().out)
    assert rows["samples"] == ["3"]
    assert rows["machines"] == ["2"]
    assert rows["time span"] == ["1h"]
    assert rows["cpu"] == ["20.0", "28.0", "29.8", "30.0"]


def test_info_reports_skipped_rows(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.csv", "job_id,submission_time,duration,num_gpu\na,0,1,1\nb,x,1,1\n")
    assert berth_trace("info", str(path)) == 1
    assert capsys.readouterr().err == (
        f'error: {path}:3: submission_time "x" is not a number (expected seconds)\n'
    )
    assert berth_trace("info", str(path), "--on-bad-row", "skip") == 0
    out = capsys.readouterr().out
    assert cells(out)["skipped bad rows"] == ["1"]
    assert f"skipped 1 bad rows (first: {path}:3: submission_time" in out


def test_convert_a_window_with_queues(
    berth_trace: Run, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "w.yaml"
    argv = ["convert", str(data / "philly" / "philly_jobs.csv"), "--out", str(out)]
    assert berth_trace(*argv, "--from", "100", "--to", "1h", "--queues", "a:2,b:1") == 0
    loaded = load_files(out)
    assert not loaded.problems
    assert [(g.name, g.submit_time) for g in loaded.groups] == [("job-3", 20), ("job-4", 200)]
    assert [(q.name, q.weight) for q in loaded.queues] == [("a", 2), ("b", 1)]
    used = len({g.queue for g in loaded.groups})
    assert capsys.readouterr().out.splitlines() == [
        f"wrote 2 jobs (3 pods) in {used} queue{'s' if used > 1 else ''} to {out}",
        "left out 1 jobs submitted at or after the window end (3600s)",
        "left out 1 jobs submitted before the window start (100s)",
    ]


def test_convert_a_node_list(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "pai_machine_spec.csv", "m1,V100,96,512,8\nm2,CPU,96,512,0\n")
    out = tmp_path / "cluster.jsonl"
    assert berth_trace("convert", str(path), "--out", str(out)) == 0
    assert capsys.readouterr().out == f"wrote 2 nodes to {out}\n"
    assert [n.name for n in load_files(out).nodes] == ["m1", "m2"]


def test_convert_makes_the_output_folder(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "pai_machine_spec.csv", "m1,V100,96,512,8\n")
    out = tmp_path / "new" / "folder" / "cluster.yaml"
    assert berth_trace("convert", str(path), "--out", str(out)) == 0
    assert [n.name for n in load_files(out).nodes] == ["m1"]


def test_convert_failures_leave_no_file(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.csv", "job_id,submission_time,duration,num_gpu\na,0,1,1\nb,0,1,0\n")
    out = tmp_path / "w.yaml"
    assert berth_trace("convert", str(path), "--out", str(out)) == 1
    assert "c.csv:3: num_gpu 0 is below 1" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [path]
    assert berth_trace("convert", str(path), "--out", str(tmp_path / "w.txt")) == 1
    assert "expected a name ending in .yaml or .jsonl" in capsys.readouterr().err
    usage = write(tmp_path, "machine_usage.csv", "m_1,0,10,50,,,1,1,1\n")
    assert berth_trace("convert", str(usage), "--out", str(out)) == 1
    assert "machine usage has no jobs or nodes to convert" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags", [["--queues", "a:0"], ["--sample", "0"], ["--from", "soon"], ["--speedup", "-1"]]
)
def test_convert_rejects_bad_flags(berth_trace: Run, data: Path, flags: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        berth_trace("convert", str(data / "philly" / "philly_jobs.csv"), "--out", "w.yaml", *flags)
    assert caught.value.code == 2


def test_selection_flags_on_a_node_list_are_flagged(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "pai_machine_spec.csv", "m1,V100,96,512,8\n")
    assert (
        berth_trace("convert", str(path), "--out", str(tmp_path / "c.yaml"), "--sample", "3") == 0
    )
    assert "warning: --sample: ignored (no effect on pai nodes)" in capsys.readouterr().err


def test_info_and_convert_on_a_load_trace(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "AzureLLMInferenceTrace_conv.csv",
        """
        TIMESTAMP,ContextTokens,GeneratedTokens
        2023-11-16 18:00:00.0000000,100,20
        2023-11-16 18:00:30.0000000,300,20
        2023-11-16 18:01:10.0000000,50,10
        """,
    )
    assert berth_trace("info", str(path), "--bin", "30") == 0
    rows = cells(capsys.readouterr().out)
    assert rows["requests"] == ["3"]
    assert rows["requests/s"] == ["0.0333"] * 5  # mean, p50, p90, p99, max: one per bin
    assert rows["tokens/s"][0] == "5.56"
    out = tmp_path / "curve.csv"
    assert berth_trace("convert", str(path), "--out", str(out), "--bin", "30") == 0
    assert out.read_text().splitlines() == [
        "time,requests_per_second,tokens_per_second",
        "0,0.0333333,4",
        "30,0.0333333,10.6667",
        "60,0.0333333,2",
    ]


def test_a_node_listed_twice_is_a_bad_row(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path, "pai_machine_spec.csv", "m1,V100,96,512,8\nm2,CPU,96,512,0\nm1,T4,8,64,1\n"
    )
    out = tmp_path / "cluster.yaml"
    assert berth_trace("convert", str(path), "--out", str(out)) == 1
    assert capsys.readouterr().err == f"error: {path}: node m1 is listed more than once\n"
    assert berth_trace("convert", str(path), "--out", str(out), "--on-bad-row", "skip") == 0
    assert [(n.name, n.allocatable.get("nvidia.com/gpu")) for n in load_files(out).nodes] == [
        ("m1", 8000),  # the first row's, in milli-GPUs
        ("m2", None),
    ]
