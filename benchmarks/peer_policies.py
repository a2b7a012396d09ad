"""berth's deep-learning scheduling policies against the ElasticFlow artifact's, one policy at
a time, on one ITP trace: jobs completed, mean and p95 JCT, mean queueing delay, waiting,
preemptions, wall time and, for deadline-aware policies, deadlines met, missed and dropped.

| --policy | berth | the artifact's ``--schedule`` |
|---|---|---|
| tiresias | examples/policies/tiresias.yaml | dlas-gpu |
| edf | examples/policies/edf.yaml, ``--deadlines 0.5:1.5`` | edf |
| elasticflow | examples/policies/elasticflow.yaml, ``--deadlines 0.5:1.5`` | ef-accessctrl |
| themis | examples/policies/themis.yaml | themis |
| gandiva | examples/policies/gandiva.yaml | gandiva (``--scheme=gandiva``) |

Both sides run as ``peer_tiresias.py`` runs them (the peer with ``--scheme=elastic
--simulation=True --scheduling_slot=60 --gpu_type=A100`` on one switch of 8-GPU nodes, berth
on the nodes ``--cluster-from-trace`` picks for ``--cluster``'s whole trace, and the peer on as
many: 88 for cluster04, 25 for cluster03, 16 for cluster06; ``--nodes`` sets the peer's), or
their outputs are given (``--berth-out``, ``--peer-log``). The peer's trace carries the
deadlines its generator drew (submission + U(0.5, 1.5) × duration from Python's unseeded
generator); berth draws its own from the same distribution with its seed, so the two sides'
deadlines agree in distribution, not job by job.

Deadlines, for the jobs that have one:

- berth: jobs.csv's ``deadline_status`` (met, missed, open, dropped);
- the artifact: its ``job.csv`` lists the jobs that ran to the end; met when ``end_time`` <=
  ``ddl`` (for ef-accessctrl the artifact judges by the end before slot rounding, so a job
  it counts as met may show up to one slot later here), missed otherwise; dropped: the trace's
  jobs that never appear in it.

``--days D`` keeps the jobs submitted in D days from day ``--start`` (by default the day of
the trace's first job: day 10 for cluster03, 0 for cluster04 and cluster06), on both sides
(the same rows of both files), and runs them to completion on the cluster sized for the whole
trace: the artifact's ``edf`` slows down as its backlog of late jobs grows, and
took over 11 minutes for cluster04's first 14 days on this machine.

    .venv/bin/python benchmarks/peer_policies.py benchmarks/peers/ElasticFlow --policy edf
    .venv/bin/python benchmarks/peer_policies.py --policy tiresias --cluster cluster06

It prints the cluster, the table and the 1-minute load average before and after (``--json``
keeps them too).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peer_elasticflow as peer  # noqa: E402
import peer_tiresias as base  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DRAW = ("--deadlines", "0.5:1.5")
#: A start time the artifact leaves at sys.maxsize when it never records one.
UNRECORDED = 1e15
#: policy: (berth's configuration, berth's extra options, the artifact's schedule)
POLICIES = {
    "tiresias": ("tiresias.yaml", (), "dlas-gpu"),
    "edf": ("edf.yaml", DRAW, "edf"),
    "elasticflow": ("elasticflow.yaml", DRAW, "ef-accessctrl"),
    "themis": ("themis.yaml", (), "themis"),
    "gandiva": ("gandiva.yaml", (), "gandiva"),
}
#: The artifact's placement scheme for a schedule, where not ``elastic`` (as its run_fig*.sh).
SCHEMES = {"gandiva": "gandiva"}


def window(path: Path, start: float, days: float, dest: Path) -> Path:
    """The rows of the trace submitted from day ``start`` for ``days`` days, in a copy at
    ``dest`` (times unchanged)."""
    with path.open(newline="") as source, dest.open("w", newline="") as out:
        reader = csv.DictReader(source)
        writer = csv.DictWriter(out, reader.fieldnames or [], lineterminator="\n")
        writer.writeheader()
        for row in reader:
            if 0 <= float(row["submission_time"]) / 86400 - start < days:
                writer.writerow(row)
    return dest


def first_day(path: Path) -> int:
    """The day (from the trace's time 0) its first job is submitted on: cluster03's first job
    comes on day 10.5, cluster04's and cluster06's on day 0."""
    with path.open(newline="") as source:
        return int(min(float(row["submission_time"]) for row in csv.DictReader(source)) // 86400)


def sized_cluster(trace: Path, dest: Path) -> int:
    """Write to ``dest`` the node manifests of the cluster ``--cluster-from-trace`` picks for
    the whole ``trace``, so that a run on its first days keeps the whole trace's cluster, and
    return its node count: the peer's cluster spec gets as many 8-GPU nodes."""
    from berth.sim.cluster_sizing import SizingRule, size_cluster
    from berth.traces import TraceOptions, detect_format, iter_jobs
    from berth.traces.manifests import node_manifest
    from berth.traces.writer import write_manifests

    jobs = iter_jobs(str(trace), detect_format(str(trace)), TraceOptions(), None)
    nodes, _ = size_cluster([p for job in jobs for p in job.pods], SizingRule())
    write_manifests(dest, (node_manifest(node) for node in nodes))
    return len(nodes)


def run_berth(trace: Path, cluster: Path, out: Path, config: Path, extra) -> float:
    """``berth simulate`` on ``cluster``, timed."""
    command = [str(REPO / ".venv" / "bin" / "berth"), "simulate", "--trace", str(trace)]
    command += ["--cluster", str(cluster)]
    command += ["--config", str(config), "--quiet", "--force", *extra, "--out", str(out)]
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=REPO)
    return time.perf_counter() - started


