"""berth's ``tiresias`` against the ElasticFlow artifact's ``dlas-gpu`` (its Tiresias) on one ITP
trace: mean and p95 JCT, mean queueing delay, total waiting, jobs preempted and preemptions.

Each side runs once (or its outputs are given: ``--berth-out`` a ``berth simulate`` folder,
``--peer-log`` the folder holding the artifact's ``job.csv``). The peer runs as
``peer_elasticflow.py`` runs it (``--scheme=elastic --simulation=True --scheduling_slot=60
--gpu_type=A100 --print``) on one switch of as many 8-GPU nodes as berth's
``--cluster-from-trace`` picks (88 for cluster04); berth runs ``berth simulate --trace ...
--cluster-from-trace --config examples/policies/tiresias.yaml``.

    .venv/bin/python benchmarks/peer_tiresias.py benchmarks/peers/ElasticFlow --cluster cluster04

Measures, for the jobs that completed:

- JCT: end − submission;
- queueing: first start − submission (the artifact's ``start_time`` is its first start);
- waiting: every second not running between submission and end (the artifact's
  ``pending_time`` accumulates all of them; berth's is JCT minus the seconds its runs took);
- jobs preempted: jobs evicted at least once; preemptions: evictions of a whole job (berth
  evicts a job's pods together, so a job's evictions at one instant count once).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peer_elasticflow as peer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "examples" / "policies" / "tiresias.yaml"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def outcome(
    jct: list[float],
    queueing: list[float],
    waiting: list[float],
    preempted: int,
    preemptions: int,
    seconds: float | None,
) -> dict[str, float | int | None]:
    return {
        "jobs": len(jct),
        "mean_jct_s": statistics.fmean(jct),
        "p95_jct_s": p95(jct),
        "mean_queueing_s": statistics.fmean(queueing),
        "mean_waiting_s": statistics.fmean(waiting),
        "jobs_preempted": preempted,
        "preemptions": preemptions,
        "wall_s": seconds,
    }


def read_berth(out: Path, seconds: float | None = None) -> dict:
    runs: dict[str, float] = defaultdict(float)
    evicted: dict[str, set[str]] = defaultdict(set)
    with (out / "pods.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["start_time"] and row["end_time"]:
                runs[row["job"]] += float(row["end_time"]) - float(row["start_time"])
            if row["phase"] == "Evicted" and row["reason"].startswith("preempted by"):
                evicted[row["job"]].add(row["end_time"])
    jct, queueing, waiting = [], [], []
    with (out / "jobs.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["phase"] != "Completed":
                continue
            submit, start, end = (float(row[k]) for k in ("submit_time", "start_time", "end_time"))
            jct.append(end - submit)
            queueing.append(start - submit)
            waiting.append(end - submit - runs[row["name"]] / max(int(row["tasks"]), 1))
    preemptions = sum(len(times) for times in evicted.values())
    return outcome(jct, queueing, waiting, len(evicted), preemptions, seconds)


def read_peer(logs: Path, seconds: float | None = None) -> dict:
    jct, queueing, waiting, preempted, preemptions = [], [], [], 0, 0
    with (logs / "job.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            jct.append(float(row["JCT"]))
            queueing.append(float(row["start_time"]) - float(row["submit_time"]))
            waiting.append(float(row["pending_time"]))
            count = int(float(row.get("preempt") or 0))
            preempted += count > 0
            preemptions += count
    return outcome(jct, queueing, waiting, preempted, preemptions, seconds)


def run_berth(trace: Path, out: Path, config: Path, extra: tuple[str, ...] = ()) -> float:
    command = [str(REPO / ".venv" / "bin" / "berth"), "simulate", "--trace", str(trace)]
    command += ["--cluster-from-trace", "--config", str(config), "--quiet", "--force", *extra]
    started = time.perf_counter()
    subprocess.run([*command, "--out", str(out)], check=True, cwd=REPO)
    return time.perf_counter() - started


def run_peer(
    artifact: Path,
    trace: Path,
    nodes: int,
    logs: Path,
    schedule: str = "dlas-gpu",
    scheme: str = "elastic",
) -> float:
    scheduler = peer.find_scheduler(artifact)
    python = artifact / ".peer-venv" / "bin" / "python"
    if not peer.peer_ready(python, scheduler):
        python = peer.set_up_peer(artifact / ".peer-venv", scheduler)
    spec = logs / f"n{nodes}g8.csv"
    logs.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
        f"1,{nodes},8,64,256\n"
    )
    command = [str(python), "scheduler.py", f"--cluster_spec={spec}", "--print"]
    command += [f"--scheme={scheme}", f"--trace_file={trace}", f"--schedule={schedule}"]
    command += [f"--log_path={logs}", "--simulation=True", "--scheduling_slot=60"]
    command += ["--gpu_type=A100"]
    started = time.perf_counter()
    with (logs / "stdout.txt").open("wb") as out:
        subprocess.run(command, cwd=scheduler, stdout=out, check=True)
    return time.perf_counter() - started


def table(berth: dict, theirs: dict) -> str:
    rows = [
        ("jobs completed", "jobs", "{:,}"),
        ("mean JCT (h)", "mean_jct_s", "{:.3f}"),
        ("p95 JCT (h)", "p95_jct_s", "{:.3f}"),
        ("mean queueing (s)", "mean_queueing_s", "{:,.0f}"),
        ("mean waiting, all of it (s)", "mean_waiting_s", "{:,.0f}"),
        ("jobs preempted", "jobs_preempted", "{:,}"),
        ("preemptions", "preemptions", "{:,}"),
        ("wall time (s)", "wall_s", "{:,.0f}"),
    ]
    lines = [
        "| measure | berth tiresias | artifact dlas-gpu | berth ÷ artifact |",
        "|---|---:|---:|---:|",
    ]
    for label, key, form in rows:
        ours, peers = berth[key], theirs[key]
        if ours is None or peers is None:
            lines.append(f"| {label} | {ours or '—'} | {peers or '—'} | |")
            continue
        if "(h)" in label:
            ours, peers = ours / 3600, peers / 3600
        ratio = f"{ours / peers:.3f}" if peers else "—"
        lines.append(f"| {label} | {form.format(ours)} | {form.format(peers)} | {ratio} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifact", nargs="?", type=Path, default=peer.DEFAULT_ARTIFACT)
    parser.add_argument("--cluster", default="cluster04")
    parser.add_argument("--nodes", type=int, default=88, help="8-GPU nodes (cluster04: 88)")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--berth-out", type=Path, help="an existing berth simulate folder")
    parser.add_argument("--peer-log", type=Path, help="an existing folder with the peer's job.csv")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    try:
        return measure(args)
    except peer.Failure as problem:
        print(problem, file=sys.stderr)
        return 2


def measure(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="berth-tiresias-") as folder:
        work = Path(folder)
        berth_seconds = peer_seconds = None
        if args.berth_out is None or args.peer_log is None:
            peer_trace, berth_trace, _ = peer.traces(
                argparse.Namespace(cluster=args.cluster, peer_trace=None, berth_trace=None),
                args.artifact.resolve(),
                work,
            )
            peer.compare_traces(berth_trace, peer_trace)
        berth_out = args.berth_out
        if berth_out is None:
            berth_out = work / "berth"
            berth_seconds = run_berth(berth_trace, berth_out, args.config)
        logs = args.peer_log
        if logs is None:
            logs = work / "peer"
            peer_seconds = run_peer(args.artifact.resolve(), peer_trace, args.nodes, logs)
        ours, theirs = read_berth(berth_out, berth_seconds), read_peer(logs, peer_seconds)
    print(table(ours, theirs))
    if args.json:
        args.json.write_text(json.dumps({"berth": ours, "peer": theirs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
