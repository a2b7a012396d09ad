"""The batch Job controller in the simulator: Job manifests in, pods and Job phases out.

Each case is a small cluster (nodes of 4 CPUs), one or more Jobs, and the pods and phases that
must come out, with their times: bind happens at the first session after submission, a pod
starts one second (the start latency) after its bind.
"""

from __future__ import annotations

from typing import Any

import pytest

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import JobPhase, PodPhase
from berth.framework.config import parse_config
from berth.framework.config_files import load_config
from berth.outputs import job_outcomes
from berth.sim.engine import SimConfig, SimConfigError, SimResult, Simulation

PREEMPTING = {
    # Without enqueue: a Job's group is admitted by allocate even when the cluster is full, so
    # its pods exist and can preempt (enqueue would hold it back until capacity is idle).
    "actions": "allocate, preempt, backfill",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False, "enableReclaimable": False},
            ]
        }
    ],
}


def nodes(count: int, cpu: int = 4) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {"allocatable": {"cpu": str(cpu), "memory": "16Gi", "pods": "110"}},
        }
        for i in range(count)
    ]


def task(
    name: str,
    replicas: int = 1,
    cpu: int = 1,
    duration: float | None = 100,
    annotations: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    notes = dict(annotations or {})
    if duration is not None:
        notes["berth.io/duration"] = str(duration)
    container = {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}
    return {
        "name": name,
        "replicas": replicas,
        "template": {"metadata": {"annotations": notes}, "spec": {"containers": [container]}},
        **extra,
    }


def job(name: str, tasks: list[dict[str, Any]], at: float = 0, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": {"berth.io/submit-time": str(at)}},
        "spec": {"tasks": tasks, **spec},
    }


def command(name: str, action: str, target: str, at: float) -> dict[str, Any]:
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": name, "annotations": {"berth.io/submit-time": str(at)}},
        "action": action,
        "target": {"kind": "Job", "name": target},
    }


def simulate(
    docs: list[dict[str, Any]],
    config: dict[str, Any] | None = None,
    until: float | None = None,
    seed: int = 0,
) -> SimResult:
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, manifests.errors
    scheduler_config = load_config(None) if config is None else parse_config(config, "test")
    sim_config = SimConfig.from_raw(scheduler_config.simulation, "test")
    simulation = Simulation(
        manifests, scheduler_config, seed=seed, until=until, sim_config=sim_config
    )
    return simulation.run()


def pods(result: SimResult) -> dict[str, tuple[str, float | None, float | None]]:
    """name → (phase, start, end)."""
    return {p.name: (str(p.phase), p.start_time, p.end_time) for p in result.pods}


def reason(result: SimResult, name: str) -> str:
    """Why the (last) pod of that name ended as it did."""
    pod = [p for p in result.pods if p.name == name][-1]
    return result.reasons[pod.ref]


def the_job(result: SimResult, name: str = "j"):
    return next(j for j in result.jobs if j.name == name)


def test_pods_are_created_only_once_the_group_is_admitted():
    # Two 4-CPU nodes; the job needs three whole nodes: enqueue never admits it, so no pod
    # exists, and the job says why it waits.
    result = simulate([*nodes(2), job("j", [task("t", replicas=3, cpu=4)])])
    assert result.pods == []
    assert the_job(result).phase == JobPhase.PENDING
    outcome = job_outcomes(result)["default/j"]
    assert outcome.tasks == 0
    assert "minResources" in outcome.reason or "idle" in outcome.reason


def test_indexed_names_labels_and_task_index():
    result = simulate([*nodes(2), job("j", [task("ps", 1), task("worker", 2)])])
    by_name = {p.name: p for p in result.pods}
    assert sorted(by_name) == ["j-ps-0", "j-worker-0", "j-worker-1"]
    worker = by_name["j-worker-1"]
    assert worker.labels["volcano.sh/job-name"] == "j"
    assert worker.labels["volcano.sh/task-spec"] == "worker"
    assert worker.annotations["volcano.sh/task-index"] == "1"
    assert worker.group == "j"
    # admitted at the first session (t=0), pods created then, bound at the next (t=1)
    assert pods(result)["j-worker-1"] == ("Succeeded", 2.0, 102.0)
    assert the_job(result).phase == JobPhase.COMPLETED
    assert [c[1] for c in the_job(result).conditions] == [
        JobPhase.PENDING,
        JobPhase.RUNNING,
        JobPhase.COMPLETED,
    ]
    group = result.groups[0]
    assert (group.start_time, group.end_time) == (2.0, 102.0)


