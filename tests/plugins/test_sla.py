"""sla: jobs past their waiting-time SLA go first and are admitted whatever the idle check or
overcommit say (from an earlier tier)."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup
from berth.framework.config import parse_config
from tests.builders import Case, check, config, node, pod, run, scheduler

NODES = [node("n", cpu=4000)]


def group(name: str, submit: float, sla: str | None = None, cpu: int = 0) -> PodGroup:
    annotations = {"sla-waiting-time": sla} if sla else {}
    return PodGroup(
        name,
        min_member=1,
        min_resources={"cpu": cpu} if cpu else {},
        submit_time=submit,
        annotations=annotations,
    )


ORDER_CASES = {
    # groups (name, submit, annotation), plugin argument → winner of the one free slot
    "past its SLA goes first": ([("old", 0.0, None), ("late", 100.0, "10m")], None, "late-0"),
    "earlier deadline first": ([("a", 0.0, "1h"), ("b", 100.0, "10m")], None, "b-0"),
    "no SLA anywhere: arrival": ([("a", 0.0, None), ("b", 100.0, None)], None, "a-0"),
    "plugin argument for every job": ([("a", 0.0, "2h"), ("b", 100.0, None)], "30m", "b-0"),
    "a bad annotation keeps the argument": ([("a", 0.0, "soon"), ("b", 100.0, "2h")], "30m", "a-0"),
}


@pytest.mark.parametrize("groups,argument,winner", ORDER_CASES.values(), ids=ORDER_CASES.keys())
def test_job_order(groups, argument, winner):
    sla = {"name": "sla", "arguments": {"sla-waiting-time": argument} if argument else {}}
    pgs = [group(name, submit, annotation) for name, submit, annotation in groups]
    pods = [pod(f"{g.name}-0", cpu=4000, mem=0, group=g.name) for g in pgs]
    check(
        Case(NODES, pods=pods, groups=pgs, binds={winner: "n"}, now=7200.0),
        config([sla, "resource-fit"]),
    )


def tiers(*tiers: list) -> object:
    return parse_config(
        {
            "actions": "enqueue",
            "tiers": [
                {"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]}
                for tier in tiers
            ],
        },
        "test",
    )


@pytest.mark.parametrize(
    "cfg,admitted",
    [
        (tiers(["gang", "sla"], ["overcommit", "resource-fit"]), True),
        (tiers(["gang", "sla", "resource-fit"]), True),
        (tiers(["gang", "sla", "overcommit", "resource-fit"]), False),
    ],
    ids=["sla tier before overcommit", "sla over the idle check", "same tier: refusal wins"],
)
def test_overdue_jobs_are_admitted_regardless(cfg, admitted):
    s = scheduler(NODES, cfg, groups=[group("huge", 0.0, "1h", cpu=100_000)])
    p = pod("huge-0", cpu=100, group="huge")
    run(s, [p], now=60.0)
    assert s.jobs["default/huge"].group.phase == GroupPhase.PENDING
    assert s.pending_reason(p).startswith("minResources exceed the idle capacity")
    run(s, now=3600.0)
    expected = GroupPhase.INQUEUE if admitted else GroupPhase.PENDING
    assert s.jobs["default/huge"].group.phase == expected


def test_implicit_groups_take_the_pod_annotation():
    old = pod("old", cpu=4000, mem=0, submit_time=0.0)
    late = pod("late", cpu=4000, mem=0, submit_time=100.0, annotations={"sla-waiting-time": "1m"})
    check(
        Case(NODES, pods=[old, late], binds={"late": "n"}, now=600.0),
        config(["sla", "resource-fit"]),
    )
