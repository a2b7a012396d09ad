"""``simulate`` and ``compare`` read traces as ``trace convert`` does (windows, samples,
speed-ups, queues), take times with units, and refuse contradictory or absurd inputs with one
line and a non-zero exit."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from berth.cli import main

ITP_HEADER = "job_id,submission_time,duration,num_gpu\n"


def itp(tmp_path: Path, rows: list[str], name: str = "cluster99.csv") -> Path:
    path = tmp_path / name
    path.write_text(ITP_HEADER + "".join(f"{row}\n" for row in rows))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def pods_csv(out: Path) -> list[dict[str, str]]:
    with open(out / "pods.csv", newline="") as handle:
        return list(csv.DictReader(handle))


ROWS = [f"j{i},{i * 600},300,{1 + i % 3}" for i in range(12)]  # one job every 10 minutes


def test_trace_window_sample_and_speedup(tmp_path: Path, capsys) -> None:
    trace = itp(tmp_path, ROWS)
    out = tmp_path / "out"
    argv = ["simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet"]
    rc, _, err = run(capsys, *argv, "--from", "1h", "--to", "100m", "--out", str(out))
    assert rc == 0
    assert sorted(row["job"] for row in pods_csv(out)) == ["j6", "j7", "j8", "j9"]
    assert "left out 6 jobs submitted before the window start (3600s)" in err
    assert sorted(float(r["submit_time"]) for r in pods_csv(out)) == [0, 600, 1200, 1800]
    rc, _, err = run(capsys, *argv, "--sample", "3", "--speedup", "2", "--out", str(out))
    assert rc == 0
    rows = pods_csv(out)
    assert len(rows) == 3 and all(float(r["submit_time"]) % 300 == 0 for r in rows)
    assert "left out 9 jobs not in the sample" in err


def test_trace_queues_rule(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    rc, _, _ = run(
        capsys,
        "simulate",
        "--trace",
        str(itp(tmp_path, ROWS)),
        "--cluster-from-trace",
        "--queues",
        "by-size",
        "--quiet",
        "--out",
        str(out),
    )
    assert rc == 0
    assert {row["queue"] for row in pods_csv(out)} == {"small", "medium"}


def test_until_takes_units(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    trace = itp(tmp_path, ROWS)
    rc, _, _ = run(
        capsys, "simulate", "--trace", str(trace), "--cluster-from-trace", "--until", "30m",
        "--quiet", "--out", str(out),
    )  # fmt: skip
    assert rc == 0
    assert json.loads((out / "summary.json").read_text())["end_time"] == 1800


def test_repeated_job_ids_run_renamed(tmp_path: Path, capsys) -> None:
    trace = itp(tmp_path, ["a,0,100,1", "a,10,100,1", "a-2,20,100,1"])
    out = tmp_path / "out"
    rc, _, err = run(
        capsys, "simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet",
        "--out", str(out),
    )  # fmt: skip
    assert rc == 0
    assert sorted(row["name"] for row in pods_csv(out)) == ["a", "a-2", "a-2-2"]
    assert "changed 2 jobs whose name an earlier job already has" in err


def test_cluster_from_trace_sizes_a_converted_workload(tmp_path: Path, capsys) -> None:
    workload = tmp_path / "w.yaml"
    assert main(["trace", "convert", str(itp(tmp_path, ROWS)), "--out", str(workload)]) == 0
    out = tmp_path / "out"
    rc, _, err = run(
        capsys, "simulate", "--workload", str(workload), "--cluster-from-trace", "--quiet",
        "--out", str(out),
    )  # fmt: skip
    assert rc == 0
    assert "note: cluster sized from the trace: 1 8-GPU nodes" in err
    assert len(pods_csv(out)) == 12


def test_workload_folder(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "workloads"
    folder.mkdir()
    first = itp(tmp_path, ROWS[:5])
    assert main(["trace", "convert", str(first), "--out", str(folder / "a.yaml")]) == 0
    assert main(["trace", "convert", str(itp(tmp_path, ROWS[5:], "c2.csv")), "--out",
                 str(folder / "b.jsonl")]) == 0  # fmt: skip
    (folder / "notes.txt").write_text("not a manifest")
    capsys.readouterr()
    out = tmp_path / "out"
    rc, _, _ = run(
        capsys, "simulate", "--workload", str(folder), "--cluster-from-trace", "--quiet",
        "--out", str(out),
    )  # fmt: skip
    assert rc == 0
    assert len(pods_csv(out)) == 12
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, err = run(
        capsys, "simulate", "--workload", str(empty), "--cluster-from-trace", "--quiet",
        "--out", str(out),
    )  # fmt: skip
    assert rc == 1
    assert err == f"{empty}: no manifest files (.yaml, .yml, .json, .jsonl) in it\n"


def test_a_trace_larger_than_max_pods_is_refused_before_it_is_built(tmp_path: Path, capsys):
    trace = itp(tmp_path, ["big,0,100,64", "small,0,100,8"])
    argv = ["simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet"]
    rc, _, err = run(capsys, *argv, "--max-pods", "8", "--out", str(tmp_path / "o"))
    assert rc == 1
    assert err == (
        f"error: {trace}: 2 jobs, 9 pods (about 0.0 GB to simulate): more than --max-pods 8; "
        "keep fewer with --sample N, --from/--to or --max-instances N, or raise --max-pods\n"
    )
    assert not (tmp_path / "o").exists()
    rc, _, err = run(capsys, *argv, "--out", str(tmp_path / "o"))
    assert rc == 0
    assert f"note: {trace}: 2 jobs, 9 pods" in err


CONFLICTS = {
    "two sources of nodes": (
        ["--trace", "T", "--cluster", "C", "--cluster-from-trace"],
        "--cluster and --cluster-from-trace: give one source of nodes",
    ),
    "selection without a trace": (
        ["--workload", "W", "--cluster", "C", "--from", "1h", "--sample", "3"],
        "--from, --sample: only with --trace (they select trace jobs)",
    ),
    "window the wrong way round": (
        ["--trace", "T", "--cluster-from-trace", "--from", "2h", "--to", "1h"],
        "--from/--to/--sample/--speedup: the window end 3600 must be after its start 7200",
    ),
}


@pytest.mark.parametrize("argv,message", CONFLICTS.values(), ids=CONFLICTS.keys())
def test_contradictory_inputs(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    rc, out, err = run(capsys, "simulate", *argv, "--out", str(tmp_path / "o"), "--quiet")
    assert (rc, out, err) == (1, "", f"error: {message}\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["--seed", "-1"],
        ["--until", "nan"],
        ["--until", "inf"],
        ["--until", "0"],
        ["--until", "-5m"],
        ["--until", "9" * 400],
        ["--from", "yesterday"],
        ["--speedup", "0"],
        ["--sample", "-2"],
        ["--max-pods", "0"],
        ["--format", "csv"],
    ],
)
def test_bad_values_are_refused_by_the_parser(tmp_path: Path, capsys, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", *argv, "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error: argument" in err


def test_output_folder_is_checked_before_anything_runs(tmp_path: Path, capsys) -> None:
    trace = itp(tmp_path, ROWS[:2])
    argv = ["simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet", "--out"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert (
        run(capsys, *argv, str(afile))[2] == f"error: --out {afile}: exists and is not a folder\n"
    )
    rc, _, err = run(capsys, *argv, str(afile / "sub"))
    assert (rc, err) == (
        1,
        f"error: --out {afile / 'sub'}: cannot create ({afile} is not a folder)\n",
    )
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    rc, _, err = run(capsys, *argv, str(mine))
    assert rc == 1 and "holds files berth did not write" in err and "--force" in err
    rc, _, err = run(capsys, *argv, str(mine), "--force")
    assert rc == 0 and "writing into" in err
    assert (mine / "thesis.tex").read_text() == "precious"
    rc, _, err = run(capsys, *argv, str(mine))  # now it holds a berth run
    assert rc == 0 and f"note: writing over the earlier run in {mine}" in err


def test_absurd_workloads_and_unknown_failed_nodes_are_refused(tmp_path: Path, capsys) -> None:
    cluster = Path(__file__).resolve().parents[1] / "scenarios" / "data" / "cluster.yaml"
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: huge}\n"
        "spec: {tasks: [{name: w, replicas: REPLICAS,\n"
        "                template: {spec: {containers: [{name: c}]}}}]}\n"
    )
    text = job.read_text()
    job.write_text(text.replace("REPLICAS", "2000000000"))
    argv = ["simulate", "--cluster", str(cluster), "--workload", str(job), "--quiet"]
    rc, _, err = run(capsys, *argv, "--out", str(tmp_path / "o"))
    assert rc == 1 and "spec.tasks[0].replicas: must be <= 1000000 (got 2000000000)" in err
    job.write_text(text.replace("REPLICAS", "900000"))
    rc, _, err = run(capsys, *argv, "--max-pods", "1000", "--out", str(tmp_path / "o"))
    assert (rc, err) == (
        1,
        f"error: {cluster}: the workload makes 900,000 pods, more than --max-pods 1,000 "
        "(about 2.5 KB each to simulate); raise --max-pods to run it\n",
    )
    config = tmp_path / "conf.yaml"
    config.write_text("simulation:\n  nodeFailures: [{node: nope, at: 10}]\n")
    rc, _, err = run(
        capsys, "simulate", "--config", str(config), "--quiet", "--out", str(tmp_path / "o")
    )
    assert (rc, err) == (
        1,
        f"error: {config}: simulation.nodeFailures[0].node: no node named 'nope' in the cluster\n",
    )


def test_manifests_run_beside_a_trace(tmp_path: Path, capsys) -> None:
    # an inference-like Deployment beside two ITP jobs, on the nodes sized for the trace
    trace = itp(tmp_path, ["a,0,100,8", "b,50,100,8"])
    service = tmp_path / "service.yaml"
    service.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
        "spec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n"
        "    metadata: {labels: {app: web}}\n"
        "    spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}\n"
    )
    out = tmp_path / "o"
    argv = ["simulate", "--trace", str(trace), "--cluster-from-trace", "--workload", str(service)]
    rc, _, err = run(capsys, *argv, "--until", "1h", "--out", str(out), "--quiet")
    assert rc == 0, err
    with open(out / "pods.csv", newline="") as handle:
        phases = {row["name"]: row["phase"] for row in csv.DictReader(handle)}
    assert sum(name.startswith("web-") for name in phases) == 2
    assert {phases[name] for name in phases if name.startswith("web-")} == {"Running"}
    assert sum(not name.startswith("web-") for name in phases) == 2


def test_elastic_fraction_makes_multi_worker_jobs_elastic(tmp_path: Path, capsys) -> None:
    # 16 GPUs = two 8-GPU workers per job; every multi-worker job chosen at fraction 1
    trace = itp(tmp_path, [f"j{i},{i * 10},600,16" for i in range(4)] + ["one,0,600,8"])
    out = tmp_path / "o"
    argv = ["simulate", "--trace", str(trace), "--cluster-from-trace", "--elastic-fraction", "1"]
    rc, _, err = run(capsys, *argv, "--out", str(out), "--quiet")
    assert rc == 0, err
    # sized by every job's pods, the elastic jobs' included
    assert "cluster sized from the trace: 13 8-GPU nodes" in err
    with open(out / "jobs.csv", newline="") as handle:
        jobs = {row["name"]: row for row in csv.DictReader(handle)}
    assert {row["phase"] for row in jobs.values()} == {"Completed"}
    with open(out / "pods.csv", newline="") as handle:
        names = {row["name"] for row in csv.DictReader(handle)}
    assert "j0-worker-0" in names and "one" in names


def test_elastic_fraction_needs_a_trace(tmp_path: Path, capsys) -> None:
    rc, _, err = run(
        capsys, "simulate", "--workload", "W", "--cluster", "C", "--elastic-fraction", "0.5",
        "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert (rc, err) == (1, "error: --elastic-fraction: only with --trace (it marks trace jobs "
                            "elastic)\n")  # fmt: skip


def test_config_default_names_the_built_in_configuration(tmp_path: Path, capsys) -> None:
    """``--config default`` means the built-in configuration in simulate as in compare."""
    trace = itp(tmp_path, ROWS)
    runs = {}
    for name, extra in (("named", ["--config", "default"]), ("omitted", [])):
        out = tmp_path / name
        rc, _, err = run(
            capsys, "simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet",
            "--out", str(out), *extra,
        )  # fmt: skip
        assert rc == 0, err
        runs[name] = (out / "pods.csv").read_text()
    assert runs["named"] == runs["omitted"]


def test_ctrl_c_stops_cleanly_with_exit_130(tmp_path: Path, capsys, monkeypatch) -> None:
    """Ctrl-C mid-run: no traceback, one line, the shell's 130."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("berth.sim.run.simulate", interrupted)
    trace = itp(tmp_path, ROWS)
    rc, _, err = run(
        capsys, "simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert rc == 130
    assert err.strip().splitlines()[-1] == "interrupted"


def test_network_topology_without_hypernodes_is_named(tmp_path: Path, capsys) -> None:
    """A flag given and then without effect says so."""
    trace = itp(tmp_path, ROWS)
    rc, _, err = run(
        capsys, "simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet",
        "--network-topology", "hard:1", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert rc == 0
    assert "warning: --network-topology: the cluster has no HyperNodes" in err
