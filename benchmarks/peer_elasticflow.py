"""berth against the simulator of the ElasticFlow artifact (ASPLOS'23), whole process against
whole process, on one ITP trace and one cluster, in one run.

The artifact's simulator (``ElasticFlow/scheduler/scheduler.py``, adapted from Tiresias) is run
the way its ``run_fig8b.sh`` runs it on the ITP traces (``--simulation=True
--scheduling_slot=60 --gpu_type=A100 --print``, placement ``elastic``), once with ``--schedule
fifo`` and once with ``--schedule dlas-gpu`` (its Tiresias), on a cluster spec of the size
``berth simulate --cluster-from-trace`` picks for the trace (88 nodes of 8 GPUs for cluster04).
berth runs ``berth simulate --trace <trace> --cluster-from-trace --quiet`` with its default
configuration: berth has no FIFO and no Tiresias policy, so the default (jobs in arrival order;
one that does not fit is passed over, not waited for; no preemption) is compared with both.

The runs alternate (berth, peer FIFO, peer Tiresias, berth, ...), each ``--repeats`` times. Each
is timed with ``time.perf_counter`` around the whole child process; its peak RSS comes from
``os.wait4``. Each run's simulated outcome (jobs completed, mean JCT, mean queueing delay) is
read from berth's ``jobs.csv`` and the peer's ``job.csv`` so that a reader can see that the runs
simulated the same jobs. A peer run that exits with an error or completes no job is shown, but
given no ratio.

Both traces come from the artifact's ``elasticflow-traces`` submodule: berth reads the raw ITP
trace (``job_id,submission_time,duration,num_gpu``), the peer the ElasticFlow form of the same
jobs (with a model, iteration count and deadline drawn per job), which its simulator needs; the
script checks that the four shared columns agree row by row.

    git clone --recurse-submodules https://github.com/gudiandian/ElasticFlow /tmp/elasticflow
    .venv/bin/python benchmarks/peer_elasticflow.py /tmp/elasticflow --repeats 3

The first run creates the peer's Python environment (``<artifact>/.peer-venv``: Python 3.8 if
one is found, as its README asks, and its ``requirements.txt`` from PyPI) and builds its gRPC
stubs as its Makefile does; ``--peer-python`` uses an environment of your own instead.
"""

from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ARTIFACT = REPO / "benchmarks" / "peers" / "ElasticFlow"
SHARED_COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")
#: The peer's schedules measured here, and the placement each is run with (as run_fig8b.sh).
PEER_SCHEDULES = {"fifo": "elastic", "dlas-gpu": "elastic"}
PEER_LABELS = {"fifo": "ElasticFlow sim, FIFO", "dlas-gpu": "ElasticFlow sim, Tiresias (dlas-gpu)"}

GET_ARTIFACT = """\
The ElasticFlow artifact was not found at {path}.
Get it (with its traces submodule) and pass its folder:

    git clone --recurse-submodules https://github.com/gudiandian/ElasticFlow {path}

or, in a clone made without submodules:

    git -C {path} submodule update --init

The folder must hold ElasticFlow/scheduler/scheduler.py and elasticflow-traces/data/ (or pass
--peer-trace and --berth-trace)."""


class Failure(Exception):
    """A problem the user must fix before anything can be measured."""


@dataclass
class Run:
    name: str
    seconds: float
    peak_rss_mib: float
    exit_code: int
    jobs_completed: int = 0
    mean_jct: float | None = None
    mean_queueing: float | None = None
    mean_overrun: float | None = None
    preemptions: int | None = None
    note: str = ""


