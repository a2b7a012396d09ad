"""A gang whose remaining pods are of one class is refused before any is placed when the turn
can only fail (``gang_turn._cannot_complete``): the nodes' room is short of what it needs, or
its queue refuses a pod before the gang is whole while the nodes (whose room is then exact:
resources and whole GPU devices) would hold it. Trying the pods one by one, placing some and
undoing them, must come to the same binds and the same reasons, session after session."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.actions import gang_turn
from berth.api.objects import PodGroup, Queue
from tests.builders import GANG, config, node, pod, scheduler
from tests.properties.generators import session_outcome, sessions_agree

# Patches the compiled group (tests/conftest.py).
pytestmark = pytest.mark.from_source

GPU = 1000
# (cpu per pod, whole GPUs per pod, GPU milli of a shared one, pods, minMember below the count)
job = st.tuples(
    st.sampled_from([500, 1000, 2000]),
    st.sampled_from([0, 1, 1, 2, 4]),
    st.sampled_from([0, 0, 0, 500]),
    st.integers(2, 8),
    st.integers(0, 2),
)
step = st.one_of(
    st.tuples(st.just("release"), st.integers(0, 200)),
    st.tuples(st.just("session"), st.just(0)),
)
capability = st.one_of(st.none(), st.none(), st.sampled_from([4, 8, 16]))


def _capability(cap: int | None, cpu: int | None) -> dict[str, int]:
    out = {} if cap is None else {"nvidia.com/gpu": cap * GPU}
    return out if cpu is None else {**out, "cpu": cpu}


def build(
    nodes: list[tuple[int, int]],
    jobs: list,
    capabilities: list,
    plugin: str,
    cpu: int | None = None,
    tree: bool = False,
) -> tuple:
    queues = [
        Queue(name, weight=weight, capability=_capability(cap, cpu if name == "a" else None),
              parent="org" if tree and name != "c" else "",
              guarantee={"cpu": 1000} if tree and name == "b" else {})
        for name, weight, cap in zip("abc", (1, 2, 1), capabilities, strict=True)
    ]  # fmt: skip
    if tree:  # capacity's hierarchy: a and b share org's capability, their use rolls up
        queues.append(Queue("org", capability=_capability(capabilities[0], 12000)))
    s = scheduler(
        [node(f"n{i}", cpu=cpu, gpu=gpus) for i, (cpu, gpus) in enumerate(nodes)],
        config(["priority", GANG, plugin, "resource-fit"], actions="enqueue, allocate"),
        queues=queues,
    )
    pods = []
    for index, (cpu, whole, share, count, short) in enumerate(jobs):
        name = f"j{index}"
        s.add_group(
            PodGroup(name, min_member=max(1, count - short), queue="abc"[index % 3],
                     submit_time=index)
        )  # fmt: skip
        for k in range(count):
            member = pod(f"{name}-{k}", cpu=cpu, mem=64, gpu=whole * GPU + share, group=name)
            pods.append(member)
            s.submit(member)
    return s, pods


def session(s, shortcut: bool, now: float) -> tuple:
    if shortcut:
        return session_outcome(s, now)
    with patch.object(gang_turn, "_cannot_complete", lambda *args: None):
        return session_outcome(s, now)


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(st.sampled_from([4000, 8000, 16000]), st.sampled_from([0, 4, 8])),
        min_size=1,
        max_size=5,
    ),
    jobs=st.lists(job, min_size=1, max_size=10),
    capabilities=st.lists(capability, min_size=3, max_size=3),
    plugin=st.sampled_from(["proportion", "capacity", "capacity-tree"]),
    cpu=st.one_of(st.none(), st.sampled_from([3000, 6000])),
    steps=st.lists(step, min_size=1, max_size=8),
)
def test_a_gang_refused_at_once_ends_as_one_tried_pod_by_pod(
    nodes, jobs, capabilities, plugin, cpu, steps
):
    tree = plugin == "capacity-tree"
    name = "capacity" if tree else plugin
    pair = [build(nodes, jobs, capabilities, name, cpu, tree) for _ in range(2)]
    sessions_agree(pair, steps, lambda s, pods, shortcut, now: session(s, shortcut, now))
