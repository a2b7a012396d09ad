"""sjf and srtf: shortest (remaining) job first by the trace's durations or by the queue's mean
so far; srtf evicts only jobs with more time left than the preemptor."""

from __future__ import annotations

import pytest

from berth.framework.plugin import PluginArgumentError
from berth.framework.scheduler import Scheduler
from berth.plugins.sjf import Sjf, Srtf
from tests.builders import GANG, config, node, pod

GPU = 1000


def job(name: str, gpus: int, duration: float, submit: float = 0.0, start=None):
    return pod(
        name,
        cpu=100,
        mem=1,
        gpu=gpus * GPU,
        submit_time=submit,
        start_time=start,
        duration=duration,
    )


def run(policy: str, pods, bound=(), now: float = 0.0, nodes: int = 1, **arguments):
    entry = {"name": policy, "arguments": arguments} if arguments else policy
    cfg = config([entry, GANG, "resource-fit"], actions="allocate, preempt, backfill")
    s = Scheduler(cfg)
    for i in range(nodes):
        s.add_node(node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU))
    for p, where in bound:
        s.place_bound(p, where)
    for p in pods:
        s.submit(p)
    binds = {b.pod.name: b.node for b in s.run_session(now)}
    return s, binds, {e.pod.name: e.reason for e in s.evictions}


ROWS = [
    # (policy, arriving, running, now, expected binds, expected victims)
    ("sjf", [job("long", 8, 5000), job("short", 8, 100, submit=10)], [], 10, {"short": "n0"}, {}),
    ("sjf", [job("b", 8, 100, submit=5), job("a", 8, 100)], [], 10, {"a": "n0"}, {}),
    ("sjf", [job("short", 8, 10)], [(job("long", 8, 5000, start=0), "n0")], 10, {}, {}),
    (
        "srtf",
        [job("short", 8, 100, submit=10)],
        [(job("long", 8, 5000, start=0), "n0")],
        10,
        {"short": "n0"},
        {"long": "preempted by default/short"},
    ),
    # 5,000 − 4,950 = 50 left: less than the 100 the arrival needs, so it stays.
    (
        "srtf",
        [job("short", 8, 100, submit=4950)],
        [(job("long", 8, 5000, start=0), "n0")],
        4950,
        {},
        {},
    ),
    (
        "srtf",
        [job("short", 8, 100, submit=10)],
        [(job("mid", 8, 3000, start=0), "n0"), (job("long", 8, 9000, start=0), "n1")],
        10,
        {"short": "n1"},
        {"long": "preempted by default/short"},
    ),
]


@pytest.mark.parametrize(("policy", "pods", "bound", "now", "binds", "victims"), ROWS)
def test_order_and_victims(policy, pods, bound, now, binds, victims) -> None:
    nodes = 1 + len({where for _, where in bound} - {"n0"})
    _, got, evicted = run(policy, pods, bound, now, nodes=nodes)
    assert got == binds
    assert evicted == victims


def test_estimate_learns_the_queue_mean() -> None:
    """Before any job has completed every job is the prior; after one that ran 300 s, the
    queue's estimate is 300 s."""
    s, _, _ = run("sjf", [job("a", 8, 300)], durations="estimate", prior=1000)
    plugin = next(p for p in s.framework.plugins if isinstance(p, Sjf))
    assert plugin.length(s.jobs["default/a"]) == 1000
    pod_a = s.jobs["default/a"].bound["default/a"]
    pod_a.start_time = 1.0
    s.submit(job("b", 8, 50, submit=100))
    s.run_session(100)  # notes a's start
    s.release(pod_a)  # it completed
    s.run_session(301)
    assert plugin.history == {"default": (1, 300.0)}
    assert plugin.length(s.jobs["default/b"]) == 300


@pytest.mark.parametrize(
    ("plugin", "arguments"),
    [(Sjf, {"durations": "guess"}), (Srtf, {"prior": -1}), (Sjf, {"prior": "x"})],
)
def test_bad_arguments(plugin, arguments) -> None:
    with pytest.raises(PluginArgumentError, match="argument"):
        plugin(arguments)
