"""Properties of queueing, preemption and reclaim on random clusters, queues and two waves of
jobs: what runs first, then what arrives and may evict it.

Checked against bookkeeping of their own, kept from the binds and evictions each session
returns: queue capabilities hold, a preemption never evicts a job at least as important as the
preemptor, gangs are never left partly bound, and a discarded statement leaves every piece of
state (cluster arrays, jobs, queue totals, plugin shares) exactly as it found it.
"""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.actions import gang_turn
from berth.actions.eviction import Evictor
from berth.actions.eviction_turn import running_by_queue
from berth.api.objects import Node, Pod, PodGroup, Queue
from berth.framework.config import parse_config
from berth.framework.queues import padded
from berth.framework.scheduler import Scheduler
from berth.framework.session import Session
from berth.plugins.queue_share import QueueShare
from tests.builders import session_of
from tests.properties.generators import check_holding

SETTINGS = settings(max_examples=50, deadline=None)
ACTIONS = "enqueue, allocate, preempt, reclaim, backfill"
QUEUES = ("a", "b", "c")


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    plugin = draw(st.sampled_from(["proportion", "capacity"]))
    hierarchy = plugin == "capacity" and draw(st.booleans())
    queues = []
    for name in QUEUES:
        queues.append(
            {
                "name": name,
                "weight": draw(st.integers(1, 3)),
                "capability": draw(st.sampled_from([None, 2000, 4000, 8000])),
                "deserved": draw(st.sampled_from([0, 1000, 2000, 4000])),
                "guarantee": draw(st.sampled_from([0, 0, 1000])),
                "reclaimable": draw(st.booleans()),
                "parent": "org" if hierarchy and name != "c" else "",
            }
        )
    waves = []
    for wave in range(2):
        jobs = []
        for index in range(draw(st.integers(1, 5))):
            min_member = draw(st.integers(1, 3))
            jobs.append(
                {
                    "name": f"w{wave}-{index}",
                    "queue": draw(st.sampled_from(QUEUES)),
                    "priority": draw(st.integers(0, 3)),
                    "min_member": min_member,
                    "members": min_member + draw(st.integers(0, 2)),
                    "cpu": draw(st.sampled_from([500, 1000, 2000])),
                    "preemptable": draw(st.integers(0, 4)) > 0,
                }
            )
        waves.append(jobs)
    return {
        "plugin": plugin,
        "drf": draw(st.booleans()),
        "org_capability": draw(st.sampled_from([None, 4000, 6000])) if hierarchy else None,
        "nodes": draw(st.lists(st.sampled_from([2000, 4000, 8000]), min_size=1, max_size=4)),
        "queues": queues,
        "waves": waves,
    }


def build(scenario: dict[str, Any], gang_votes: bool = True) -> Scheduler:
    """The scenario's scheduler; without ``gang_votes`` gang has no say on victims, and with
    no drf every plugin left judges each victim alone."""
    plugins: list[dict[str, Any]] = [
        {"name": "priority"},
        {"name": "gang", "enablePreemptable": gang_votes, "enableReclaimable": gang_votes},
        {"name": "conformance"},
        {"name": scenario["plugin"]},
        {"name": "resource-fit"},
        {"name": "least-allocated"},
    ]
    if scenario["drf"]:
        plugins.insert(2, {"name": "drf"})
    config = parse_config({"actions": ACTIONS, "tiers": [{"plugins": plugins}]}, "test")
    s = Scheduler(config)
    for i, cpu in enumerate(scenario["nodes"]):
        s.add_node(Node(f"n{i}", allocatable={"cpu": cpu, "memory": 65536, "pods": 110}))
    if any(q["parent"] for q in scenario["queues"]):
        cap = scenario["org_capability"]
        s.add_queue(Queue("org", capability={"cpu": cap} if cap else {}))
    for q in scenario["queues"]:
        s.add_queue(
            Queue(
                q["name"],
                weight=q["weight"],
                capability={"cpu": q["capability"]} if q["capability"] else {},
                deserved={"cpu": q["deserved"]},
                guarantee={"cpu": q["guarantee"]},
                reclaimable=q["reclaimable"],
                parent=q["parent"],
            )
        )
    return s


