"""End-to-end throughput of ``berth serve`` through the API, against the test suite's API
emulator (tests/k8s/emulator.py, direct mode) running in a process of its own.

The emulator starts with N nodes. Once berth has synced, P pending pods are created (all at
once, or ``--rate`` per second); they reach berth through its pod watch, and the run ends when
the emulator has accepted a Binding for every one. Throughput is P over the time from the first
pod event berth received to the last Binding accepted; the latency distribution is berth's own
``berth_e2e_scheduling_duration_seconds`` histogram (watch event in → Binding accepted), given
as the bucket bounds its percentiles fall under.

    python benchmarks/k8s_serve.py --nodes 5000 --pods 10000
    python benchmarks/k8s_serve.py --nodes 5000 --pods 10000 --rate 1000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the emulator lives with the tests

POD = ("", "v1", "pods")
NODE = ("", "v1", "nodes")


def _emulator(conn, nodes: int) -> None:
    """Child process: serve the emulator; create pods on request; report bind counts."""
    from tests.k8s.emulator import EmulatorThread

    emulator = EmulatorThread(history_size=200_000, direct=True)
    api = emulator.handler

    def add_nodes() -> None:
        for i in range(nodes):
            api.put(
                NODE,
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": f"node-{i:05d}",
                        "labels": {"topology.kubernetes.io/zone": f"zone-{i % 4}"},
                    },
                    "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
                },
            )

    def add_pods(first: int, count: int) -> None:
        for i in range(first, first + count):
            api.put(
                POD,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"pod-{i:05d}", "namespace": "default"},
                    "spec": {
                        "schedulerName": "berth",
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                            }
                        ],
                    },
                },
            )

    emulator.run(add_nodes)
    conn.send(emulator.url)
    while True:
        command, arg = conn.recv()
        if command == "pods":
            count, rate = arg
            if not rate:
                emulator.run(add_pods, 0, count)
            else:  # in steps of 20 ms
                step = max(1, round(rate / 50))
                start = time.perf_counter()
                for first in range(0, count, step):
                    emulator.run(add_pods, first, min(step, count - first))
                    pause = start + (first + step) / rate - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
            conn.send(time.time())
        elif command == "bound":
            conn.send(emulator.run(lambda: sum(1 for v in api.binds.values() if v)))
        elif command == "stop":
            emulator.close()
            conn.send(None)
            return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--bind-concurrency", type=int, default=16)
    parser.add_argument("--period", type=float, default=0.05, help="seconds between cycles")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="pods created per second (0: all at once)"
    )
    args = parser.parse_args()

    from kubernetes import client as k8s_client

    from berth.framework.config_files import load_config
    from berth.k8s.client import KubeClient
    from berth.k8s.server import ServeOptions, Server

    parent, child = mp.Pipe()
    process = mp.get_context("fork").Process(target=_emulator, args=(child, args.nodes))
    process.start()
    url = parent.recv()
    configuration = k8s_client.Configuration()
    configuration.host = url
    config = load_config(None)
    config.period = args.period
    options = ServeOptions(bind_concurrency=args.bind_concurrency, watch_timeout=300, resync=3600)
    server = Server(KubeClient(configuration, pool_size=32), config, options)
    thread = threading.Thread(target=server.run, daemon=True)
    started = time.perf_counter()
    thread.start()
    while not server.synced:
        time.sleep(0.01)
    sync_seconds = time.perf_counter() - started
    parent.send(("pods", (args.pods, args.rate)))
    parent.recv()
    while True:
        bound = server.metrics.binds.labels("bound")._value.get()
        if bound >= args.pods:
            break
        time.sleep(0.02)
    done = time.perf_counter()
    histogram = server.metrics.e2e_latency
    server.stop()
    thread.join(30)
    parent.send(("bound", None))
    accepted = parent.recv()
    parent.send(("stop", None))
    parent.recv()
    process.join(10)

    buckets: list[tuple[float, float]] = []
    count = total = 0.0
    for metric in histogram.collect():
        for sample in metric.samples:
            if sample.name.endswith("_bucket"):
                buckets.append((float(sample.labels["le"]), sample.value))
            elif sample.name.endswith("_count"):
                count = sample.value
            elif sample.name.endswith("_sum"):
                total = sample.value

    window = server.last_bound_at - server.books.first_pending_at

    def under(q: float) -> float:
        return next(bound for bound, seen in buckets if seen >= q * count)

    report = {
        "nodes": args.nodes,
        "pods": args.pods,
        "arrival": f"{args.rate:g} pods/s" if args.rate else "all at once",
        "bound_accepted_by_api": accepted,
        "sync_seconds": round(sync_seconds, 2),
        "seconds": round(window, 2),
        "pods_per_second": round(args.pods / window, 1),
        "latency_mean_seconds": round(total / count, 3) if count else None,
        "latency_p50_under": under(0.5),
        "latency_p90_under": under(0.9),
        "latency_p99_under": under(0.99),
        "wall_to_all_bound": round(done - started, 2),
        "machine": f"{platform.machine()}, {mp.cpu_count()} cpus, "
        f"Python {platform.python_version()}",
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
