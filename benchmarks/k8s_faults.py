"""Faults at scale, with figures: ``berth serve`` (as processes, with its service account's
token, through the fault proxy) binding P pods onto N nodes of a real control plane while one
fault strikes, once a third of the pods are bound:

- ``leader-kill``: two replicas with leader election; the leader is killed with SIGKILL and the
  standby must take over on the Lease (15 s lease, as kube-scheduler's default);
- ``apiserver-restart`` / ``etcd-restart``: the component killed with SIGKILL and started again;
- ``watch-cuts``: every watch stream cut every half second until the end;
- ``storm``: for ten seconds, half of all requests answered 429 or 503 in turn.

For each: seconds to bind every pod (as the API server has them, sampled twice a second), the
longest pause between two samples that saw progress (the recovery), the pods the API server
accepted more than one Binding for (must be 0), pods never bound (must be 0), Bindings answered
409 because an earlier try had landed though its answer was lost, the answers that were not
2xx, and whether every replica that was not killed is still running (berth recovers without a
restart).

    python benchmarks/k8s_faults.py --nodes 500 --pods 5000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the control plane, proxy and kubelet live with the tests

from berth.k8s.client import ApiError, ConnectionLost  # noqa: E402
from tests.k8s.controlplane import ControlPlane, missing_binaries  # noqa: E402
from tests.k8s.harness import Cluster, node_doc, pod_doc  # noqa: E402
from tests.k8s.proxy import FaultProxy  # noqa: E402

SCENARIOS = ("leader-kill", "apiserver-restart", "etcd-restart", "watch-cuts", "storm")


def replica(cluster: Cluster, folder: Path, name: str, elect: bool) -> subprocess.Popen:
    config = cluster.kubeconfig(folder / f"{name}.kubeconfig")
    args = [sys.executable, "-m", "berth.cli", "serve", "--kubeconfig", str(config)]
    args += ["--identity", name, "--log-level", "warning", "--metrics-port", "0"]
    if elect:
        args.append("--leader-elect")
    log = (folder / f"{name}.log").open("wb")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def leader(cluster: Cluster) -> str:
    try:
        lease = cluster.admin.request(
            "GET", "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases/berth"
        )
    except ApiError:
        return ""
    return str(lease["spec"].get("holderIdentity") or "")


def run(scenario: str, plane: ControlPlane, proxy: FaultProxy, nodes: int, pods: int) -> dict:
    cluster = Cluster(plane, proxy)
    cluster.clean()
    for i in range(nodes):
        name = f"node-{i:04d}"
        cluster.node_agent.register(
            node_doc(name, cpu="64", memory="256Gi", **{"kubernetes.io/hostname": name})
        )
    folder = plane.folder
    elect = scenario == "leader-kill"
    names = ["berth-a", "berth-b"] if elect else ["berth-a"]
    replicas = {}
    for name in names:
        replicas[name] = replica(cluster, folder, name, elect)
        if elect:
            deadline = time.monotonic() + 60
            while leader(cluster) != name and name == "berth-a":
                if time.monotonic() > deadline:
                    raise RuntimeError("no replica took the Lease")
                time.sleep(0.2)
    time.sleep(3)  # caches synced
    bind_times: list[float] = []
    stop = threading.Event()

    bound_now = [0]

    def watch_binds() -> None:
        """Pods on a node, as the API server has them (a Binding whose answer was lost in
        an outage still counts), sampled twice a second."""
        seen = 0
        while not stop.is_set():
            try:
                items = cluster.admin.request("GET", "/api/v1/namespaces/default/pods")["items"]
            except (ApiError, ConnectionLost):
                time.sleep(0.5)
                continue
            count = sum(1 for p in items if p["spec"].get("nodeName"))
            if count > seen:
                bind_times.extend([time.monotonic()] * (count - seen))
                seen = bound_now[0] = count
            time.sleep(0.5)

    watcher = threading.Thread(target=watch_binds, daemon=True)
    watcher.start()
    started = time.monotonic()

    def create() -> None:
        for i in range(pods):
            try:
                doc = pod_doc(f"pod-{i:05d}", cpu="100m")
                cluster.admin.request("POST", "/api/v1/namespaces/default/pods", body=doc)
            except ApiError as exc:
                if exc.status != 409:  # a retried create whose first try went through
                    raise

    creator = threading.Thread(target=create, daemon=True)
    creator.start()
    struck = None
    killed = ""
    deadline = time.monotonic() + 600
    cutter: threading.Thread | None = None
    while bound_now[0] < pods and time.monotonic() < deadline:
        if struck is None and bound_now[0] >= pods // 3:
            struck = time.monotonic()
            if scenario == "leader-kill":
                killed = leader(cluster)
                replicas[killed].send_signal(signal.SIGKILL)
            elif scenario == "apiserver-restart":
                plane.restart("kube-apiserver", kill=True)
            elif scenario == "etcd-restart":
                plane.restart("etcd", kill=True)
            elif scenario == "watch-cuts":

                def cut() -> None:
                    while not stop.is_set():
                        proxy.drop_watches()
                        time.sleep(0.5)

                cutter = threading.Thread(target=cut, daemon=True)
                cutter.start()
            elif scenario == "storm":
                proxy.flaky = (0.5, (429, 503))

                def calm() -> None:
                    time.sleep(10)
                    proxy.flaky = None

                threading.Thread(target=calm, daemon=True).start()
        time.sleep(0.1)
    finished = time.monotonic()
    stop.set()
    creator.join(30)
    watcher.join(2)
    alive = {n: p.poll() is None for n, p in replicas.items() if n != killed}
    for process in replicas.values():
        if process.poll() is None:
            process.terminate()
            process.wait(20)
    gaps = [b - a for a, b in zip(bind_times, bind_times[1:], strict=False)]
    statuses: dict[int, int] = {}
    for _, _, status in proxy.answers:
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "scenario": scenario,
        "pods": pods,
        "bound": bound_now[0],
        "bound_twice": sum(1 for v in proxy.bound.values() if v > 1),
        "bind_conflicts": sum(
            1 for m, path, status in proxy.answers if path.endswith("/binding") and status == 409
        ),
        "seconds": round(finished - started, 1),
        "longest_pause": round(max(gaps, default=0.0), 1),
        "struck_after": round((struck or finished) - started, 1),
        "answers_not_2xx": {str(k): v for k, v in sorted(statuses.items()) if k >= 300},
        "replicas_still_running": all(alive.values()),
        "killed": killed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500, help="nodes (default 500)")
    parser.add_argument("--pods", type=int, default=5000, help="pods (default 5000)")
    parser.add_argument("--only", choices=SCENARIOS, help="one scenario")
    args = parser.parse_args()
    absent = missing_binaries()
    if absent:
        print(f"error: not built: {', '.join(absent)} (run `make controlplane`)", file=sys.stderr)
        return 1
    results = []
    for scenario in SCENARIOS:
        if args.only and scenario != args.only:
            continue
        folder = Path(tempfile.mkdtemp(prefix="berth-faults-"))
        plane = ControlPlane(folder)
        plane.start()
        proxy = FaultProxy(plane.url, plane.pki)
        try:
            results.append(run(scenario, plane, proxy, args.nodes, args.pods))
            print(json.dumps(results[-1]), flush=True)
        finally:
            proxy.close()
            plane.stop()
            shutil.rmtree(folder, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    failed = [r for r in results if r["bound"] < r["pods"] or r["bound_twice"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
