"""tiresias: levels of attained GPU-seconds (dlas-gpu's 3,250 and 7,200), first come first
served within a level, preemption of lower levels only, victims from the lowest level wherever
they run, the starvation guard, and the next demotion as a wake-up time."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from berth.api.objects import Pod, PodGroup
from berth.framework.plugin import PluginArgumentError
from berth.framework.scheduler import Scheduler
from berth.plugins.tiresias import DEFAULT_THRESHOLDS, Service, Tiresias
from tests.builders import GANG, config, node, pod, scheduler

GPU = 1000  # one GPU in milli-GPU


def job(name: str, gpus: int, submit: float = 0.0, start: float | None = None) -> Pod:
    """A one-pod job of ``gpus`` GPUs; ``start``: running since then (bound)."""
    return pod(name, cpu=100, mem=1, gpu=gpus * GPU, submit_time=submit, start_time=start)


def cfg(**arguments: object):
    tiresias = {"name": "tiresias", "arguments": arguments} if arguments else "tiresias"
    return config(
        [tiresias, GANG, "resource-fit", "least-allocated"], actions="allocate, preempt, backfill"
    )


def plugin(s: Scheduler) -> Tiresias:
    return next(p for p in s.framework.plugins if isinstance(p, Tiresias))


@dataclass
class Row:
    nodes: int  # 8-GPU nodes n0, n1, ...
    pods: list[Pod] = field(default_factory=list)  # arriving
    bound: list[tuple[Pod, str]] = field(default_factory=list)  # running
    banked: dict[str, float] = field(default_factory=dict)  # GPU-seconds from earlier runs
    now: float = 0.0
    binds: dict[str, str] = field(default_factory=dict)
    victims: dict[str, str] = field(default_factory=dict)  # evicted pod → preemptor


def session(row: Row, **arguments: object) -> Scheduler:
    s = scheduler(
        [node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU) for i in range(row.nodes)],
        cfg(**arguments),
    )
    for p, where in row.bound:
        s.place_bound(p, where)
    for name, service in row.banked.items():
        plugin(s).services[f"default/{name}"] = Service(banked=service)
    for p in row.pods:
        s.submit(p)
    binds = {b.pod.name: b.node for b in s.run_session(row.now)}
    assert binds == row.binds
    assert {e.pod.name: e.reason for e in s.evictions} == {
        v: f"preempted by default/{by}" for v, by in row.victims.items()
    }
    return s


ROWS = {
    "a new job (level 0) evicts a job past 3,250 GPU-seconds (level 1)": Row(
        1,
        pods=[job("new", 8, submit=500)],
        bound=[(job("old", 8, start=0), "n0")],  # 8 GPUs × 500 s = 4,000
        now=500,
        binds={"new": "n0"},
        victims={"old": "new"},
    ),
    "within level 0 nobody is evicted (3,200 GPU-seconds)": Row(
        1,
        pods=[job("new", 8, submit=400)],
        bound=[(job("old", 8, start=0), "n0")],
        now=400,
    ),
    "exactly 3,250 GPU-seconds is level 1": Row(
        1,
        pods=[job("new", 1, submit=3250)],
        bound=[(job("old", 8, start=3250 - 3250 / 8), "n0")],
        now=3250,
        binds={"new": "n0"},
        victims={"old": "new"},
    ),
    "one GPU runs 3,249 s and stays in level 0": Row(
        1,
        pods=[job("new", 8, submit=3249)],
        bound=[(job("old", 1, start=0), "n0")],
        now=3249,
    ),
    "a waiting job of level 1 evicts a level 2 job": Row(
        1,
        pods=[job("back", 8, submit=0)],
        bound=[(job("long", 8, start=0), "n0")],  # 8,000: level 2
        banked={"back": 4000},
        now=1000,
        binds={"back": "n0"},
        victims={"long": "back"},
    ),
    "a waiting job of level 2 never evicts a level 1 job": Row(
        1,
        pods=[job("back", 8, submit=0)],
        bound=[(job("mid", 8, start=0), "n0")],  # 4,000: level 1
        banked={"back": 8000},
        now=500,
    ),
    "service earlier runs attained counts (banked 3,000 + 8 × 50 s)": Row(
        1,
        pods=[job("new", 8, submit=50)],
        bound=[(job("old", 8, start=0), "n0")],
        banked={"old": 3000},
        now=50,
        binds={"new": "n0"},
        victims={"old": "new"},
    ),
    "the victim is the lowest level, on whichever node it runs": Row(
        2,
        pods=[job("new", 8, submit=2000)],
        bound=[(job("mid", 8, start=1500), "n0"), (job("low", 8, start=0), "n1")],
        now=2000,  # mid: 4,000 (level 1), low: 16,000 (level 2)
        binds={"new": "n1"},
        victims={"low": "new"},
    ),
    "within a level the later arrival gives way first": Row(
        2,
        pods=[job("new", 8, submit=2000)],
        bound=[
            (job("first", 8, submit=0, start=1000), "n0"),
            (job("second", 8, submit=10, start=1000), "n1"),
        ],
        now=2000,
        binds={"new": "n1"},
        victims={"second": "new"},
    ),
    "idle room first: nobody is evicted": Row(
        2,
        pods=[job("new", 8, submit=2000)],
        bound=[(job("low", 8, start=0), "n0")],
        now=2000,
        binds={"new": "n1"},
    ),
    "several victims when one is not enough": Row(
        1,
        pods=[job("new", 8, submit=5000)],
        bound=[(job("a", 4, start=0), "n0"), (job("b", 4, start=0), "n0")],
        now=5000,
        binds={"new": "n0"},
        victims={"a": "new", "b": "new"},
    ),
    "only as many victims as needed, the later arrival": Row(
        1,
        pods=[job("new", 4, submit=5000)],
        bound=[(job("a", 4, submit=0, start=0), "n0"), (job("b", 4, submit=1, start=0), "n0")],
        now=5000,
        binds={"new": "n0"},
        victims={"b": "new"},
    ),
    "levels first, then arrival: of two waiting jobs the level 0 one runs": Row(
        1,
        pods=[job("early", 8, submit=0), job("late", 8, submit=100)],
        banked={"early": 5000},
        now=100,
        binds={"late": "n0"},
    ),
    "same level: the earlier arrival runs": Row(
        1,
        pods=[job("late", 8, submit=100), job("early", 8, submit=0)],
        now=100,
        binds={"early": "n0"},
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_order_and_preemption(name: str) -> None:
    session(ROWS[name])


def test_thresholds_are_an_argument() -> None:
    # With one threshold of 100 GPU-seconds, 8 GPUs × 20 s is already level 1.
    row = Row(
        1,
        pods=[job("new", 8, submit=20)],
        bound=[(job("old", 8, start=0), "n0")],
        now=20,
        binds={"new": "n0"},
        victims={"old": "new"},
    )
    session(row, queueThresholds=[100])
    assert Tiresias().thresholds == DEFAULT_THRESHOLDS == (3250.0, 7200.0)


@pytest.mark.parametrize(
    ("service", "level"),
    [(0, 0), (3249.9, 0), (3250, 1), (7199, 1), (7200, 2), (1e9, 2)],
)
def test_levels_of_dlas_gpu(service: float, level: int) -> None:
    assert Tiresias().level_of(service) == level


@pytest.mark.parametrize(
    "arguments",
    [
        {"queueThresholds": []},
        {"queueThresholds": [7200, 3250]},
        {"queueThresholds": [0]},
        {"queueThresholds": ["x"]},
        {"queueThresholds": 3250},
        {"promoteKnob": -1},
        {"promoteKnob": "x"},
    ],
)
def test_bad_arguments(arguments: dict) -> None:
    with pytest.raises(PluginArgumentError, match="plugin tiresias: argument"):
        Tiresias(arguments)


# -- the starvation guard (promoteKnob) -----------------------------------------------------------

GUARD = [
    # (knob, ran since its first run, waited since, promoted?)
    (0, 1000, 1e9, False),  # off: dlas-gpu
    (2, 1000, 1999, False),
    (2, 1000, 2000, True),  # waited ≥ 2 × ran
    (0.5, 1000, 500, True),
]


@pytest.mark.parametrize(("knob", "ran", "waited", "promoted"), GUARD)
def test_guard(knob: float, ran: float, waited: float, promoted: bool) -> None:
    """A 4-GPU job that ran ``ran`` s from t=0 (level 1 or 2) and has waited ``waited`` s since,
    beside a level-0 job holding the node: promoted, it is level 0 like the runner and waits
    (same level); not promoted, it stays below."""
    s = Scheduler(cfg(promoteKnob=knob))
    s.add_node(node("n0", cpu=64000, mem=65536, gpu=8 * GPU))
    s.place_bound(job("runner", 8, start=ran + waited - 10), "n0")
    tiresias = plugin(s)
    tiresias.services["default/waiter"] = Service(banked=4 * ran, first_run=0.0)
    tiresias.waiting.add("default/waiter")
    waiter = job("waiter", 4, submit=0)
    s.submit(waiter)
    s.run_session(ran + waited)
    assert (tiresias.level(s.jobs["default/waiter"]) == 0) is promoted
    assert tiresias.promotions("default/waiter") == int(promoted)
    assert not s.evictions


def test_promotion_counts_service_afresh() -> None:
    """Promoted, a job's level counts only what it attains from then on."""
    t = Tiresias({"promoteKnob": 1})
    t.services["default/j"] = record = Service(banked=5000, first_run=0.0)
    record.reset = record.banked
    assert t.level_of(record.banked - record.reset) == 0


