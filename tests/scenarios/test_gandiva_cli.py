"""berth simulate with examples/policies/gandiva.yaml on a small ITP trace: a job that finds
no free node time-slices with a job of its size and runs once that one ends, every job
completes, and the same run again gives the same files."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.scenarios.itp_runs import POLICIES, gpu_nodes, simulate_itp

CONFIG = POLICIES / "gandiva.yaml"

TRACE = """job_id,submission_time,duration,num_gpu
a,0,1000,8
b,10,1000,8
c,20,500,8
d,30,200,1
"""


def simulate(tmp_path: Path, name: str) -> Path:
    return simulate_itp(tmp_path, TRACE, gpu_nodes(2), CONFIG, name)


def test_gandiva_on_a_small_itp_trace(tmp_path: Path) -> None:
    out = simulate(tmp_path, "out")
    jobs = {r["name"]: r for r in csv.DictReader((out / "jobs.csv").open())}
    assert {name: r["phase"] for name, r in jobs.items()} == dict.fromkeys("abcd", "Completed")
    ends = {name: float(r["end_time"]) for name, r in jobs.items()}
    starts = {name: float(r["start_time"]) for name, r in jobs.items()}
    # a takes n1 at t=0; b, c and d arrive within the 60 s slot and are placed at t=60: b
    # takes n2, c (no free node) joins b's set and waits its turn, d (1 GPU) has no set of
    # its size and no free node, so it waits; a's end frees n1 and d takes it (1 s start).
    assert starts == {"a": 1, "b": 61, "c": 61, "d": 1002}
    assert ends == {"a": 1001, "b": 1061, "c": 1561, "d": 1202}
    columns = list(csv.DictReader((out / "timeseries.csv").open()))
    assert max(float(r["time_sliced_jobs"]) for r in columns) == 1
    again = simulate(tmp_path, "again")
    for name in ("jobs.csv", "pods.csv", "timeseries.csv"):
        assert (again / name).read_bytes() == (out / name).read_bytes()