def submit(s: Scheduler, jobs: list[dict[str, Any]], now: float) -> None:
    for job in jobs:
        s.add_group(
            PodGroup(
                job["name"],
                min_member=job["min_member"],
                queue=job["queue"],
                priority=job["priority"],
                submit_time=now,
                preemptable=job["preemptable"],
            )
        )
        for i in range(job["members"]):
            s.submit(
                Pod(
                    f"{job['name']}-{i}",
                    requests={"cpu": job["cpu"], "pods": 1},
                    group=job["name"],
                    priority=job["priority"],
                    submit_time=now,
                )
            )


class Ledger:
    """Who is bound, kept from the session results alone."""

    def __init__(self, s: Scheduler) -> None:
        self.scheduler = s
        self.bound: dict[str, Pod] = {}

    def session(self, now: float) -> None:
        s = self.scheduler
        binds = s.run_session(now)
        for eviction in s.evictions:
            assert eviction.pod.key in self.bound, f"{eviction.pod.key} evicted but not bound"
            del self.bound[eviction.pod.key]
            self.check_preemption(eviction.pod, eviction.reason)
        for bind in binds:
            assert bind.pod.key not in self.bound
            self.bound[bind.pod.key] = bind.pod
        self.check_capabilities()
        self.check_gangs()
        check_holding(s)

    def group(self, pod: Pod) -> PodGroup:
        return self.scheduler.jobs[f"{pod.namespace}/{pod.group}"].group

    def check_preemption(self, victim: Pod, reason: str) -> None:
        assert reason.startswith(("preempted by ", "reclaimed by queue ")), reason
        victim_group = self.group(victim)
        assert victim.preemptable and victim_group.preemptable
        if reason.startswith("preempted by "):
            preemptor = self.scheduler.jobs[reason.removeprefix("preempted by ")].group
            assert victim_group.priority < preemptor.priority, (victim.key, reason)
            assert victim_group.queue == preemptor.queue
        else:
            queue = self.scheduler.queues[victim_group.queue]
            assert queue.reclaimable
            assert queue.name != reason.removeprefix("reclaimed by queue ")

    def check_capabilities(self) -> None:
        s = self.scheduler
        used: Counter[str] = Counter()
        for pod in self.bound.values():
            queue = self.group(pod).queue
            while queue:
                used[queue] += pod.requests["cpu"]
                queue = s.queues[queue].parent
        for name, queue in s.queues.items():
            limit = queue.capability.get("cpu")
            if limit is not None:
                assert used[name] <= limit, f"queue {name} holds {used[name]} > {limit}"

    def check_gangs(self) -> None:
        counts = Counter(f"{p.namespace}/{p.group}" for p in self.bound.values())
        for key, job in self.scheduler.jobs.items():
            assert counts[key] == job.active
            assert counts[key] == 0 or counts[key] >= job.group.min_member, key


@given(scenario=scenarios())
@SETTINGS
def test_sessions_keep_capabilities_priorities_and_gangs(scenario):
    s = build(scenario)
    ledger = Ledger(s)
    submit(s, scenario["waves"][0], 0.0)
    ledger.session(0.0)
    submit(s, scenario["waves"][1], 1.0)
    for now in (1.0, 2.0, 3.0):
        ledger.session(now)


