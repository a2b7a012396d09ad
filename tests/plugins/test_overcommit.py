"""overcommit: admit while the promised minResources fit the idle capacity stretched by
overcommit-factor; without it (or any deciding plugin) enqueue admits on idle capacity alone."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup
from tests.builders import Case, check, config, node, pod, run, scheduler

NODES = [node("n0"), node("n1")]  # 8 CPUs idle


def overcommit(factor: float | None = None) -> dict:
    arguments = {} if factor is None else {"overcommit-factor": factor}
    return {"name": "overcommit", "arguments": arguments}


def group(name: str, cpu: int, submit: float = 0.0) -> PodGroup:
    return PodGroup(name, min_member=1, min_resources={"cpu": cpu}, submit_time=submit)


CASES = {
    # plugin (None: no overcommit), minResources cpu, running cpu → phase, reason
    "default factor admits past idle": (overcommit(), 9000, 0, GroupPhase.INQUEUE, None),
    "default factor has a limit": (
        overcommit(),
        10000,
        0,
        GroupPhase.PENDING,
        "minResources exceed the idle capacity × 1.2: cpu needs 10, 9.6 idle",
    ),
    "factor 2": (overcommit(2), 16000, 0, GroupPhase.INQUEUE, None),
    "running pods are not idle": (
        overcommit(),
        7000,
        3000,
        GroupPhase.PENDING,
        "minResources exceed the idle capacity × 1.2: cpu needs 7, 6.6 idle",
    ),
    "without the plugin, idle only": (
        None,
        9000,
        0,
        GroupPhase.PENDING,
        "minResources exceed the idle capacity: cpu needs 9, 8 idle",
    ),
}


@pytest.mark.parametrize("plugin,cpu,running,phase,reason", CASES.values(), ids=CASES.keys())
def test_admission(plugin, cpu, running, phase, reason):
    plugins = ["gang", "resource-fit"] + ([plugin] if plugin else [])
    bound = [(pod("busy", cpu=running, mem=0), "n0")] if running else []
    check(
        Case(
            NODES,
            pods=[pod("g-0", cpu=100, group="g")],
            bound=bound,
            groups=[group("g", cpu)],
            phases={"g": phase},
            reasons={"g-0": reason} if reason else {},
        ),
        config(plugins, actions="enqueue"),
    )


def test_promised_capacity_counts_across_groups_and_sessions():
    cfg = config(["gang", "resource-fit", overcommit()], actions="enqueue")
    s = scheduler(NODES, cfg, groups=[group("a", 6000), group("b", 6000, submit=1.0)])
    pods = [pod(f"{g}-0", cpu=100, group=g) for g in "ab"]
    run(s, pods)
    phases = [s.jobs[f"default/{g}"].group.phase for g in "ab"]
    assert phases == [GroupPhase.INQUEUE, GroupPhase.PENDING]
    reason = "minResources exceed the idle capacity × 1.2: cpu needs 6, 3.6 idle"
    assert s.pending_reason(pods[1]) == reason
    run(s, now=1.0)  # a is admitted but not started: its promise still holds
    assert s.pending_reason(pods[1]) == reason


def test_a_resource_promised_past_idle_does_not_stop_jobs_that_need_none_of_it():
    """sla admits a late job whatever is idle: here 16 GPUs promised on a node with 8. A job
    asking only for CPU must still be admitted; one asking for a GPU must not."""
    sla = {"name": "sla", "arguments": {"sla-waiting-time": "1m"}}
    cfg = config([sla, "gang", "resource-fit"], actions="enqueue")
    gpu_node = node("g", cpu=8000, gpu=8000)
    late = PodGroup("late", min_member=2, min_resources={"nvidia.com/gpu": 16000})
    late_pods = [pod(f"late-{i}", cpu=100, gpu=8000, group="late") for i in range(2)]
    cpu_job = PodGroup("cpu", min_resources={"cpu": 1000}, submit_time=600)
    gpu_job = PodGroup("gpu", min_resources={"nvidia.com/gpu": 1000}, submit_time=600)
    others = [pod("cpu-0", cpu=1000, group="cpu"), pod("gpu-0", cpu=100, gpu=1000, group="gpu")]
    s = check(
        Case(
            [gpu_node],
            pods=late_pods + others,
            groups=[late, cpu_job, gpu_job],
            phases={
                "late": GroupPhase.INQUEUE,
                "cpu": GroupPhase.INQUEUE,
                "gpu": GroupPhase.PENDING,
            },
            now=600,
        ),
        cfg,
    )
    assert s.pending_reason(others[1]) == (
        "minResources exceed the idle capacity: nvidia.com/gpu needs 1, 0 idle"
    )