@dataclass
class Setup:
    scheduler: Path
    peer_python: Path
    berth: Path
    berth_trace: Path
    peer_trace: Path
    trace_note: str
    jobs: int
    durations: dict[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- the artifact


def find_scheduler(artifact: Path) -> Path:
    for candidate in (
        artifact / "ElasticFlow" / "scheduler",
        artifact / "scheduler",
        artifact,
    ):
        if (candidate / "scheduler.py").is_file() and (candidate / "throughputs_A100").is_dir():
            return candidate
    raise Failure(GET_ARTIFACT.format(path=artifact))


def artifact_commit(artifact: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(artifact), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return out.stdout.strip()


def member(archive: Path, name: str, dest: Path) -> Path | None:
    """Extract the member called ``name`` (at any depth) of a .tar.gz into ``dest``."""
    if not archive.is_file():
        return None
    with tarfile.open(archive) as tar:
        for info in tar.getmembers():
            if info.isfile() and Path(info.name).name == name:
                source = tar.extractfile(info)
                if source is None:
                    return None
                dest.write_bytes(source.read())
                return dest
    return None


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def traces(args: argparse.Namespace, artifact: Path, work: Path) -> tuple[Path, Path, str]:
    """The peer's trace and berth's trace of the same cluster, and where each came from."""
    name = f"{args.cluster}.csv"
    data = artifact / "elasticflow-traces" / "data"
    peer = args.peer_trace
    if peer is None:
        shipped = artifact / "ElasticFlow" / "traces_for_ElasticFlow" / name
        peer = shipped if shipped.is_file() else None
    peer_note = f"{peer}" if peer is not None else ""
    if peer is None:
        peer = member(data / "elasticflow-traces.tar.gz", name, work / f"peer-{name}")
        peer_note = f"{name} of elasticflow-traces/data/elasticflow-traces.tar.gz"
    if peer is None:
        raise Failure(
            f"No ElasticFlow-form trace {name}: the artifact's elasticflow-traces submodule is "
            f"empty or missing.\n\n    git -C {artifact} submodule update --init\n\n"
            "or pass --peer-trace (a CSV with job_id,submission_time,num_iteration,model_name,"
            "deadline,batch_size,num_gpu,duration, as in elasticflow-traces.tar.gz)."
        )
    berth = args.berth_trace
    note = ""
    if berth is None:
        berth = member(data / "raw-traces.tar.gz", name, work / f"berth-{name}")
        note = f"{name} of the artifact's elasticflow-traces/data/raw-traces.tar.gz"
    if berth is None:
        # The ElasticFlow form carries the raw columns: write them out for berth.
        berth = work / f"berth-{name}"
        with berth.open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(SHARED_COLUMNS)
            for row in read_rows(peer):
                writer.writerow([row[column] for column in SHARED_COLUMNS])
        note = "raw columns written out of the peer's trace (no raw-traces.tar.gz found)"
    elif args.berth_trace is not None:
        note = f"given with --berth-trace ({berth})"
    return Path(peer), Path(berth), f"berth's: {note}; the peer's: {peer_note}"


def compare_traces(berth: Path, peer: Path) -> tuple[int, dict[str, float]]:
    """Check that both traces hold the same jobs; return the job count and their durations."""
    ours, theirs = read_rows(berth), read_rows(peer)
    if len(ours) != len(theirs):
        raise Failure(f"the traces differ: {len(ours)} jobs for berth, {len(theirs)} for the peer")
    for number, (a, b) in enumerate(zip(ours, theirs, strict=True), start=2):
        for column in SHARED_COLUMNS:
            if a[column] != b[column]:
                raise Failure(
                    f"the traces differ at line {number}, column {column}: "
                    f"{a[column]!r} (berth) against {b[column]!r} (peer)"
                )
    return len(ours), {row["job_id"]: float(row["duration"]) for row in ours}


# --------------------------------------------------------------------------- the peer's env


def base_python() -> str:
    """Python 3.8, as the artifact's README asks, if this machine has one that runs."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python")))
    candidates += [found for found in [shutil.which("python3.8")] if found]
    for candidate in candidates:
        works = subprocess.run([candidate, "--version"], capture_output=True)
        if works.returncode == 0:
            return candidate
    return sys.executable


def peer_ready(python: Path, scheduler: Path) -> bool:
    if not python.exists():
        return False
    # What scheduler.py imports beyond the standard library.
    probe = "import cvxpy, grpc; from runtime.rpc import scheduler_client, scheduler_server"
    done = subprocess.run([str(python), "-c", probe], cwd=scheduler, capture_output=True)
    return done.returncode == 0


def set_up_peer(venv: Path, scheduler: Path) -> Path:
    """A venv with the artifact's requirements.txt and its gRPC stubs built (not timed)."""
    python = venv / "bin" / "python"
    requirements = scheduler.parent / "requirements.txt"
    if not python.exists():
        base = base_python()
        say(f"creating the peer's environment {venv} with {base}")
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    say(f"installing {requirements} into it")
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-r", str(requirements)], check=True)
    say("building the peer's gRPC stubs (as its Makefile does)")
    for proto in sorted((scheduler / "runtime" / "proto").glob("*.proto")):
        subprocess.run(
            [str(python), "-m", "grpc_tools.protoc", "-Iruntime/proto"]
            + ["--python_out=runtime/rpc_stubs", "--grpc_python_out=runtime/rpc_stubs"]
            + [f"runtime/proto/{proto.name}"],
            cwd=scheduler,
            check=True,
        )
    return python


def versions(python: Path) -> str:
    script = (
        "import platform, importlib.metadata as m\n"
        "names = ['numpy', 'cvxpy', 'grpcio', 'protobuf']\n"
        "print('Python ' + platform.python_version() + ', ' + ', '.join("
        "n + ' ' + m.version(n) for n in names))"
    )
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


# --------------------------------------------------------------------------- running


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def timed(command: list[str], cwd: Path, stdout: Path, stderr: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit code of one whole child process."""
    with stdout.open("wb") as out, stderr.open("wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux.
    return seconds, usage.ru_maxrss / 1024, child.returncode


def tail(path: Path, lines: int = 3) -> list[str]:
    with path.open(errors="replace") as handle:
        return [line.rstrip() for line in deque(handle, maxlen=lines) if line.strip()]


def mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def run_berth(setup: Setup, work: Path, number: int) -> tuple[Run, int | None]:
    out = work / f"berth-{number}"
    command = [str(setup.berth), "simulate", "--trace", str(setup.berth_trace)]
    command += ["--cluster-from-trace", "--quiet", "--out", str(out)]
    seconds, rss, code = timed(command, REPO, work / "berth.stdout", work / "berth.stderr")
    run = Run("berth", seconds, rss, code)
    nodes = None
    if code != 0:
        run.note = " / ".join(tail(work / "berth.stderr"))
        return run, None
    summary = json.loads((out / "summary.json").read_text())
    for line in summary.get("provenance", {}).get("how_inputs_were_read", []):
        sized = re.search(r"(\d[\d,]*) (\d+)-GPU nodes", line)
        if sized and sized.group(2) == "8":
            nodes = int(sized.group(1).replace(",", ""))
    jct, queueing, overrun = [], [], []
    for row in read_rows(out / "jobs.csv"):
        if row["phase"] != "Completed" or not row["end_time"]:
            continue
        submit, start, end = (float(row[key]) for key in ("submit_time", "start_time", "end_time"))
        jct.append(end - submit)
        queueing.append(start - submit)
        if row["name"] in setup.durations:
            overrun.append(end - start - setup.durations[row["name"]])
    run.jobs_completed = len(jct)
    run.mean_jct, run.mean_queueing, run.mean_overrun = mean(jct), mean(queueing), mean(overrun)
    run.preemptions = summary.get("evictions", {}).get("preempted")
    shutil.rmtree(out)
    return run, nodes


def run_peer(setup: Setup, schedule: str, nodes: int, work: Path, args) -> Run:
    spec = work / f"n{nodes}g8.csv"
    # One switch of `nodes` nodes, 8 GPUs, 64 cores and 256 GB each: the artifact's n*g8 specs.
    spec.write_text(
        "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
        f"1,{nodes},8,64,256\n"
    )
    logs = work / f"peer-{schedule}"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    command = [str(setup.peer_python), "scheduler.py", f"--cluster_spec={spec}"]
    if not args.peer_no_print:
        command.append("--print")
    command += [
        f"--scheme={PEER_SCHEDULES[schedule]}",
        f"--trace_file={setup.peer_trace}",
        f"--schedule={schedule}",
        f"--log_path={logs}",
        "--simulation=True",
        "--scheduling_slot=60",
        "--gpu_type=A100",
    ]
    stdout, stderr = work / "peer.stdout", work / "peer.stderr"
    seconds, rss, code = timed(command, setup.scheduler, stdout, stderr)
    run = Run(PEER_LABELS[schedule], seconds, rss, code)
    jct, queueing, overrun, preempted = [], [], [], 0
    job_log = logs / "job.csv"
    if job_log.is_file():
        for row in read_rows(job_log):
            jct.append(float(row["JCT"]))
            queueing.append(float(row["pending_time"]))
            preempted += int(float(row.get("preempt") or 0))
            if row["job_id"] in setup.durations:
                executed = float(row["end_time"]) - float(row["start_time"])
                overrun.append(executed - setup.durations[row["job_id"]])
    run.jobs_completed = len(jct)
    run.mean_jct, run.mean_queueing, run.mean_overrun = mean(jct), mean(queueing), mean(overrun)
    run.preemptions = preempted
    if code != 0:
        last = tail(stderr, 1)
        run.note = f"exit {code}: {last[0] if last else 'no message'}"
    said = [line for line in tail(stdout, 6) if "cluster is not large enough" in line]
    if said:
        run.note = (run.note + "; " if run.note else "") + f"it said: {said[0].strip()}"
    stdout.unlink(missing_ok=True)
    shutil.rmtree(logs)
    return run


# --------------------------------------------------------------------------- report


def seconds_text(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def report(
    setup: Setup, runs: dict[str, list[Run]], nodes: int, args, loads: list, commit: str
) -> str:
    berth_median = statistics.median(run.seconds for run in runs["berth"])
    text = io.StringIO()
    write = text.write
    write(
        f"ITP {args.cluster}: {setup.jobs:,} jobs on {nodes} nodes × 8 GPUs; "
        f"{args.repeats} run{'s' if args.repeats > 1 else ''} of each, alternating; "
        "medians.\n\n"
    )
    write(
        "| run | whole process (median) | runs | peak RSS | peer ÷ berth | exit | "
        "jobs completed | mean JCT (s) | mean queueing (s) | mean JCT − queueing − duration (s) | "
        "preemptions |\n"
    )
    write("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    notes = []
    for name, group in runs.items():
        median = statistics.median(run.seconds for run in group)
        last = group[-1]
        valid = all(run.exit_code == 0 and run.jobs_completed > 0 for run in group)
        if name == "berth":
            ratio = "1×"
        elif valid:
            ratio = f"{median / berth_median:.1f}×"
        else:
            ratio = "n/a"
            notes.append(f"{name}: not a completed simulation ({last.note or 'no job ran'})")
        spread = ", ".join(f"{run.seconds:.1f}" for run in group)
        codes = ",".join(sorted({str(run.exit_code) for run in group}))
        write(
            f"| {name} | {median:.1f} s | {spread} | "
            f"{max(run.peak_rss_mib for run in group):.0f} MiB | {ratio} | {codes} | "
            f"{last.jobs_completed:,} of {setup.jobs:,} | {seconds_text(last.mean_jct)} | "
            f"{seconds_text(last.mean_queueing)} | {seconds_text(last.mean_overrun)} | "
            f"{'—' if last.preemptions is None else f'{last.preemptions:,}'} |\n"
        )
        if valid and last.jobs_completed < setup.jobs:
            notes.append(f"{name}: completed {last.jobs_completed:,} of {setup.jobs:,} jobs")
        differing = {(run.jobs_completed, run.mean_jct, run.mean_queueing) for run in group}
        if len(differing) > 1:
            notes.append(f"{name}: the simulated outcome differed between its runs")
    write("\n")
    for note in notes:
        write(f"- {note}\n")
    before, after = loads[0], loads[-1]
    write(
        f"- machine: {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()} for berth; load average (1, 5, 15 min) "
        f"{before[0]:.2f}, {before[1]:.2f}, {before[2]:.2f} before, "
        f"{after[0]:.2f}, {after[1]:.2f}, {after[2]:.2f} after\n"
    )
    write(f"- peer: ElasticFlow artifact {commit}; {versions(setup.peer_python)}\n")
    write(f"- traces: {setup.trace_note}; the same jobs (id, submission, duration and GPUs ")
    write("agree row by row)\n")
    write(
        "- berth runs its default configuration: it has no FIFO and no Tiresias policy, so the "
        "default is compared with both\n"
    )
    return text.getvalue()


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] + " " + __doc__.splitlines()[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "artifact",
        nargs="?",
        type=Path,
        default=DEFAULT_ARTIFACT,
        help=f"the ElasticFlow artifact's folder (default {DEFAULT_ARTIFACT.relative_to(REPO)})",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--cluster", default="cluster04", help="ITP cluster (default cluster04)")
    parser.add_argument("--nodes", type=int, help="8-GPU nodes (default: berth's sizing)")
    parser.add_argument(
        "--schedules",
        default="fifo,dlas-gpu",
        help="the peer's schedules to run (default fifo,dlas-gpu)",
    )
    parser.add_argument("--peer-python", type=Path, help="Python with the peer's requirements")
    parser.add_argument("--peer-trace", type=Path, help="the peer's (ElasticFlow-form) trace")
    parser.add_argument("--berth-trace", type=Path, help="berth's (raw ITP) trace")
    parser.add_argument(
        "--peer-no-print",
        action="store_true",
        help="run the peer without --print (its run_fig8b.sh passes it)",
    )
    parser.add_argument(
        "--berth",
        type=Path,
        default=REPO / ".venv" / "bin" / "berth",
        help="berth executable (default .venv/bin/berth)",
    )
    parser.add_argument("--json", type=Path, help="also write every run to this file")
    args = parser.parse_args()
    schedules = [s for s in args.schedules.split(",") if s]
    unknown = [s for s in schedules if s not in PEER_SCHEDULES]
    if unknown or args.repeats < 1:
        parser.error(f"--schedules takes {', '.join(PEER_SCHEDULES)}; --repeats at least 1")
    try:
        return measure(args, schedules)
    except Failure as problem:
        print(problem, file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as problem:
        print(f"setting up the peer failed: {problem}", file=sys.stderr)
        return 2


def measure(args: argparse.Namespace, schedules: list[str]) -> int:
    artifact = args.artifact.resolve()
    if not artifact.exists():
        raise Failure(GET_ARTIFACT.format(path=artifact))
    scheduler = find_scheduler(artifact)
    if not args.berth.exists():
        raise Failure(f"{args.berth} not found: run `make demo` (or pass --berth)")
    python = args.peer_python
    if python is None:
        python = artifact / ".peer-venv" / "bin" / "python"
        if not peer_ready(python, scheduler):
            python = set_up_peer(artifact / ".peer-venv", scheduler)
    if not peer_ready(python, scheduler):
        raise Failure(f"{python} cannot import the peer's modules (cvxpy, grpc, its stubs)")
    with tempfile.TemporaryDirectory(prefix="berth-peer-") as folder:
        work = Path(folder)
        peer_trace, berth_trace, note = traces(args, artifact, work)
        jobs, durations = compare_traces(berth_trace, peer_trace)
        setup = Setup(scheduler, python, args.berth, berth_trace, peer_trace, note, jobs)
        setup.durations = durations
        say(f"{jobs:,} jobs in both traces; peer at {scheduler}")
        runs: dict[str, list[Run]] = {"berth": []}
        runs.update({PEER_LABELS[s]: [] for s in schedules})
        loads = [os.getloadavg()]
        nodes = args.nodes
        for number in range(args.repeats):
            run, sized = run_berth(setup, work, number)
            runs["berth"].append(run)
            say(f"[{number + 1}/{args.repeats}] berth {run.seconds:.1f} s {run.note}")
            if run.exit_code != 0:
                raise Failure(f"berth failed: {run.note}")
            nodes = nodes or sized
            if nodes is None:
                raise Failure("could not read berth's cluster size: pass --nodes")
            for schedule in schedules:
                run = run_peer(setup, schedule, nodes, work, args)
                runs[run.name].append(run)
                say(f"[{number + 1}/{args.repeats}] {run.name} {run.seconds:.1f} s {run.note}")
        loads.append(os.getloadavg())
        print(report(setup, runs, nodes, args, loads, artifact_commit(artifact)))
        if args.json:
            dump = {name: [run.__dict__ for run in group] for name, group in runs.items()}
            args.json.write_text(json.dumps({"nodes": nodes, "runs": dump}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