def test_depends_on_waits_for_the_tasks_it_names():
    tasks = [
        task("driver", duration=10),
        task("ps", duration=200),
        task("worker", 2, dependsOn={"name": ["driver", "ps"]}),
    ]
    result = simulate([*nodes(2), job("j", tasks, minAvailable=2)])
    by_name = {p.name: p for p in result.pods}
    assert by_name["j-driver-0"].submit_time == 0.0
    # both run from t=2: the workers are created then, bound in the session that follows
    assert by_name["j-worker-0"].submit_time == 2.0
    assert by_name["j-worker-0"].start_time == 3.0
    assert the_job(result).phase == JobPhase.COMPLETED


def test_depends_on_any_needs_only_one_ready_task():
    # The ps asks for more than a node: it never runs, yet "any" lets the workers start once
    # the driver runs; with "all" they would never be created.
    tasks = [
        task("driver"),
        task("ps", cpu=8),
        task("worker", 1, dependsOn={"name": ["driver", "ps"], "iteration": "any"}),
    ]
    any_run = simulate([*nodes(2), job("j", tasks, minAvailable=1)], until=500)
    assert "j-worker-0" in pods(any_run)
    tasks[2]["dependsOn"]["iteration"] = "all"
    all_run = simulate([*nodes(2), job("j", tasks, minAvailable=1)], until=500)
    assert "j-worker-0" not in pods(all_run)


def failing(after: float, code: int = 1, probability: float | None = None) -> dict[str, str]:
    notes = {"berth.io/fail-after": str(after), "berth.io/exit-code": str(code)}
    if probability is not None:
        notes["berth.io/fail-probability"] = str(probability)
    return notes


def test_restart_job_until_max_retry_then_failed():
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    tasks = [task("t", 2, annotations=failing(10))]
    result = simulate([*nodes(2), job("j", tasks, maxRetry=3, policies=policies)])
    j = the_job(result)
    assert j.phase == JobPhase.FAILED
    assert j.retries == 3  # the third restart reaches maxRetry: the job fails instead
    names = [p.name for p in result.pods]
    assert names == ["j-t-0", "j-t-1", "j-t-0.1", "j-t-1.1", "j-t-0.2", "j-t-1.2"]
    phases = [str(p.phase) for p in result.pods]
    # the pod that failed stays Failed; its sibling was deleted by the restart
    assert phases == ["Failed", "Deleted"] * 3
    assert reason(result, "j-t-1").startswith("deleted by job controller: RestartJob")
    assert "maxRetry 3" in j.conditions[-1][2]
    assert job_outcomes(result)["default/j"].retries == 3
    assert result.groups[0].end_time == 34.0


def test_exit_code_policy_matches_only_its_code():
    policies = [{"exitCode": 3, "action": "RestartTask"}]
    matching = simulate(
        [*nodes(1), job("j", [task("t", annotations=failing(10, 3))], policies=policies)]
    )
    assert the_job(matching).retries == 3  # the third RestartTask reaches maxRetry 3
    assert the_job(matching).phase == JobPhase.FAILED
    other = simulate(
        [*nodes(1), job("j", [task("t", annotations=failing(10, 4))], policies=policies)]
    )
    assert the_job(other).retries == 0
    assert the_job(other).phase == JobPhase.FAILED  # no policy: the only pod failed
    assert pods(other)["j-t-0"] == ("Failed", 2.0, 12.0)


def test_task_policy_wins_over_job_policy():
    tasks = [
        task("a", annotations=failing(10), policies=[{"event": "PodFailed", "action": "AbortJob"}]),
        task("b"),
    ]
    job_policies = [{"event": "PodFailed", "action": "RestartJob"}]
    result = simulate([*nodes(1), job("j", tasks, policies=job_policies)])
    assert the_job(result).phase == JobPhase.ABORTED
    assert the_job(result).retries == 0
    assert pods(result)["j-b-0"] == ("Deleted", 2.0, 12.0)


