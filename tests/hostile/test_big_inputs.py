"""Philly's job log is one JSON array of hundreds of MB when whole: it is read one job at a
time, so a file of tens of MB, valid or broken anywhere, is read or refused in time and memory
proportional to it (the 32 MB limit on manifests does not apply). The inputs are written here,
each a few tens of MB at most; the harness's deadline only guards against a hang."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.harness import berth, refused

JOB = {
    "status": "Pass",
    "vc": "ee9e8c",
    "jobid": "application_{i}",
    "attempts": [
        {
            "start_time": "2017-10-07 01:13:30",
            "end_time": "2017-10-07 06:53:12",
            "detail": [{"ip": "m412", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}],
        }
    ],
    "submitted_time": "2017-10-07 01:11:39",
    "user": "ce2f4c",
}
MB = 1_000_000


def jobs(megabytes: int) -> tuple[str, int]:
    """A job log of about ``megabytes`` MB, and how many jobs it holds."""
    one = json.dumps(JOB, indent=1)
    count = megabytes * MB // len(one)
    return "[\n" + ",\n".join(one.replace("{i}", str(i)) for i in range(count)) + "\n]\n", count


def valid(megabytes: int) -> tuple[str, str]:
    text, count = jobs(megabytes)
    return text, f"jobs {count:,}"


def one_huge_job(megabytes: int) -> tuple[str, str]:
    attempt = JOB["attempts"][0]
    many = {**JOB, "attempts": [attempt] * (megabytes * MB // len(json.dumps(attempt)))}
    return json.dumps([many]), "jobs 1"


def broken_at_the_start(megabytes: int) -> tuple[str, str]:
    text, _ = jobs(megabytes)
    return '[\n{"jobid": oops},\n' + text[2:], ":2: invalid JSON: Expecting value"


def cut_short(megabytes: int) -> tuple[str, str]:
    text, _ = jobs(megabytes)
    return text[: len(text) - 100], "the file ends inside this object (truncated?)"


def nested(megabytes: int) -> tuple[str, str]:
    return "[" * (megabytes * MB), ":1: invalid JSON: nested too deeply"


def not_json(megabytes: int) -> tuple[str, str]:
    return "[" + "x" * (megabytes * MB), ":1: invalid JSON: Expecting value"


CASES: list[tuple[Callable[[int], tuple[str, str]], int]] = [
    (valid, 30),
    (one_huge_job, 8),
    (broken_at_the_start, 30),
    (cut_short, 30),
    (nested, 10),
    (not_json, 30),
]


@pytest.mark.parametrize(("make", "megabytes"), CASES, ids=[make.__name__ for make, _ in CASES])
def test_a_big_philly_job_log_is_read_or_refused(tmp_path: Path, make, megabytes) -> None:
    text, expected = make(megabytes)
    path = tmp_path / "cluster_job_log"
    path.write_text(text)
    outcome = berth("trace", "info", path, "--format", "philly", deadline=120)
    # The table's rows as "name value": "jobs 1,234".
    table = " ".join(re.sub(r"[│\s]+", " ", outcome.text).split())
    assert expected in table, outcome
    assert refused(outcome) == (expected.startswith(":") or "ends inside" in expected), outcome
