"""examples/dra/gpus.yaml through ``berth simulate``: GPU pods placed by their DRA claims, a
shared claim's two pods on its one device, and a high-priority pod that preempts one holding
GPUs and gets its devices in the same session."""

from __future__ import annotations

import csv
from pathlib import Path

from berth.cli import main

EXAMPLE = ["--cluster", "examples/dra/gpus.yaml", "--config", "examples/dra/scheduler.yaml"]


def test_dra_example(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["simulate", *EXAMPLE, "--seed", "1", "--out", str(out)]) == 0
    rows = {r["name"]: r for r in csv.DictReader((out / "pods.csv").open())}
    assert all(r["phase"] in ("Succeeded", "Evicted") for r in rows.values())
    # the shared ResourceClaim: both pods on the node and device it was allocated
    assert rows["reader-a"]["node"] == rows["reader-b"]["node"]
    assert rows["reader-a"]["devices"] == rows["reader-b"]["devices"]
    assert len(rows["reader-a"]["devices"].split(",")) == 1
    # each pod holds as many devices as its template asks
    for name, row in rows.items():
        if name.startswith("train-"):
            assert len(row["devices"].split(",")) == (1, 2, 4)[int(name[6:]) % 3]
    # the urgent pod took the evicted pod's node and devices
    evicted = [r for r in rows.values() if r["phase"] == "Evicted"]
    assert len(evicted) == 1
    assert (rows["urgent"]["node"], rows["urgent"]["devices"]) == (
        evicted[0]["node"],
        evicted[0]["devices"],
    )
    # the same input gives the same outputs
    again = tmp_path / "again"
    assert main(["simulate", *EXAMPLE, "--seed", "1", "--out", str(again)]) == 0
    assert (again / "pods.csv").read_bytes() == (out / "pods.csv").read_bytes()