def test_task_completed_completes_the_job():
    tasks = [
        task("driver", duration=50, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
        task("service", 2, duration=None),
    ]
    result = simulate([*nodes(2), job("j", tasks)])
    assert the_job(result).phase == JobPhase.COMPLETED
    assert pods(result)["j-service-1"] == ("Deleted", 2.0, 52.0)
    assert result.groups[0].end_time == 52.0


def test_min_success_completes_and_frees_the_rest():
    tasks = [task("fast", 2, duration=10), task("slow", 1, duration=None)]
    result = simulate([*nodes(1), job("j", tasks, minSuccess=2)])
    assert the_job(result).phase == JobPhase.COMPLETED
    assert pods(result)["j-slow-0"] == ("Deleted", 2.0, 12.0)


def test_too_few_successes_fail_the_job():
    tasks = [task("t", 2, annotations=failing(5)), task("u", 1)]
    result = simulate([*nodes(1), job("j", tasks, minAvailable=2)])
    j = the_job(result)
    assert j.phase == JobPhase.FAILED
    assert j.counts == {"pending": 0, "running": 0, "succeeded": 1, "failed": 2}
    assert "1 pods succeeded, minAvailable 2" in j.conditions[-1][2]


def test_per_task_min_available_decides_the_verdict():
    tasks = [task("t", 2, minAvailable=2, annotations=failing(5, probability=0.0)), task("u")]
    ok = simulate([*nodes(1), job("j", tasks, minAvailable=3)])
    assert the_job(ok).phase == JobPhase.COMPLETED
    tasks[0]["template"]["metadata"]["annotations"]["berth.io/fail-probability"] = "1"
    bad = simulate([*nodes(1), job("j", tasks, minAvailable=3)])
    assert the_job(bad).phase == JobPhase.FAILED
    assert "task t: 0 pods succeeded, minAvailable 2" in the_job(bad).conditions[-1][2]
    # minAvailable below the tasks' minimums (2): Volcano judges by the total only
    lenient = simulate([*nodes(1), job("j", tasks, minAvailable=1)])
    assert the_job(lenient).phase == JobPhase.COMPLETED


def test_abort_and_resume_by_command():
    docs = [
        *nodes(1),
        job("j", [task("t", 2, duration=100)]),
        command("stop", "AbortJob", "j", at=30),
        command("go", "ResumeJob", "j", at=60),
    ]
    result = simulate(docs)
    assert pods(result) == {
        "j-t-0": ("Deleted", 2.0, 30.0),
        "j-t-1": ("Deleted", 2.0, 30.0),
        # resumed: the group is admitted again at 60, pods created then, bound at 61
        "j-t-0.1": ("Succeeded", 62.0, 162.0),
        "j-t-1.1": ("Succeeded", 62.0, 162.0),
    }
    phases = [c[1] for c in the_job(result).conditions]
    assert phases == [
        JobPhase.PENDING,
        JobPhase.RUNNING,
        JobPhase.ABORTING,
        JobPhase.ABORTED,
        JobPhase.RESTARTING,
        JobPhase.PENDING,
        JobPhase.RUNNING,
        JobPhase.COMPLETED,
    ]


def test_aborted_job_frees_its_capacity_for_others():
    docs = [
        *nodes(1),
        job("big", [task("t", 1, cpu=4, duration=1000)]),
        job("next", [task("t", 1, cpu=4, duration=10)], at=5),
        command("stop", "AbortJob", "big", at=20),
    ]
    result = simulate(docs)
    assert pods(result)["next-t-0"] == ("Succeeded", 22.0, 32.0)
    assert the_job(result, "big").phase == JobPhase.ABORTED


def test_terminate_is_final_and_resume_does_nothing():
    docs = [
        *nodes(1),
        job("j", [task("t", duration=100)]),
        command("end", "TerminateJob", "j", at=10),
        command("again", "ResumeJob", "j", at=20),
    ]
    result = simulate(docs)
    assert the_job(result).phase == JobPhase.TERMINATED
    assert pods(result) == {"j-t-0": ("Deleted", 2.0, 10.0)}
    assert result.groups[0].end_time == 10.0


def test_pod_pending_timeout():
    policies = [{"event": "PodPending", "action": "TerminateJob", "timeout": "1m"}]
    # two pods of 3 CPUs on one 4-CPU node, no gang requirement: one runs, one stays pending
    docs = [
        *nodes(1),
        job("j", [task("t", 2, cpu=3, duration=500)], minAvailable=1, policies=policies),
    ]
    result = simulate(docs)
    j = the_job(result)
    assert j.phase == JobPhase.TERMINATED
    assert j.conditions[-1][0] == 60.0
    assert "PodPending of pod j-t-1 for 60s" in j.conditions[-1][2]


def test_policy_timeout_delays_the_action():
    policies = [{"event": "PodFailed", "action": "AbortJob", "timeout": "30s"}]
    tasks = [task("t", annotations=failing(10)), task("u", duration=500)]
    result = simulate([*nodes(1), job("j", tasks, minAvailable=1, policies=policies)])
    j = the_job(result)
    assert j.phase == JobPhase.ABORTED
    assert j.conditions[-1][0] == 42.0  # failed at 12, aborted 30 s later


def test_preempted_pod_is_replaced_and_counted():
    docs = [
        *nodes(1),
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
        job("low", [task("t", 1, cpu=4, duration=100)]),
        job("high", [task("t", 1, cpu=4, duration=10)], at=10, priorityClassName="high"),
    ]
    result = simulate(docs, PREEMPTING)
    assert pods(result)["low-t-0"][0] == "Evicted"
    assert reason(result, "low-t-0") == "preempted by default/high"
    assert "low-t-0.1" in pods(result)  # replaced, and the replacement ran after high
    assert pods(result)["low-t-0.1"][0] == "Succeeded"
    outcomes = job_outcomes(result)
    assert outcomes["default/low"].preemptions == 1
    assert outcomes["default/low"].tasks == 2
    assert the_job(result, "low").phase == JobPhase.COMPLETED


def test_pod_evicted_policy_restarts_the_job():
    docs = [
        *nodes(1),
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
        job(
            "low",
            [task("t", 1, cpu=4, duration=100)],
            policies=[{"event": "PodEvicted", "action": "RestartJob"}],
        ),
        job("high", [task("t", 1, cpu=4, duration=10)], at=10, priorityClassName="high"),
    ]
    result = simulate(docs, PREEMPTING)
    assert the_job(result, "low").retries == 1
    assert the_job(result, "low").phase == JobPhase.COMPLETED


def test_closed_queue_is_a_clear_condition():
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "shut"},
        "spec": {"state": "Closed"},
    }
    result = simulate([*nodes(1), queue, job("j", [task("t")], queue="shut")])
    assert result.pods == []
    assert job_outcomes(result)["default/j"].reason == "queue shut is closed"
    missing = simulate([*nodes(1), job("j", [task("t")], queue="nowhere")])
    assert job_outcomes(missing)["default/j"].reason == "queue nowhere not found"


