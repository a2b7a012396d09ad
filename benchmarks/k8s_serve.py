"""``berth serve`` against the real kube-scheduler, on one real API server (scheduler_perf's
SchedulingBasic shape): etcd, kube-apiserver and kube-controller-manager built by ``make
controlplane`` and started on loopback, N nodes, then P pending pods for one scheduler at a
time, each scheduler a process of its own.

Two shapes. **A backlog** (the default): the scheduler, its caches synced, is paused
(SIGSTOP) while the P pods are created, then resumed; throughput is P over the time from the
resume to the last bind, so the pods' creator never competes with the scheduler for the two
cores. **A steady arrival** (``--rate R``): the scheduler runs while pods are created at R per
second. One observer, in the process that creates the pods, times both schedulers the same
way: its watch sees each pod bound; a pod's latency runs from the moment its create request was
sent (from the resume, for a backlog). Client rate limits are raised the same way for both:
kube-scheduler's ``clientConnection`` gets qps and burst of 5000 (scheduler_perf's setting);
berth has no client-side limit and keeps 64 binds in flight. berth runs its default
configuration (a session at most once a second), kube-scheduler its default profile.

    python benchmarks/k8s_serve.py --nodes 5000 --pods 10000
    python benchmarks/k8s_serve.py --nodes 5000 --pods 10000 --rate 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the control plane launcher lives with the tests

from tests.k8s.controlplane import BIN, ControlPlane, missing_binaries  # noqa: E402

IN_FLIGHT = 64
QPS = 5000


def node(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i:05d}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i:05d}",
                "topology.kubernetes.io/zone": f"zone-{i % 4}",
            },
        },
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(i: int, scheduler: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        },
    }


class Api:
    """aiohttp against the API server as admin (the pods' creator and the observer)."""

    def __init__(self, plane: ControlPlane) -> None:
        self.url = plane.url
        context = ssl.create_default_context(cafile=str(plane.pki / "ca.crt"))
        context.load_cert_chain(str(plane.pki / "admin.crt"), str(plane.pki / "admin.key"))
        self.context = context

    def session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(ssl=self.context, limit=IN_FLIGHT + 4)
        return aiohttp.ClientSession(connector=connector)

    async def post_all(self, path: str, docs: list[dict], rate: float, sent: dict | None) -> None:
        async with self.session() as session:
            slots = asyncio.Semaphore(IN_FLIGHT)
            start = time.perf_counter()

            async def one(index: int, doc: dict) -> None:
                if rate:
                    pause = start + index / rate - time.perf_counter()
                    if pause > 0:
                        await asyncio.sleep(pause)
                async with slots:
                    if sent is not None:
                        sent[doc["metadata"]["name"]] = time.perf_counter()
                    async with session.post(self.url + path, json=doc) as answer:
                        if answer.status >= 300:
                            raise RuntimeError(f"{path}: {answer.status} {await answer.text()}")

            await asyncio.gather(*(one(i, d) for i, d in enumerate(docs)))

    async def observe(self, expected: int, bound: dict, version: str, deadline: float) -> None:
        """Watch the pods until ``expected`` are bound (or the deadline passes)."""
        async with self.session() as session:
            while len(bound) < expected and time.perf_counter() < deadline:
                query = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "30"}
                async with session.get(
                    self.url + "/api/v1/namespaces/default/pods", params=query, timeout=None
                ) as answer:
                    async for line in answer.content:
                        event = json.loads(line)
                        obj = event["object"]
                        version = obj["metadata"].get("resourceVersion", version)
                        name = obj["metadata"].get("name")
                        if obj.get("spec", {}).get("nodeName") and name not in bound:
                            bound[name] = time.perf_counter()
                            if len(bound) >= expected:
                                return

    async def version(self) -> str:
        async with self.session() as session:
            async with session.get(self.url + "/api/v1/namespaces/default/pods") as answer:
                return (await answer.json())["metadata"]["resourceVersion"]