# -- wake-ups --------------------------------------------------------------------------------------


def test_next_change_is_the_next_demotion_that_matters() -> None:
    """A level-0 job waits; the running level-0 job of 8 GPUs that has attained 800
    GPU-seconds reaches 3,250 in ceil(2,450 / 8) = 307 s."""
    s = Scheduler(cfg())
    s.add_node(node("n0", cpu=64000, mem=65536, gpu=8 * GPU))
    s.place_bound(job("run", 8, start=0), "n0")
    s.submit(job("wait", 8, submit=100))
    s.run_session(100)
    assert not s.evictions
    assert s.wake_at == 100 + 307
    s.run_session(407)
    assert [e.pod.name for e in s.evictions] == ["run"]


def test_no_wake_up_without_waiting_jobs() -> None:
    s = Scheduler(cfg())
    s.add_node(node("n0", cpu=64000, mem=65536, gpu=8 * GPU))
    s.submit(job("run", 8, submit=0))
    s.run_session(0)
    assert s.wake_at is None


def test_gang_victims_go_whole() -> None:
    """A two-node gang of level 2 gives way whole to a level-0 job that needs one node."""
    s = Scheduler(cfg())
    for i in range(2):
        s.add_node(node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU))
    s.add_group(PodGroup("big", min_member=2))
    for i in range(2):
        s.place_bound(
            pod(f"big-{i}", cpu=100, mem=1, gpu=8 * GPU, group="big", start_time=0), f"n{i}"
        )
    s.submit(job("new", 8, submit=1000))
    binds = {b.pod.name: b.node for b in s.run_session(1000)}
    assert set(binds) == {"new"}
    assert sorted(e.pod.name for e in s.evictions) == ["big-0", "big-1"]
