"""A job with many pending pods keeps its task order between sessions (``TaskOrder``): pods
that leave stay in its lists and are skipped, a hopeless class skips its run of pods at once,
and the order is made again when pods join. Ordering every job afresh each session, as a small
job is, must come to the same binds and the same reasons, session after session."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.actions import allocate
from berth.api.objects import PodGroup, Queue
from tests.builders import GANG, best_effort, config, node, pod, scheduler
from tests.properties.generators import session_outcome

# (cpu of the job's pods, its count of pods, priority of a pod)
shape = st.tuples(st.sampled_from([0, 500, 1000, 3000]), st.integers(1, 6), st.sampled_from([0, 1]))
job = st.tuples(st.lists(shape, min_size=1, max_size=4), st.integers(1, 8))  # pods, minMember
step = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 50), st.integers(0, 50)),  # a pod joins job k
    st.tuples(st.just("release"), st.integers(0, 200), st.just(0)),
    st.tuples(st.just("withdraw"), st.integers(0, 200), st.just(0)),
    st.tuples(st.just("session"), st.just(0), st.just(0)),
)


def build(cpus: list[int], jobs: list) -> tuple:
    s = scheduler(
        [node(f"n{i}", cpu=cpu) for i, cpu in enumerate(cpus)],
        config(["priority", GANG, "proportion", "resource-fit"], actions="enqueue, allocate"),
        queues=[Queue("a", weight=1), Queue("b", weight=2)],
    )
    pods: dict[int, list] = {}
    for index, (shapes, min_member) in enumerate(jobs):
        name = f"j{index}"
        queue = "ab"[index % 2]
        s.add_group(PodGroup(name, min_member=min_member, queue=queue, submit_time=index))
        pods[index] = []
        for cpu, count, priority in shapes:
            for _ in range(count):
                pods[index].append(_pod(name, len(pods[index]), cpu, priority))
    for index in pods:
        for p in pods[index]:
            s.submit(p)
    return s, pods


def _pod(job: str, k: int, cpu: int, priority: int):
    name = f"{job}-{k:03d}"
    if not cpu:
        return best_effort(name, group=job, priority=priority, submit_time=k % 3)
    return pod(name, cpu=cpu, mem=64, group=job, priority=priority, submit_time=k % 3)


def session(s, kept_from: int, now: float) -> tuple:
    with patch.object(allocate, "KEPT_ORDER", kept_from):
        return session_outcome(s, now)


@settings(max_examples=150, deadline=None)
@given(
    cpus=st.lists(st.sampled_from([2000, 4000, 8000]), min_size=1, max_size=3),
    jobs=st.lists(job, min_size=1, max_size=5),
    steps=st.lists(step, min_size=1, max_size=14),
)
def test_a_kept_task_order_places_as_a_fresh_one(cpus, jobs, steps):
    runs = [(build(cpus, jobs), kept_from) for kept_from in (2, 10**9)]
    now = 0.0
    for at, (kind, a, b) in enumerate([*steps, ("session", 0, 0)]):
        outcomes = []
        for (s, pods), kept_from in runs:
            if kind == "join":
                index = a % len(pods)
                joined = _pod(f"j{index}", 100 + at, [500, 1000, 0][b % 3], b % 2)
                pods[index].append(joined)
                s.submit(joined)
            elif kind in ("release", "withdraw"):
                every = [p for group in pods.values() for p in group]
                chosen = [p for p in every if bool(p.bound_node) == (kind == "release")]
                if chosen:
                    victim = chosen[a % len(chosen)]
                    if kind == "release":
                        s.release(victim)
                        victim.bound_node = ""
                    else:
                        s.withdraw(victim)
                    for group in pods.values():
                        if victim in group:
                            group.remove(victim)
            else:
                outcomes.append(session(s, kept_from, now))
        now += 10.0
        if outcomes:
            assert outcomes[0] == outcomes[1]


def test_a_placed_job_lets_go_of_its_order_and_tables():
    """Once a large job's pods are all placed and have ended, it keeps no list or table the
    size of its pods (a trace task's run to 15,000)."""
    s, pods = build([4000, 4000], [([(1000, 12, 0)], 1)])
    job = s.jobs["default/j0"]
    session(s, 2, 0.0)  # the first pods placed: the order is kept for the rest
    assert job.task_order is not None and len(job.pending) == 4
    for p in pods[0]:
        if p.bound_node:
            s.release(p)
    session(s, 2, 10.0)
    assert not job.pending and job.task_order is None
    assert job.pending._pods == {} and len(job.bound) == 4