def start_scheduler(which: str, plane: ControlPlane, folder: Path) -> subprocess.Popen:
    log = (folder / f"{which}.log").open("wb")
    if which == "berth":
        config = folder / "berth.kubeconfig"
        args = [sys.executable, "-m", "berth.cli", "serve", "--kubeconfig", str(config)]
        args += ["--metrics-port", "0", "--log-level", "warning"]
    else:
        settings = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {
                "kubeconfig": str(folder / "scheduler.kubeconfig"),
                "qps": QPS,
                "burst": QPS,
            },
            "leaderElection": {"leaderElect": False},
        }
        plane.write_kubeconfig("scheduler")
        path = folder / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump(settings))
        args = [str(BIN / "kube-scheduler"), f"--config={path}", "--secure-port=0", "--v=1"]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def run_one(which: str, plane: ControlPlane, api: Api, pods: int, rate: float) -> dict:
    name = "berth" if which == "berth" else "default-scheduler"
    process = start_scheduler(which, plane, plane.folder)
    try:
        # Warm-up: one pod bound means the scheduler has synced its caches.
        warm = pod(99999, name)
        asyncio.run(api.post_all("/api/v1/namespaces/default/pods", [warm], 0, None))
        bound: dict[str, float] = {}
        asyncio.run(api.observe(1, bound, "0", time.perf_counter() + 60))
        if not bound:
            raise RuntimeError(f"{which}: the warm-up pod was not bound (see {which}.log)")
        version = asyncio.run(api.version())
        sent: dict[str, float] = {}
        created: list[float] = []
        bound = {}
        docs = [pod(i, name) for i in range(pods)]

        async def load() -> None:
            if not rate:
                process.send_signal(signal.SIGSTOP)
            watcher = asyncio.create_task(
                api.observe(pods, bound, version, time.perf_counter() + 600)
            )
            created.append(time.perf_counter())
            await api.post_all("/api/v1/namespaces/default/pods", docs, rate, sent)
            created.append(time.perf_counter())
            if not rate:
                process.send_signal(signal.SIGCONT)
                resumed = time.perf_counter()
                for key in sent:
                    sent[key] = resumed
            await watcher

        asyncio.run(load())
    finally:
        process.terminate()
        process.wait(30)
    plane.request("DELETE", "/api/v1/namespaces/default/pods?gracePeriodSeconds=0")
    latencies = sorted(bound[k] - sent[k] for k in bound if k in sent)
    first, last = min(sent.values()), max(bound.values())
    quantiles = statistics.quantiles(latencies, n=100)
    binds_by_second = Counter(int(t - first) for t in bound.values())
    return {
        "scheduler": which,
        "created_per_second": len(sent) / (created[1] - created[0]),
        "bound": len(latencies),
        "seconds": last - first,
        "pods_per_second": len(latencies) / (last - first),
        "first_bind": min(bound.values()) - first,
        "per_second": [binds_by_second[s] for s in range(int(last - first) + 1)],
        "latency_p50": quantiles[49],
        "latency_p90": quantiles[89],
        "latency_p99": quantiles[98],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000, help="nodes (default 5000)")
    parser.add_argument("--pods", type=int, default=10_000, help="pods per scheduler (10000)")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="pods created per second (default 0: at once)"
    )
    parser.add_argument(
        "--only", choices=("berth", "kube-scheduler"), help="run one scheduler only"
    )
    args = parser.parse_args()
    absent = missing_binaries()
    if absent:
        print(f"error: not built: {', '.join(absent)} (run `make controlplane`)", file=sys.stderr)
        return 1
    folder = Path(tempfile.mkdtemp(prefix="berth-bench-"))
    plane = ControlPlane(folder, scheduler=False)
    plane.start()
    try:
        api = Api(plane)
        started = time.perf_counter()
        asyncio.run(api.post_all("/api/v1/nodes", [node(i) for i in range(args.nodes)], 0, None))
        print(f"{args.nodes} nodes in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        results = []
        for which in ("berth", "kube-scheduler"):
            if args.only and which != args.only:
                continue
            results.append(run_one(which, plane, api, args.pods, args.rate))
            print(json.dumps(results[-1]), file=sys.stderr)
    finally:
        plane.stop()
        shutil.rmtree(folder, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print(f"nodes {args.nodes}, pods {args.pods}, rate {args.rate or 'all at once'}")
    for r in results:
        print(
            f"{r['scheduler']:>15}: {r['pods_per_second']:7.0f} pods/s  "
            f"p50 {r['latency_p50']:.2f} s  p90 {r['latency_p90']:.2f} s  "
            f"p99 {r['latency_p99']:.2f} s  ({r['bound']} bound in {r['seconds']:.1f} s; "
            f"created at {r['created_per_second']:.0f}/s)"
        )
    if len(results) == 2:
        ratio = results[0]["pods_per_second"] / results[1]["pods_per_second"]
        print(f"berth / kube-scheduler: {ratio:.2f}x")
    print(f"load average after: {load:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