def snapshot(s: Scheduler, session: Session) -> tuple:
    state = s.state
    n, width = state.n, state.width
    shares = [
        plugin.used.copy() for plugin in s.framework.plugins if isinstance(plugin, QueueShare)
    ]
    return (
        state.requested[:n].copy(),
        state.free[:n].copy(),
        state.usage[:n].copy(),
        state.total_requested(),
        [sorted(pods) for pods in state.pods_on],
        {k: v[:n].copy() for k, v in state.selector_counts.items()},
        # A queue first charged inside the statement keeps a zero total: the same state.
        {name: padded(v, width).tolist() for name, v in s.queue_allocated.items() if v.any()},
        {
            key: (
                sorted(job.bound),
                job.allocated,
                padded(job.held, width).tolist(),
                len(job.pending),
            )
            for key, job in s.jobs.items()
        },
        shares,
        len(session.binds),
        len(session.evictions),
    )


def same(left: tuple, right: tuple) -> None:
    for a, b in zip(left, right, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        elif isinstance(a, dict):
            assert a.keys() == b.keys()
            for key in a:
                if isinstance(a[key], np.ndarray):
                    np.testing.assert_array_equal(a[key], b[key])
                else:
                    assert a[key] == b[key], key
        elif isinstance(a, list) and a and isinstance(a[0], np.ndarray):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y)
        else:
            assert a == b


@given(scenario=scenarios(), data=st.data())
@SETTINGS
def test_a_discarded_eviction_statement_leaves_no_trace(scenario, data):
    s = build(scenario)
    submit(s, scenario["waves"][0], 0.0)
    s.run_session(0.0)
    submit(s, scenario["waves"][1], 1.0)
    session = session_of(s, 1.0)
    before = snapshot(s, session)
    statement = session.statement()
    running = running_by_queue(session)
    victims = [job for jobs in running.values() for job in jobs]
    point = data.draw(st.sampled_from(["preemptable", "reclaimable"]))
    evictor = Evictor(session, point)
    for job in list(s.waiting.values()):
        for pod in job.pending:
            cls = s.search.compile(pod)
            row = s.search.place(cls)
            if row is not None and data.draw(st.booleans()):
                statement.allocate(job, pod, row, cls)
            else:
                evictor.place(statement, job, pod, cls, victims, "test")
        for victim in data.draw(
            st.lists(st.sampled_from(victims), max_size=2) if victims else st.just([])
        ):
            for pod in list(victim.bound.values())[:1]:
                statement.evict(victim, pod, "test")
    statement.discard()
    same(before, snapshot(s, session))


def _decisions(scenario: dict[str, Any], *patches: Any) -> list[tuple]:
    """Every session's binds and evictions, without gang's vote on victims."""
    s = build({**scenario, "drf": False}, gang_votes=False)
    decisions = []
    with ExitStack() as stack:
        for patched in patches:
            stack.enter_context(patched)
        for now, wave in ((0.0, 0), (1.0, 1), (2.0, None), (3.0, None)):
            if wave is not None:
                submit(s, scenario["waves"][wave], now)
            binds = s.run_session(now)
            decisions.append(
                (
                    [(b.pod.key, b.node) for b in binds],
                    [(e.pod.key, e.node, e.reason) for e in s.evictions],
                )
            )
    return decisions


def _rebuilt(evictor: Evictor, victim_jobs: list, best_effort: bool) -> Any:
    evictor._victims = None
    return _VICTIMS_OF(evictor, victim_jobs, best_effort)


_VICTIMS_OF = Evictor._victims_of


@pytest.mark.from_source  # patches the compiled group (tests/conftest.py)
@given(scenario=scenarios())
@SETTINGS
def test_the_placing_actions_decide_alike_with_their_shortcuts_and_without(scenario):
    """The victim table kept between tasks, the nodes passed over where the victim plugins
    judge each pod alone, and the classes allocate knows have no node change what is
    computed, not what is decided."""
    plain = _decisions(
        scenario,
        patch.object(Session, "allowed_anywhere", lambda *_: None),
        patch.object(Evictor, "_victims_of", _rebuilt),
        patch.object(gang_turn, "_nodeless", lambda _: None),
    )
    assert _decisions(scenario) == plain