def berth_deadlines(out: Path) -> dict[str, int]:
    counts = {"met": 0, "missed": 0, "open": 0, "dropped": 0}
    with (out / "jobs.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            status = row.get("deadline_status")
            if status:
                counts[status] += 1
    return counts


def peer_deadlines(logs: Path, jobs: int) -> dict[str, int]:
    met = missed = 0
    with (logs / "job.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if float(row["end_time"]) <= float(row["ddl"]):
                met += 1
            else:
                missed += 1
    return {"met": met, "missed": missed, "open": 0, "dropped": jobs - met - missed}


ROWS = [
    ("jobs completed", "jobs", "{:,}"),
    ("mean JCT (h)", "mean_jct_s", "{:.3f}"),
    ("p95 JCT (h)", "p95_jct_s", "{:.3f}"),
    ("mean queueing, to first start (s)", "mean_queueing_s", "{:,.0f}"),
    ("mean waiting, every second not running (s)", "mean_waiting_s", "{:,.0f}"),
    ("jobs preempted", "jobs_preempted", "{:,}"),
    ("preemptions", "preemptions", "{:,}"),
    ("deadlines met", "met", "{:,}"),
    ("deadlines missed", "missed", "{:,}"),
    ("jobs dropped", "dropped", "{:,}"),
    ("deadlines met, share of all jobs", "met_share", "{:.3f}"),
    ("wall time (s)", "wall_s", "{:,.0f}"),
]


def table(policy: str, schedule: str, ours: dict, theirs: dict) -> str:
    lines = [
        f"| measure | berth {policy} | artifact {schedule} | berth ÷ artifact |",
        "|---|---:|---:|---:|",
    ]
    for label, key, form in ROWS:
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None:
            if a is not None or b is not None:
                shown = [form.format(v) if v is not None else "—" for v in (a, b)]
                lines.append(f"| {label} | {shown[0]} | {shown[1]} | |")
            continue
        if "(h)" in label:
            a, b = a / 3600, b / 3600
        ratio = f"{a / b:.3f}" if b else "—"
        lines.append(f"| {label} | {form.format(a)} | {form.format(b)} | {ratio} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifact", nargs="?", type=Path, default=peer.DEFAULT_ARTIFACT)
    parser.add_argument("--policy", choices=sorted(POLICIES), required=True)
    parser.add_argument("--cluster", default="cluster04", help="ITP cluster (default cluster04)")
    parser.add_argument(
        "--nodes",
        type=int,
        help="the peer's 8-GPU nodes (default: as many as --cluster-from-trace picks for the "
        "whole trace: 88 for cluster04, 25 for cluster03, 16 for cluster06)",
    )
    parser.add_argument("--days", type=float, help="only the jobs of D days from --start")
    parser.add_argument(
        "--start",
        type=float,
        help="with --days: the window's first day (default: the day of the trace's first job)",
    )
    parser.add_argument("--seed", type=int, default=0, help="berth's seed (its deadline draw)")
    parser.add_argument("--berth-out", type=Path, help="an existing berth simulate folder")
    parser.add_argument("--peer-log", type=Path, help="an existing folder with the peer's job.csv")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--work", type=Path, help="keep both sides' outputs in this folder")
    args = parser.parse_args()
    config, extra, schedule = POLICIES[args.policy]
    extra = (*extra, "--seed", str(args.seed))
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="berth-policies-") as folder:
        work = Path(folder) if args.work is None else args.work
        work.mkdir(parents=True, exist_ok=True)
        namespace = argparse.Namespace(cluster=args.cluster, peer_trace=None, berth_trace=None)
        peer_trace, berth_trace, _ = peer.traces(namespace, args.artifact.resolve(), work)
        cluster = work / "cluster.yaml"
        nodes = sized_cluster(berth_trace, cluster)
        if args.nodes is not None:
            nodes = args.nodes
        start = first_day(berth_trace) if args.start is None else args.start
        if args.days is not None:
            peer_trace = window(peer_trace, start, args.days, work / f"peer-{args.days:g}d.csv")
            berth_trace = window(berth_trace, start, args.days, work / f"berth-{args.days:g}d.csv")
        jobs, _ = peer.compare_traces(berth_trace, peer_trace)
        berth_seconds = peer_seconds = None
        berth_out = args.berth_out
        if berth_out is None:
            berth_out = work / "berth"
            config_path = REPO / "examples" / "policies" / config
            berth_seconds = run_berth(berth_trace, cluster, berth_out, config_path, extra)
        logs = args.peer_log
        if logs is None:
            logs = work / "peer"
            artifact = args.artifact.resolve()
            scheme = SCHEMES.get(args.policy, "elastic")
            peer_seconds = base.run_peer(artifact, peer_trace, nodes, logs, schedule, scheme)
        ours = base.read_berth(berth_out, berth_seconds)
        theirs = base.read_peer(logs, peer_seconds)
        if theirs["mean_queueing_s"] > UNRECORDED:
            # The artifact's themis never sets a job's start, pending time or preemptions.
            for key in ("mean_queueing_s", "mean_waiting_s", "jobs_preempted", "preemptions"):
                theirs[key] = None
        if POLICIES[args.policy][1]:
            ours.update(berth_deadlines(berth_out))
            theirs.update(peer_deadlines(logs, jobs))
            for side in (ours, theirs):
                side["met_share"] = side["met"] / jobs
    loads.append(os.getloadavg()[0])
    days = "whole trace"
    if args.days is not None:
        days = f"jobs submitted on days {start:.1f} to {start + args.days:.1f}"
    print(f"ITP {args.cluster}, {days}: {jobs:,} jobs on {nodes} nodes × 8 GPUs")
    print(table(args.policy, schedule, ours, theirs))
    print(f"load average (1 min): {loads[0]:.1f} before, {loads[1]:.1f} after")
    if args.json:
        dump = {"berth": ours, "peer": theirs, "jobs": jobs, "nodes": nodes, "load": loads}
        args.json.write_text(json.dumps(dump, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
