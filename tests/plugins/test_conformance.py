"""conformance: system pods (kube-system, the system priority classes) are never victims."""

from __future__ import annotations

import pytest

from berth.api.objects import Queue
from tests.builders import GANG, Case, check, config, node, pod, queued

CRITICAL = {
    "kube-system namespace": {"namespace": "kube-system"},
    "system-cluster-critical": {"priority_class_name": "system-cluster-critical"},
    "system-node-critical": {"priority_class_name": "system-node-critical"},
}


def victim(**fields) -> tuple:
    return (pod("victim", cpu=4000, mem=0, **fields), "n")


@pytest.mark.parametrize("fields", CRITICAL.values(), ids=CRITICAL.keys())
@pytest.mark.parametrize("with_conformance", [True, False], ids=["conformance", "without"])
def test_preempt_spares_system_pods(fields, with_conformance):
    plugins = ["priority", GANG, "resource-fit"] + (["conformance"] if with_conformance else [])
    evicted = {} if with_conformance else {"victim": "preempted by default/urgent"}
    check(
        Case(
            [node("n", cpu=4000)],
            pods=[pod("urgent", cpu=1000, mem=0, priority=10)],
            bound=[victim(**fields)],
            binds={} if with_conformance else {"urgent": "n"},
            evictions=evicted,
        ),
        config(plugins, actions="enqueue, allocate, preempt"),
    )


def test_ordinary_pods_are_still_victims():
    check(
        Case(
            [node("n", cpu=4000)],
            pods=[pod("urgent", cpu=1000, mem=0, priority=10)],
            bound=[victim()],
            binds={"urgent": "n"},
            evictions={"victim": "preempted by default/urgent"},
        ),
        config(
            ["priority", GANG, "conformance", "resource-fit"], actions="enqueue, allocate, preempt"
        ),
    )


@pytest.mark.parametrize(
    "fields,evicted",
    [
        ({"namespace": "kube-system"}, {}),
        ({}, {"victim": "reclaimed by queue b"}),
    ],
    ids=["system pod kept", "ordinary pod reclaimed"],
)
def test_reclaim_spares_system_pods(fields, evicted):
    held = queued(pod("victim", cpu=4000, mem=0, **fields), "a")
    check(
        Case(
            [node("n", cpu=4000)],
            pods=[queued(pod("b0", cpu=2000, mem=0), "b")],
            bound=[(held, "n")],
            queues=[Queue("a"), Queue("b")],
            binds={"b0": "n"} if evicted else {},
            evictions=evicted,
        ),
        config(
            [GANG, "conformance", "proportion", "resource-fit"],
            actions="enqueue, allocate, reclaim",
        ),
    )
