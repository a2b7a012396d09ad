"""Sweeps on a real Ray cluster: a head and one more node started with ``ray start`` on
loopback. ``berth compare`` and ``berth fill`` on it write the same files as on local
processes (wall times and provenance aside), and a sweep whose workers are killed mid-run
still completes every run exactly once."""

from __future__ import annotations

import json
import operator
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from berth.cli import main
from berth.executors import Failure, SweepError, parse_executor, raise_failures, ray_map
from tests.scenarios.test_fill import NODES, PODS

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'berth[ray]')")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: What differs between two runs of one sweep wherever they execute.
VOLATILE = ("wall_time", "wall_seconds", "provenance", "events_per_second")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray(*args: str, env: dict[str, str]) -> None:
    binary = Path(sys.executable).with_name("ray")
    subprocess.run(
        [str(binary), *args], check=True, env=env, capture_output=True, text=True, timeout=180
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The head's address; two nodes of one CPU each, stopped after the module."""
    temp = Path("/tmp") / f"berth-ray-{os.getpid()}"  # Ray's socket paths must stay short
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    try:
        _ray(
            "start", "--head", "--port", str(port), "--temp-dir", str(temp),
            "--include-dashboard", "false", *common, env=env,
        )  # fmt: skip
        _ray("start", "--address", address, *common, env=env)
        os.environ["RAY_AUTH_MODE"] = "disabled"
        yield address
    finally:
        _ray("stop", "--force", env=env)
        shutil.rmtree(temp, ignore_errors=True)


def _comparable(folder: Path) -> dict[str, object]:
    """Every file under ``folder``; JSON without what changes from run to run."""
    files: dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix in (".png", ".html"):
            continue
        relative = str(path.relative_to(folder))
        if path.suffix == ".json":
            files[relative] = _strip(json.loads(path.read_text()))
        else:
            files[relative] = path.read_bytes()
    return files


def _strip(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _compare(out: Path, *extra: str) -> int:
    binpack = str(EXAMPLES / "binpack.yaml")
    return main(
        [
            "compare",
            "--cluster", str(EXAMPLES / "cluster.yaml"),
            "--workload", str(EXAMPLES / "workload.yaml"),
            "--config", "default", "--config", binpack,
            "--seeds", "2", "--out", str(out), *extra,
        ]
    )  # fmt: skip


def test_compare_on_ray_writes_what_local_processes_write(cluster, tmp_path):
    assert _compare(tmp_path / "local", "--jobs", "2") == 0
    assert _compare(tmp_path / "ray", "--executor", f"ray={cluster}") == 0
    local, remote = _comparable(tmp_path / "local"), _comparable(tmp_path / "ray")
    assert sorted(local) == sorted(remote)
    assert "default/seed-1/pods.csv" in local
    for name in local:
        assert local[name] == remote[name], name
    # The report and plots are there too, from the runs on the cluster.
    assert (tmp_path / "ray" / "binpack" / "seed-0" / "report.html").stat().st_size > 0


def _fill(inputs: tuple[Path, Path], out: Path, *extra: str) -> int:
    nodes, pods = inputs
    argv = ["fill", "--cluster", str(nodes), "--workload", str(pods), "--seeds", "3"]
    return main([*argv, "--policy", "fgd", "--policy", "random", "--out", str(out), *extra])


def test_fill_on_ray_writes_what_local_processes_write(cluster, tmp_path):
    nodes, pods = tmp_path / "openb_node_list_gpu_node.csv", tmp_path / "openb_pod_list_t.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    assert _fill((nodes, pods), tmp_path / "local", "--jobs", "2") == 0
    assert _fill((nodes, pods), tmp_path / "ray", "--executor", f"ray={cluster}") == 0
    assert _comparable(tmp_path / "local") == _comparable(tmp_path / "ray")
    assert "fill.csv" in _comparable(tmp_path / "ray")


def _kill_running_tasks(stop: threading.Event, killed: list[int]) -> None:
    """Kill every worker process running a sweep's task, as often as one shows up."""
    while not stop.is_set():
        found = subprocess.run(["pgrep", "-f", "ray::_call"], capture_output=True, text=True)
        for pid in found.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
            except ProcessLookupError:
                pass
        if killed:
            return
        time.sleep(0.05)


def test_a_sweep_whose_worker_dies_completes_every_run_once(cluster, tmp_path):
    assert _compare(tmp_path / "local", "--jobs", "2") == 0
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_running_tasks, args=(stop, killed), daemon=True)
    killer.start()
    try:
        assert _compare(tmp_path / "ray", "--executor", f"ray={cluster}") == 0
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was running a task to kill"
    local, remote = _comparable(tmp_path / "local"), _comparable(tmp_path / "ray")
    assert sorted(local) == sorted(remote)
    for name in local:
        assert local[name] == remote[name], name
    table = json.loads((tmp_path / "ray" / "compare.json").read_text())
    assert sorted(table["folders"]) == ["binpack", "default"]
    assert all(len(folders) == 2 for folders in table["folders"].values())


@pytest.mark.parametrize(
    "text,problem",
    [
        ("ray=", "needs an address"),
        ("slurm", "expected local, ray, ray=auto or ray=HOST:PORT"),
        ("local=x", "expected local"),
    ],
)
def test_bad_executors_are_refused(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_executor(text)


def test_an_unreachable_cluster_is_one_line(tmp_path, capsys):
    port = _free_port()  # nothing listens there
    code = _compare(tmp_path / "out", "--executor", f"ray=127.0.0.1:{port}")
    err = capsys.readouterr().err
    assert code == 1
    assert f"--executor ray=127.0.0.1:{port}: cannot reach the Ray cluster" in err
    assert "Traceback" not in err


def test_jobs_and_ray_contradict(tmp_path, capsys):
    assert _compare(tmp_path / "out", "--executor", "ray", "--jobs", "2") == 1
    assert "--jobs counts processes on this machine" in capsys.readouterr().err


def test_a_run_that_fails_is_named_and_the_others_still_land(cluster):
    """A run that raises fails once, with its error; the other runs' results come back."""
    executor = parse_executor(f"ray={cluster}")
    tasks = [("one", 4), ("one", 0), ("one", 2)]
    results = ray_map(executor, operator.truediv, {"one": 1}, tasks, ["a", "b", "c"])
    assert results[0] == 0.25 and results[2] == 0.5
    assert results[1] == Failure("b", "ZeroDivisionError: division by zero")
    with pytest.raises(SweepError, match=r"^1 of 3 runs failed: b: ZeroDivisionError"):
        raise_failures(results)


def test_simulate_commands_on_ray_write_what_berth_simulate_writes(cluster, tmp_path):
    """The experiment runners' way: ``berth simulate`` command lines as tasks, their input
    files shipped through the object store."""
    from berth.remote_simulate import run_simulations

    commands = [
        ["--cluster", str(EXAMPLES / "cluster.yaml"), "--workload", str(EXAMPLES / "workload.yaml"),
         "--seed", str(seed), "--until", "2h"]
        for seed in (0, 1)
    ]  # fmt: skip
    for seed, command in enumerate(commands):
        assert (
            main(["simulate", *command, "--quiet", "--out", str(tmp_path / f"local-{seed}")]) == 0
        )
    outs = [tmp_path / f"ray-{seed}" for seed in (0, 1)]
    seconds = run_simulations(parse_executor(f"ray={cluster}"), commands, outs, ["s0", "s1"])
    assert len(seconds) == 2 and all(s > 0 for s in seconds)
    for seed in (0, 1):
        local = _comparable(tmp_path / f"local-{seed}")
        remote = _comparable(tmp_path / f"ray-{seed}")
        assert sorted(local) == sorted(remote)
        for name in ("pods.csv", "jobs.csv", "timeseries.csv"):
            assert local[name] == remote[name], name


def test_a_failing_simulate_command_names_its_error(cluster, tmp_path):
    from berth.remote_simulate import run_simulations

    command = ["--cluster", str(EXAMPLES / "cluster.yaml"), "--until", "soon"]
    with pytest.raises(SweepError, match=r"1 of 1 runs failed: bad: RuntimeError: .*--until"):
        run_simulations(parse_executor(f"ray={cluster}"), [command], [tmp_path], ["bad"])


def test_the_kuberay_manifest_and_the_slurm_script_are_well_formed():
    import yaml

    (cluster,) = list(yaml.safe_load_all((ROOT / "deploy/ray/raycluster.yaml").read_text()))
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    head = cluster["spec"]["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"  # runs go to the workers
    (group,) = cluster["spec"]["workerGroupSpecs"]
    assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    script = ROOT / "deploy/slurm/berth-sweep.sbatch"
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert '--executor "ray=$head_ip:$PORT"' in script.read_text()
