"""With reservation on, over many sessions on random clusters and workloads in which pods leave
their nodes when their duration is up: no node is over-committed, gangs stay whole, a pod is
placed on a held node only if it belongs to the held job or ends by the shadow time, a hold is
always for a job still short of minMember, and the same run twice gives the same placements."""

from __future__ import annotations

import copy
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.framework.config import DEFAULT_CONFIG, parse_config
from berth.framework.scheduler import Scheduler
from berth.framework.session import Session
from berth.plugins.reservation import Reservation

from .generators import (
    BindRecorder,
    build_manifests,
    check_accounting,
    check_counters,
    clusters,
    plain_pod,
    populate,
    queue_of,
    workloads,
)

SETTINGS = settings(max_examples=40, deadline=None)


def _config(wait: str, actions: str):
    raw = copy.deepcopy(DEFAULT_CONFIG)
    raw["actions"] = actions
    raw["tiers"][0]["plugins"].append(
        {"name": "reservation", "arguments": {"reservation.waitTime": wait}}
    )
    return parse_config(raw, "test")


def _job(name: str, cpu: int, duration: float | None, submit: float, size: int = 1) -> dict:
    pod = plain_pod(cpu, duration)
    return {
        "name": name,
        "namespace": "default",
        "queue": "default",
        "group_delay": 0.0,
        "gang": size > 1,
        "min_member": size,
        "submit": submit,
        "pods": [dict(pod) for _ in range(size)],
    }


def _contention(cluster, size: int, durations: list[float]) -> list[dict]:
    """A gang of pods as big as the smallest schedulable node (as many as there are such
    nodes at most), submitted at t=3 behind a stream of half-node pods, one every 20 s: it
    starves until nodes drain. Nothing on a cluster without schedulable nodes."""
    nodes = [spec for spec in cluster if not spec["unschedulable"]]
    if not nodes:
        return []
    cpu = min(spec["cpu"] for spec in nodes)
    stream = [_job(f"stream-{i}", cpu // 2, d, 20.0 * i) for i, d in enumerate(durations)]
    return stream + [_job("starving", cpu, 100.0, 3.0, min(size, len(nodes)))]


def _run(cluster, jobs, wait, actions):
    """Sessions at every arrival and expected end; returns the binds, in order, with the
    placements Session.place chose and the hold standing when it chose them."""
    manifests = build_manifests(cluster, jobs)
    scheduler = Scheduler(_config(wait, actions))
    recorder = BindRecorder(scheduler.state, queue_of(manifests))
    populate(scheduler, manifests)
    plugin = next(p for p in scheduler.framework.plugins if isinstance(p, Reservation))
    min_member = {g.key: g.min_member for g in manifests.groups}
    placements = []
    original = Session.place

    def place(session, job, pod, cls):
        row = original(session, job, pod, cls)
        placements.append((session.hold, job, pod, row, session.now))
        return row

    Session.place = place  # type: ignore[method-assign]
    try:
        times = {p.submit_time for p in manifests.pods}
        running, binds, per_group = [], [], Counter()
        while times:
            now = min(times)
            times.discard(now)
            for pod in [p for p in running if p.start_time + p.duration <= now]:
                scheduler.release(pod)
                running.remove(pod)
            for pod in manifests.pods:
                if pod.submit_time == now:
                    scheduler.submit(pod)
            for bind in scheduler.run_session(now):
                binds.append((bind.pod.key, bind.node, now))
                per_group[f"{bind.pod.namespace}/{bind.pod.group}"] += 1
                bind.pod.start_time = now
                if bind.pod.duration is not None:
                    running.append(bind.pod)
                    times.add(now + bind.pod.duration)
            check_accounting(scheduler.state)
            check_counters(scheduler.state)
            assert recorder.violations == []
            for key, count in per_group.items():
                assert count == 0 or count >= min_member.get(key, 1), key
            if plugin.hold is not None:
                job = scheduler.waiting[plugin.hold.job]
                assert job.active < max(job.group.min_member, 1)
    finally:
        Session.place = original  # type: ignore[method-assign]
    return binds, placements


@pytest.mark.from_source  # audits by patching the compiled ClusterState or Scheduler
@given(
    cluster=clusters(max_nodes=6),
    jobs=workloads(max_jobs=10),
    size=st.integers(1, 3),
    durations=st.lists(st.sampled_from([15.0, 50.0, 120.0]), min_size=2, max_size=8),
    wait=st.sampled_from(["0", "30s", "2m"]),
    actions=st.sampled_from(["enqueue, allocate, backfill", "allocate, backfill"]),
)
@SETTINGS
def test_reservation_keeps_capacity_gangs_and_its_promise(
    cluster, jobs, size, durations, wait, actions
):
    jobs = jobs + _contention(cluster, size, durations)
    binds, placements = _run(cluster, jobs, wait, actions)
    for hold, job, pod, row, now in placements:
        if hold is not None and row is not None and hold.holds(row):
            assert hold.lets(job, pod, now), (pod.key, hold)
    assert _run(cluster, jobs, wait, actions)[0] == binds