def test_node_failure_evicts_and_the_job_recovers_elsewhere():
    config = {"simulation": {"nodeFailures": [{"node": "n0", "at": 50, "recoverAfter": 100}]}}
    result = simulate([*nodes(2), job("j", [task("t", 1, cpu=4, duration=100)])], config)
    first, second = result.pods
    assert (first.name, first.bound_node, str(first.phase)) == ("j-t-0", "n0", "Evicted")
    assert reason(result, "j-t-0") == "node n0 failed"
    assert (second.name, second.bound_node, str(second.phase)) == ("j-t-0.1", "n1", "Succeeded")
    assert job_outcomes(result)["default/j"].preemptions == 0


def test_failed_node_takes_no_pods_until_it_recovers():
    config = {"simulation": {"nodeFailures": [{"node": "n0", "at": 0, "recoverAfter": 50}]}}
    result = simulate([*nodes(1), job("j", [task("t", 1, duration=10)])], config)
    assert pods(result)["j-t-0"] == ("Succeeded", 52.0, 62.0)


@pytest.mark.parametrize(
    "failures,message",
    [
        ([{"node": "n9", "at": 1}], "simulation.nodeFailures[0].node: no node named 'n9'"),
        ([{"node": "n0"}], "simulation.nodeFailures[0].at: field required"),
        ([{"node": "n0", "at": -1}], "simulation.nodeFailures[0].at: expected seconds >= 0"),
        ([{"node": "n0", "at": 1, "when": 2}], "simulation.nodeFailures[0].when: unknown field"),
        ("n0", "simulation.nodeFailures: expected a list"),
    ],
)
def test_bad_node_failures(failures, message):
    with pytest.raises(SimConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        simulate([*nodes(1)], {"simulation": {"nodeFailures": failures}})


def test_fault_probability_is_seeded():
    docs = [
        *nodes(4),
        job("j", [task("t", 40, cpu=0.1, annotations=failing(5, probability=0.5))], minAvailable=1),
    ]
    runs = [simulate(docs, seed=seed) for seed in (1, 1, 2)]
    failed = [sorted(p.name for p in run.pods if p.phase == PodPhase.FAILED) for run in runs]
    assert failed[0] == failed[1]
    assert failed[0] != failed[2]
    assert 5 < len(failed[0]) < 35
