"""berth simulate with examples/policies/tiresias.yaml on a small ITP trace: a job past 3,250
GPU-seconds gives way to a new one at the moment it crosses, resumes where it stopped, and
every job completes; the same run again gives the same files."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.scenarios.itp_runs import POLICIES, gpu_nodes, simulate_itp

CONFIG = POLICIES / "tiresias.yaml"

TRACE = """job_id,submission_time,duration,num_gpu
a,0,10000,8
b,10,10000,8
c,2000,300,8
d,2100,500,4
"""


def simulate(tmp_path: Path, name: str) -> Path:
    return simulate_itp(tmp_path, TRACE, gpu_nodes(1), CONFIG, name)


def test_tiresias_on_a_small_itp_trace(tmp_path: Path) -> None:
    out = simulate(tmp_path, "out")
    jobs = {r["name"]: r for r in csv.DictReader((out / "jobs.csv").open())}
    assert {name: r["phase"] for name, r in jobs.items()} == dict.fromkeys("abcd", "Completed")
    # a (8 GPUs from t=1) reaches 3,250 GPU-seconds at t=408: b (level 0) takes its node.
    pods = {r["name"]: r for r in csv.DictReader((out / "pods.csv").open())}
    assert pods["a"]["phase"] == "Evicted"
    assert pods["a"]["reason"] == "preempted by default/b"
    assert float(pods["a"]["end_time"]) == 408
    # at t=2000 b is level 2 and c (new) takes its node; d waits for c (same level).
    assert pods["b"]["reason"] == "preempted by default/c"
    assert float(jobs["c"]["start_time"]) == 2001
    assert float(jobs["d"]["start_time"]) == float(jobs["c"]["end_time"]) + 1
    # a (level 1) resumes before b (level 2), for its 10,000 − 407 s left.
    assert float(jobs["a"]["end_time"]) - float(pods["a.1"]["start_time"]) == 10000 - 407
    assert float(pods["b.1"]["start_time"]) > float(jobs["a"]["end_time"])
    assert float(jobs["b"]["end_time"]) - float(pods["b.1"]["start_time"]) == 10000 - 1591
    assert jobs["a"]["preemptions"] == "1"
    again = simulate(tmp_path, "again")
    for name in ("jobs.csv", "pods.csv"):
        assert (again / name).read_bytes() == (out / name).read_bytes()
