"""Deadlines: drawn for trace jobs as the ElasticFlow artifact draws them (with berth's seed),
reported in jobs.csv and the summary only when some job has one, and refused when malformed."""

from __future__ import annotations

import csv
import json
import random

import pytest

from berth.api.objects import GroupPhase, PodGroup
from berth.cli import main
from berth.metrics.deadlines import deadline_status, summarize_deadlines
from berth.metrics.tables import JOB_COLUMNS
from berth.traces.deadlines import DeadlineDraw, DeadlineRange, parse_range

ITP_HEADER = "job_id,submission_time,duration,num_gpu\n"
REPO_CONFIG = "examples/policies/elasticflow.yaml"


def itp(tmp_path, rows):
    path = tmp_path / "cluster99.csv"
    path.write_text(ITP_HEADER + "".join(f"{r}\n" for r in rows))
    return path


def test_the_artifacts_draw_with_a_seed() -> None:
    """submission + int(U(low, high) × duration), one draw per job in order, from the seed."""
    draw = DeadlineDraw(DeadlineRange(0.5, 1.5), seed=7)
    got = [draw.deadline(100.5, 1000), draw.deadline(0, 3600)]
    rng = random.Random(7)
    expected = [100 + int(rng.uniform(0.5, 1.5) * 1000), int(rng.uniform(0.5, 1.5) * 3600)]
    assert got == expected
    again = DeadlineDraw(DeadlineRange(0.5, 1.5), seed=7)
    assert [again.deadline(100.5, 1000), again.deadline(0, 3600)] == got


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.5", "is not LOW:HIGH"),
        ("a:b", "is not LOW:HIGH"),
        ("2:1", "expected 0 <= LOW <= HIGH"),
        ("-1:1", "expected 0 <= LOW <= HIGH"),
        ("0:inf", "expected finite multiples"),
    ],
)
def test_bad_ranges(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_range(text)


def group(phase: GroupPhase, end: float | None) -> PodGroup:
    return PodGroup("g", phase=phase, end_time=end)


STATUSES = [
    # (phase, end, deadline, reason, run's end, status)
    (GroupPhase.COMPLETED, 100.0, 100.0, "", 500.0, "met"),
    (GroupPhase.COMPLETED, 101.0, 100.0, "", 500.0, "missed"),
    (GroupPhase.RUNNING, None, 100.0, "", 500.0, "missed"),
    (GroupPhase.RUNNING, None, 900.0, "", 500.0, "open"),
    (GroupPhase.PENDING, None, 900.0, "dropped: its deadline cannot be met", 500.0, "dropped"),
]


@pytest.mark.parametrize(("phase", "end", "deadline", "reason", "run_end", "status"), STATUSES)
def test_status(phase, end, deadline, reason, run_end, status) -> None:
    assert deadline_status(group(phase, end), deadline, reason, run_end) == status


def test_summary_shares_leave_open_jobs_out() -> None:
    columns = {"a": (1, "met"), "b": (1, "missed"), "c": (1, "dropped"), "d": (9, "open")}
    assert summarize_deadlines(columns) == {
        "jobs": 4,
        "met": 1,
        "missed": 1,
        "open": 1,
        "dropped": 1,
        "met_share": 0.3333,
        "met_share_of_admitted": 0.5,
    }


def rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_trace_run_with_drawn_deadlines(tmp_path) -> None:
    """One 8-GPU node, deadlines 1.1 × duration after submission: a takes the node for
    1,000 s; b cannot also finish by 1,110 and is dropped; c comes after a's end."""
    trace = itp(tmp_path, ["a,0,1000,8", "b,10,1000,8", "c,5000,100,8"])
    out = tmp_path / "o"
    base = ["simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet"]
    assert main([*base, "--config", REPO_CONFIG, "--deadlines", "1.1:1.1", "--out", str(out)]) == 0
    jobs = {row["name"]: row for row in rows(out / "jobs.csv")}
    assert list(next(iter(jobs.values())))[-2:] == ["deadline", "deadline_status"]
    assert {name: row["deadline"] for name, row in jobs.items()} == {
        "a": "1100",
        "b": "1110",
        "c": "5110",
    }
    assert {name: row["deadline_status"] for name, row in jobs.items()} == {
        "a": "met",
        "b": "dropped",
        "c": "met",
    }
    summary = json.loads((out / "summary.json").read_text())
    assert summary["deadlines"]["dropped"] == 1 and summary["deadlines"]["met"] == 2
    # The same run without deadlines writes what berth always wrote.
    plain = tmp_path / "plain"
    assert main([*base, "--out", str(plain)]) == 0
    assert tuple(rows(plain / "jobs.csv")[0]) == JOB_COLUMNS
    assert "deadlines" not in json.loads((plain / "summary.json").read_text())


def test_deadlines_need_a_trace(tmp_path, capsys) -> None:
    assert main(["simulate", "--deadlines", "0.5:1.5", "--out", str(tmp_path / "o")]) != 0
    assert "--deadlines: only with --trace" in capsys.readouterr().err


def test_a_malformed_deadline_annotation_is_refused(tmp_path, capsys) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
        "  annotations: {berth.io/deadline: soon}\n"
        "spec:\n  containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]\n"
    )
    assert main(["validate", str(workload)]) != 0
    err = capsys.readouterr()
    assert "metadata.annotations.berth.io/deadline" in err.out + err.err
    assert "'soon' is not a deadline" in err.out + err.err
