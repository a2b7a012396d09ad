"""A job whose every class asks more of some resource than any node has free gets no turn
(``BeyondEveryNode`` in ``berth.actions.ruled_out``), once its wait for nodes is explained.
That must come to what taking the turn comes to: the same binds, devices and reasons, and
the same reason kept for each waiting job and given to each pod once it is bound, session
after session, with gangs placed and undone in between, pods released and the nodes' free
changing."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.actions.ruled_out import BeyondEveryNode
from berth.api.objects import PodGroup, Queue
from berth.framework.search import NodeSearch
from berth.resources import MIB
from tests.builders import GANG, config, node, pod, scheduler
from tests.properties.generators import sessions_agree

# Patches the compiled group (tests/conftest.py).
pytestmark = pytest.mark.from_source

GPU = 1000
# (cpu per pod, whole GPUs per pod, pods, minMember below the count (None: 1), a best-effort
# pod last, priority)
job = st.tuples(
    st.sampled_from([500, 1000, 3000, 6000, 12000]),
    st.sampled_from([0, 0, 1, 4]),
    st.integers(1, 8),
    st.one_of(st.none(), st.integers(0, 2)),
    st.booleans(),
    st.sampled_from([0, 1]),
)
step = st.one_of(
    st.tuples(st.just("release"), st.integers(0, 500)),
    st.tuples(st.just("session"), st.just(0)),
)


def build(
    nodes: list[tuple[int, int]], jobs: list, queues: str, pods_per_node: int, cap: int | None
) -> tuple:
    # Memory a quarter of the cpu (MiB per millicore), so that a cap on both fills both at
    # once: the queue is then overused, and the jobs still in line are told so.
    limit = {} if cap is None else {"cpu": cap, "memory": cap // 4 * MIB}
    s = scheduler(
        [
            node(f"n{i}", cpu=cpu, mem=65536, gpu=gpus * GPU, pods=pods_per_node)
            for i, (cpu, gpus) in enumerate(nodes)
        ],
        config(
            ["priority", GANG, "proportion", "resource-fit", "least-allocated"],
            actions="enqueue, allocate",
        ),
        queues=[Queue("a", capability=limit), Queue("b", weight=2)],
    )
    pods = []
    for index, (cpu, gpus, count, short, idle, priority) in enumerate(jobs):
        name = f"j{index}"
        size = count + idle
        least = 1 if short is None else max(1, size - short)
        queue = queues[index % len(queues)]
        group = PodGroup(name, min_member=least, queue=queue, priority=priority)
        s.add_group(group)
        for k in range(size):
            ask = {"cpu": cpu, "mem": cpu // 4, "gpu": gpus * GPU}
            if k >= count:
                ask = {"cpu": 0, "mem": 0}
            member = pod(f"{name}-{k}", group=name, **ask)
            pods.append(member)
            s.submit(member)
    return s, pods


def outcome(s, pods, ruling_out: bool, now: float) -> tuple:
    if ruling_out:
        binds = s.run_session(now)
    else:
        with patch.object(BeyondEveryNode, "of", lambda session: None):
            binds = s.run_session(now)
    return (
        [(b.pod.name, b.node) for b in binds],
        {key: str(reason) for key, reason in s.last_reasons.given.items()},
        {key: str(reason) for key, reason in s.waited_for.items()},
        sorted((p.name, p.gpu_devices, p.waited_for) for p in pods if p.bound_node),
    )


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(st.sampled_from([2000, 4000, 8000, 16000]), st.sampled_from([0, 4, 8])),
        min_size=1,
        max_size=6,
    ),
    jobs=st.lists(job, min_size=1, max_size=8),
    steps=st.lists(step, min_size=1, max_size=8),
    queues=st.sampled_from(["ab", "a"]),
    pods_per_node=st.sampled_from([3, 110]),
    cap=st.one_of(st.none(), st.sampled_from([3000, 6000, 12000])),
)
def test_a_turn_ruled_out_changes_nothing(nodes, jobs, steps, queues, pods_per_node, cap):
    pair = [build(nodes, jobs, queues, pods_per_node, cap) for _ in range(2)]
    sessions_agree(pair, steps, outcome)


def two_full_nodes() -> tuple:
    """Two nodes of 4 cpus, filled by a job of two 4-cpu pods; two jobs of one such pod wait."""
    jobs = [(4000, 0, 2, None, False, 1), (4000, 0, 1, None, False, 0)]
    jobs.append((4000, 0, 1, None, False, 0))
    return build([(4000, 0), (4000, 0)], jobs, "a", 110, None)


def test_turns_are_ruled_out_on_a_full_cluster():
    """The property above would pass with no turn ever ruled out. Two nodes of 4 cpus: a job
    of two 4-cpu pods fills them, and two more wait. Their waits are explained in the first
    session, and their task orders kept from the second; from the third their turns are ruled
    out, and from the fourth they are parked: left out of the line, not asked. Once a node is
    free, a node has more free than their finding was told from, and the first waiting job is
    asked again (and its pod placed); after that placement the nodes are back at most at that
    most free, and the other job, still parked, is not asked (``berth.actions.parking``)."""
    s, pods = two_full_nodes()
    asked = []
    rules_out = BeyondEveryNode.rules_out

    def record(self, job):
        asked.append((job.key, rules_out(self, job)))
        return asked[-1][1]

    with patch.object(BeyondEveryNode, "rules_out", record):
        assert len(s.run_session(0.0)) == 2
        assert asked == []  # nothing explained yet
        assert s.run_session(10.0) == []
        asked.clear()
        assert s.run_session(20.0) == []
        assert asked == [("default/j1", True), ("default/j2", True)]
        asked.clear()
        assert s.run_session(25.0) == []
        assert asked == []
        s.release(pods[0])
        assert [b.pod.name for b in s.run_session(30.0)] == ["j1-0"]
    assert asked == [("default/j1", False)]
    assert "insufficient cpu" in str(s.waited_for["default/j2"])


def fill_the_queue(plugins: list, waiting: list[tuple[str, int, float]], fill: int) -> tuple:
    """One node of 8 cpus, queue a capped at 4 cpus and 1000 MiB. The ``waiting`` jobs (name,
    priority, submitted) ask 12 cpus, more than the node has: their waits are explained in
    the first session, their task orders kept in the second, and their turns ruled out in the
    third, which parks them. Then job fill (priority 1) brings ``fill`` pods of 1 cpu, and a
    fourth session runs: its outcome, the same with the turns of the waiting jobs ruled out
    (and the jobs parked) as with them taken."""
    outcomes = []
    for ruling_out in (True, False):
        s = scheduler(
            [node("n0", cpu=8000, mem=65536)],
            config(plugins, actions="enqueue, allocate"),
            queues=[Queue("a", capability={"cpu": 4000, "memory": 1000 * MIB})],
        )
        pods = []
        for name, priority, submitted in waiting:
            s.add_group(PodGroup(name, queue="a", priority=priority, submit_time=submitted))
            pods.append(pod(f"{name}-0", cpu=12000, mem=3000, group=name))
            s.submit(pods[-1])
        steps = [outcome(s, pods, ruling_out, now) for now in (0.0, 10.0, 15.0)]
        s.add_group(PodGroup("fill", queue="a", priority=1))
        for k in range(fill):
            pods.append(pod(f"fill-{k}", cpu=1000, mem=250, group="fill"))
            s.submit(pods[-1])
        steps.append(outcome(s, pods, ruling_out, 20.0))
        outcomes.append(steps)
    assert outcomes[0] == outcomes[1]
    return outcomes[0][-1]


@pytest.mark.parametrize("fill", [4, 5])
def test_a_job_ruled_out_is_told_its_queue_is_overused(fill):
    """A job whose turn is ruled out keeps its place in line: behind the one that fills its
    queue's capability, it is told the queue is overused; one before it is not. Both as when
    their turns are taken. Four pods fill the queue; with a fifth, the job filling it is
    left with a pod its queue refuses."""
    plugins = ["priority", GANG, "proportion", "resource-fit"]
    binds, reasons = fill_the_queue(plugins, [("big", 0, 0.0), ("first", 2, 0.0)], fill)[:2]
    assert [name for name, _ in binds] == [f"fill-{k}" for k in range(4)]
    assert reasons["default/big"] == "queue a is overused"
    assert "default/first" not in reasons


def test_a_job_ruled_out_and_served_before_the_queue_fills_is_not_told():
    """Under DRF's job order a job takes one pod per turn. After its first pod its share puts
    it behind a job of its priority whose turn is ruled out (submitted later), which is then
    served (to no effect) before its next turn: that job is no longer in line when the queue
    turns out overused, and is not told so, as when its turn is taken."""
    plugins = ["priority", GANG, "drf", "proportion", "resource-fit"]
    binds, reasons = fill_the_queue(plugins, [("big", 1, 5.0)], 5)[:2]
    assert [name for name, _ in binds] == [f"fill-{k}" for k in range(4)]
    assert reasons == {"default/fill": "queue a is overused"}


def test_a_job_ruled_out_keeps_the_finding_until_a_node_has_more_free():
    """Two full nodes as above. A job found to fit nowhere keeps the finding with its task order:
    in the next session its classes are not judged again. Once a pod ends, a node has more
    free than when the finding was made, and the first waiting job is judged again (and
    placed); after that placement no node has more free than before, and the other job's
    finding holds again."""
    s, pods = two_full_nodes()
    judged = []
    fits_nowhere = NodeSearch.fits_nowhere

    def record(self, cls, ceiling):
        judged.append(fits_nowhere(self, cls, ceiling))
        return judged[-1]

    with patch.object(NodeSearch, "fits_nowhere", record):
        for now in (0.0, 10.0, 20.0):
            s.run_session(now)
        assert judged == [True]  # one class for both jobs, judged once
        judged.clear()
        assert s.run_session(30.0) == []
        assert judged == []
        s.release(pods[0])
        assert [b.pod.name for b in s.run_session(40.0)] == ["j1-0"]
        assert judged == [False]  # j1's; j2's finding holds
        judged.clear()
        s.release(pods[1])
        assert [b.pod.name for b in s.run_session(50.0)] == ["j2-0"]
        assert judged == [False]
