"""Volcano batch Jobs and bus Commands: what valid manifests become, the exact line each mistake
produces, and the simulation fault annotations of pod templates and plain pods."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest

from berth.api.manifest import Manifests, cross_check, load_files, parse_documents
from berth.api.objects import JobAction, JobEvent, LifecyclePolicy
from berth.cli import main
from berth.resources import MIB

BATCH_API = "batch.volcano.sh/v1alpha1"
BUS_API = "bus.volcano.sh/v1alpha1"


def write(tmp_path: Path, text: str, name: str = "jobs.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str) -> Manifests:
    return load_files([write(tmp_path, text)])


def check(docs: list[dict]) -> Manifests:
    """Parse and cross-check documents as ``load_files`` does, named ``t.yaml`` in problems."""
    m = parse_documents(docs, "t.yaml")
    cross_check(m)
    return m


def problems(m: Manifests) -> list[tuple[str, str]]:
    return [(p.severity, str(p)) for p in m.problems]


def task(name: str, replicas: int = 1, annotations: dict | None = None, **extra: object) -> dict:
    template: dict = {"spec": {"containers": [{"name": "c"}]}}
    if annotations is not None:
        template["metadata"] = {"annotations": annotations}
    return {"name": name, "replicas": replicas, "template": template, **extra}


def job(name: str = "j", tasks: list[dict] | None = None, **spec: object) -> dict:
    return {
        "apiVersion": BATCH_API,
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": [task("t")] if tasks is None else tasks, **spec},
    }


def policy_job(**policy: object) -> dict:
    return job(policies=[policy])


def command(
    name: str = "c", action: str = "AbortJob", target: str = "j", kind: str = "Job"
) -> dict:
    return {
        "apiVersion": BUS_API,
        "kind": "Command",
        "metadata": {"name": name},
        "action": action,
        "target": {"kind": kind, "name": target},
    }


def with_template_spec(item: dict, **spec: object) -> dict:
    item = copy.deepcopy(item)
    item["template"]["spec"].update(spec)
    return item


# -- valid objects --------------------------------------------------------------------------------

FULL = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: train
  namespace: ml
  annotations: {berth.io/submit-time: "30"}
spec:
  minAvailable: 1
  minSuccess: 3
  queue: research
  priorityClassName: low
  schedulerName: volcano
  maxRetry: 5
  policies:
    - {event: PodEvicted, action: RestartJob}
    - {exitCode: 137, action: RestartTask}
    - {event: PodPending, events: [PodFailed], action: AbortJob, timeout: 10m}
  tasks:
    - name: ps
      template:
        spec:
          priorityClassName: high
          schedulerName: other
          containers:
            - {name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}
    - name: worker
      replicas: 4
      minAvailable: 2
      dependsOn: {name: [ps], iteration: any}
      policies:
        - {event: TaskCompleted, action: CompleteJob}
        - {events: ["*"], action: RestartPod, timeout: 1m30s}
      template:
        metadata:
          labels: {app: w}
          annotations:
            berth.io/duration: "3600"
            berth.io/fail-after: "600"
            berth.io/exit-code: "137"
            berth.io/fail-probability: "0.25"
        spec:
          containers:
            - {name: c, resources: {limits: {cpu: "2", nvidia.com/gpu: 1}}}
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  name: stop
  namespace: ml
  annotations: {berth.io/submit-time: "3600"}
action: TerminateJob
target: {kind: Job, name: train}
reason: budget
message: out of budget
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: pause, namespace: ml, annotations: {berth.io/submit-time: "60"}}
action: AbortJob
target: {kind: Job, name: train}
message: maintenance window
"""


def test_full_job_and_commands(tmp_path: Path) -> None:
    m = load(tmp_path, FULL)
    assert m.problems == []
    assert (m.pods, m.groups) == ([], [])  # the controller makes them when the job arrives
    (j,) = m.jobs
    assert (j.key, j.queue, j.submit_time) == ("ml/train", "research", 30.0)
    assert (j.min_available, j.min_success, j.max_retry, j.replicas) == (1, 3, 5, 5)
    assert (j.priority_class_name, j.priority) == ("low", 10)
    assert j.annotations == {"berth.io/submit-time": "30"}
    assert j.policies == (
        LifecyclePolicy(JobAction.RESTART_JOB, frozenset({JobEvent.POD_EVICTED})),
        LifecyclePolicy(JobAction.RESTART_TASK, exit_code=137),
        LifecyclePolicy(
            JobAction.ABORT_JOB,
            frozenset({JobEvent.POD_PENDING, JobEvent.POD_FAILED}),
            timeout=600.0,
        ),
    )

    ps, worker = j.tasks
    assert (ps.name, ps.replicas, ps.min_available, ps.policies) == ("ps", 1, None, ())
    assert (ps.depends_on, ps.depends_on_any) == ((), False)
    assert ps.template.namespace == "ml"
    assert ps.template.requests == {"cpu": 500, "memory": 1024 * MIB, "pods": 1}
    # The template's own class and scheduler win over the job's.
    assert (ps.template.priority_class_name, ps.template.priority) == ("high", 1000)
    assert ps.template.scheduler_name == "other"
    assert (ps.template.fail_after, ps.template.fail_exit_code) == (None, 1)
    assert ps.template.fail_probability == 1.0

    assert (worker.name, worker.replicas, worker.min_available) == ("worker", 4, 2)
    assert (worker.depends_on, worker.depends_on_any) == (("ps",), True)
    assert worker.policies == (
        LifecyclePolicy(JobAction.COMPLETE_JOB, frozenset({JobEvent.TASK_COMPLETED})),
        LifecyclePolicy(JobAction.RESTART_POD, frozenset({JobEvent.ANY}), timeout=90.0),
    )
    template = worker.template
    assert template.labels == {"app": "w"}
    # Requests default to limits, in canonical units.
    assert template.requests == {"cpu": 2000, "nvidia.com/gpu": 1000, "pods": 1}
    # No class of its own: it takes the job's, as Volcano gives it to the pods it creates.
    assert (template.priority_class_name, template.priority) == ("low", 10)
    assert template.scheduler_name == "volcano"  # the job's schedulerName
    assert template.duration == 3600.0
    assert (template.fail_after, template.fail_exit_code, template.fail_probability) == (
        600.0,
        137,
        0.25,
    )

    stop, pause = m.commands
    assert (stop.key, stop.action, stop.target) == ("ml/stop", JobAction.TERMINATE_JOB, "train")
    assert (stop.submit_time, stop.reason) == (3600.0, "budget")
    assert (pause.action, pause.submit_time) == (JobAction.ABORT_JOB, 60.0)
    assert pause.reason == "maintenance window"  # the message stands in for a missing reason


def test_job_defaults() -> None:
    (j,) = check([job()]).jobs
    assert (j.key, j.queue, j.min_available, j.min_success, j.max_retry) == (
        "default/j",
        "default",
        1,
        None,
        3,
    )
    assert (j.priority_class_name, j.priority, j.policies, j.submit_time) == ("", 0, (), 0.0)
    (t,) = j.tasks
    assert (t.replicas, t.min_available, t.depends_on, t.depends_on_any) == (1, None, (), False)
    assert t.template.scheduler_name == "berth"


@pytest.mark.parametrize(
    ("tasks", "spec", "expected"),
    [
        ([task("a", 2), task("b", 3)], {}, 5),
        ([task("a", 2), task("b", 3, minAvailable=1)], {}, 3),
        ([task("a", 2, minAvailable=0), task("b", 3, minAvailable=0)], {}, 0),
        ([task("a", 2), task("b", 3)], {"minAvailable": 4}, 4),
        ([task("a", 2, minAvailable=2)], {"minAvailable": 0}, 0),
    ],
    ids=["replicas", "task minAvailable", "task minimums of 0", "explicit", "explicit 0"],
)
def test_min_available(tasks: list[dict], spec: dict, expected: int) -> None:
    (j,) = check([job(tasks=tasks, **spec)]).jobs
    assert j.min_available == expected


def test_job_priority_from_global_default() -> None:
    default = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "standard"},
        "value": 100,
        "globalDefault": True,
    }
    (j,) = check([default, job()]).jobs
    assert (j.priority_class_name, j.priority) == ("standard", 100)


def test_template_priority_from_builtin_class() -> None:
    tasks = [with_template_spec(task("a"), priorityClassName="system-cluster-critical")]
    (j,) = check([job(tasks=tasks)]).jobs
    assert j.tasks[0].template.priority == 2_000_000_000


def test_fault_annotations_on_a_plain_pod() -> None:
    annotations = {
        "berth.io/fail-after": "0",
        "berth.io/exit-code": "255",
        "berth.io/fail-probability": "1",
    }
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": annotations},
        "spec": {"containers": [{"name": "c"}]},
    }
    m = check([doc])
    assert m.problems == []
    (pod,) = m.pods
    assert (pod.fail_after, pod.fail_exit_code, pod.fail_probability) == (0.0, 255, 1.0)


# -- bad input ------------------------------------------------------------------------------------

E, W = "error", "warning"
ANNOTATIONS = "spec.tasks[0].template.metadata.annotations"
EVENTS = "PodFailed, PodEvicted, PodPending, PodRunning, TaskCompleted, Unknown, *"
ACTIONS = "AbortJob, RestartJob, RestartTask, RestartPod, TerminateJob, CompleteJob, ResumeJob"
NO_CLASS = (
    'no PriorityClass named "ghost" (expected one defined in the loaded files, '
    "or system-cluster-critical / system-node-critical)"
)

BAD_CASES: dict[str, tuple[list[dict], list[tuple[str, str]]]] = {
    "duplicate task name": (
        [job(tasks=[task("a"), task("a")])],
        [(E, 't.yaml: Job/j: spec.tasks[1].name: duplicate task name "a"')],
    ),
    "task minAvailable above replicas": (
        [job(tasks=[task("a", 2, minAvailable=3)])],
        [(E, "t.yaml: Job/j: spec.tasks[0].minAvailable: 3 exceeds the task's replicas (2)")],
    ),
    "job minAvailable above replicas": (
        [job(tasks=[task("a", 2), task("b")], minAvailable=4)],
        [(E, "t.yaml: Job/j: spec.minAvailable: 4 exceeds the job's replicas (3)")],
    ),
    "minSuccess above replicas": (
        [job(tasks=[task("a", 2)], minSuccess=3)],
        [(E, "t.yaml: Job/j: spec.minSuccess: 3 exceeds the job's replicas (2)")],
    ),
    "minSuccess 0": (
        [job(minSuccess=0)],
        [(E, "t.yaml: Job/j: spec.minSuccess: must be >= 1 (got 0)")],
    ),
    "no tasks": (
        [job(tasks=[])],
        [(E, "t.yaml: Job/j: spec.tasks: must have at least 1 item(s)")],
    ),
    "task name not a name": (
        [job(tasks=[task("Bad_Name")])],
        [
            (
                E,
                't.yaml: Job/j: spec.tasks[0].name: "Bad_Name" is not a valid name (expected '
                "lowercase letters, digits, '-' and '.', starting and ending with a letter or "
                "digit)",
            )
        ],
    ),
    "dependsOn unknown task": (
        [job(tasks=[task("a"), task("b", dependsOn={"name": ["x"]})], minAvailable=1)],
        [
            (
                E,
                't.yaml: Job/j: spec.tasks[1].dependsOn.name[0]: no task named "x" '
                "(expected one of a)",
            )
        ],
    ),
    "dependsOn itself": (
        [job(tasks=[task("a"), task("b", dependsOn={"name": ["b"]})], minAvailable=1)],
        [(E, "t.yaml: Job/j: spec.tasks[1].dependsOn.name[0]: a task cannot depend on itself")],
    ),
    "dependsOn cycle": (
        [
            job(
                tasks=[
                    task("a"),
                    task("b", dependsOn={"name": ["c"]}),
                    task("c", dependsOn={"name": ["b"]}),
                ],
                minAvailable=1,
            )
        ],
        [(E, "t.yaml: Job/j: spec.tasks: dependsOn forms a cycle: b → c → b")],
    ),
    "dependsOn bad iteration": (
        [job(tasks=[task("a"), task("b", dependsOn={"name": ["a"], "iteration": "some"})])],
        [
            (
                E,
                't.yaml: Job/j: spec.tasks[1].dependsOn.iteration: "some" is not a valid value '
                "(expected one of any, all)",
            )
        ],
    ),
    "minAvailable beyond the tasks without dependsOn": (
        [job(tasks=[task("a"), task("b", 2, dependsOn={"name": ["a"]})])],
        [
            (
                W,
                "t.yaml: Job/j: spec: minAvailable (by default) 3 exceeds the 1 pods of the tasks "
                "without dependsOn, which are created first: the gang can never be complete "
                "(expected at most 1)",
            )
        ],
    ),
    "invalid event": (
        [policy_job(event="PodCrashed", action="RestartJob")],
        [
            (
                E,
                't.yaml: Job/j: spec.policies[0].event: "PodCrashed" is not a valid value '
                f"(expected one of {EVENTS})",
            )
        ],
    ),
    "invalid event in events": (
        [policy_job(events=["PodFailed", "Nope"], action="RestartJob")],
        [
            (
                E,
                't.yaml: Job/j: spec.policies[0].events[1]: "Nope" is not a valid value '
                f"(expected one of {EVENTS})",
            )
        ],
    ),
    "invalid action": (
        [policy_job(event="PodFailed", action="Reboot")],
        [
            (
                E,
                't.yaml: Job/j: spec.policies[0].action: "Reboot" is not a valid value '
                f"(expected one of {ACTIONS})",
            )
        ],
    ),
    "policy without action": (
        [policy_job(event="PodFailed")],
        [(E, "t.yaml: Job/j: spec.policies[0].action: field required")],
    ),
    "exitCode 0": (
        [policy_job(exitCode=0, action="RestartJob")],
        [
            (
                E,
                "t.yaml: Job/j: spec.policies[0]: exitCode 0 means success and cannot trigger "
                "a policy",
            )
        ],
    ),
    "event and exitCode together": (
        [policy_job(event="PodFailed", exitCode=1, action="RestartJob")],
        [(E, "t.yaml: Job/j: spec.policies[0]: set either event/events or exitCode, not both")],
    ),
    "events and exitCode together": (
        [policy_job(events=["PodFailed"], exitCode=1, action="RestartJob")],
        [(E, "t.yaml: Job/j: spec.policies[0]: set either event/events or exitCode, not both")],
    ),
    "policy with neither event nor exitCode": (
        [policy_job(action="RestartJob")],
        [(E, "t.yaml: Job/j: spec.policies[0]: expected event, events or exitCode")],
    ),
    "bad timeout": (
        [policy_job(event="PodPending", action="AbortJob", timeout="soon")],
        [
            (
                E,
                't.yaml: Job/j: spec.policies[0].timeout: "soon" is not a duration '
                "(expected e.g. 30s, 5m, 1h)",
            )
        ],
    ),
    "timeout without unit": (
        [policy_job(event="PodPending", action="AbortJob", timeout="30")],
        [
            (
                E,
                't.yaml: Job/j: spec.policies[0].timeout: "30" is not a duration '
                "(expected e.g. 30s, 5m, 1h)",
            )
        ],
    ),
    "bad task policy": (
        [job(tasks=[task("a", policies=[{"event": "PodFailed", "action": "Explode"}])])],
        [
            (
                E,
                't.yaml: Job/j: spec.tasks[0].policies[0].action: "Explode" is not a valid value '
                f"(expected one of {ACTIONS})",
            )
        ],
    ),
    "exit-code annotation 0": (
        [job(tasks=[task("a", annotations={"berth.io/exit-code": "0"})])],
        [
            (
                E,
                f"t.yaml: Job/j: {ANNOTATIONS}.berth.io/exit-code: must be an integer from 1 to "
                "255 (0 means success) (got 0)",
            )
        ],
    ),
    "exit-code annotation 256": (
        [job(tasks=[task("a", annotations={"berth.io/exit-code": "256"})])],
        [
            (
                E,
                f"t.yaml: Job/j: {ANNOTATIONS}.berth.io/exit-code: must be an integer from 1 to "
                "255 (0 means success) (got 256)",
            )
        ],
    ),
    "exit-code annotation not an integer": (
        [job(tasks=[task("a", annotations={"berth.io/exit-code": "1.5"})])],
        [
            (
                E,
                f"t.yaml: Job/j: {ANNOTATIONS}.berth.io/exit-code: must be an integer from 1 to "
                "255 (0 means success) (got 1.5)",
            )
        ],
    ),
    "exit-code annotation not a number": (
        [job(tasks=[task("a", annotations={"berth.io/exit-code": "oom"})])],
        [(E, f't.yaml: Job/j: {ANNOTATIONS}.berth.io/exit-code: "oom" is not a number')],
    ),
    "fail-probability above 1": (
        [job(tasks=[task("a", annotations={"berth.io/fail-probability": "1.5"})])],
        [
            (
                E,
                f"t.yaml: Job/j: {ANNOTATIONS}.berth.io/fail-probability: must be between 0 and "
                "1 (got 1.5)",
            )
        ],
    ),
    "fail-after negative": (
        [job(tasks=[task("a", annotations={"berth.io/fail-after": "-1"})])],
        [(E, f"t.yaml: Job/j: {ANNOTATIONS}.berth.io/fail-after: must be >= 0 (got -1)")],
    ),
    "fault annotation on a plain pod": (
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "annotations": {"berth.io/fail-probability": "-0.1"}},
                "spec": {"containers": [{"name": "c"}]},
            }
        ],
        [
            (
                E,
                "t.yaml: Pod/p: metadata.annotations.berth.io/fail-probability: must be between "
                "0 and 1 (got -0.1)",
            )
        ],
    ),
    "template quantity": (
        [
            job(
                tasks=[
                    {
                        "name": "a",
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {"cpu": "lots"}}}
                                ]
                            }
                        },
                    }
                ]
            )
        ],
        [
            (
                E,
                "t.yaml: Job/j: spec.tasks[0].template.spec.containers[0].resources.requests.cpu: "
                '"lots" is not a quantity (expected e.g. 500m, 2, 4Gi)',
            )
        ],
    ),
    "Command with unknown target": (
        [job(), command(target="ghost")],
        [
            (
                E,
                't.yaml: Command/c: target.name: no Job named "ghost" in namespace default '
                "(expected a batch.volcano.sh Job defined in the loaded files)",
            )
        ],
    ),
    "Command target in another namespace": (
        [{**job(), "metadata": {"name": "j", "namespace": "ml"}}, command()],
        [
            (
                E,
                't.yaml: Command/c: target.name: no Job named "j" in namespace default '
                "(expected a batch.volcano.sh Job defined in the loaded files)",
            )
        ],
    ),
    "Command target kind other than Job": (
        [job(), command(kind="Pod")],
        [(E, 't.yaml: Command/c: target.kind: "Pod" is not a valid value (expected Job)')],
    ),
    "Command invalid action": (
        [job(), command(action="Explode")],
        [
            (
                E,
                f't.yaml: Command/c: action: "Explode" is not a valid value (expected one of '
                f"{ACTIONS})",
            )
        ],
    ),
    "Command without target": (
        [job(), {k: v for k, v in command().items() if k != "target"}],
        [(E, "t.yaml: Command/c: target: field required")],
    ),
    "duplicate Job names": (
        [job(), job()],
        [
            (
                E,
                't.yaml: Job/j: metadata.name: duplicate Job "default/j" '
                "(also defined earlier in this file)",
            )
        ],
    ),
    "duplicate Command names": (
        [job(), command(), command()],
        [
            (
                E,
                't.yaml: Command/c: metadata.name: duplicate Command "default/c" '
                "(also defined earlier in this file)",
            )
        ],
    ),
    "unknown priorityClassName in a template": (
        [job(tasks=[task("a"), with_template_spec(task("b"), priorityClassName="ghost")])],
        [(E, f"t.yaml: Job/j: spec.tasks[1].template.spec.priorityClassName: {NO_CLASS}")],
    ),
    "unknown priorityClassName of the job": (
        [job(priorityClassName="ghost")],
        [(E, f"t.yaml: Job/j: spec.priorityClassName: {NO_CLASS}")],
    ),
    "wrong apiVersion": (
        [{**job(), "apiVersion": "batch.volcano.sh/v1"}],
        [
            (
                E,
                't.yaml: Job/j: apiVersion: "batch.volcano.sh/v1" is not the apiVersion of Job '
                "(expected batch.volcano.sh/v1alpha1 or batch/v1)",
            )
        ],
    ),
    "plugins are not supported": (
        [job(plugins={"ssh": [], "svc": []})],
        [(W, "t.yaml: Job/j: spec.plugins: not supported by berth, ignored")],
    ),
    "task maxRetry is not supported": (
        [job(tasks=[task("a", maxRetry=2)])],
        [(W, "t.yaml: Job/j: spec.tasks[0].maxRetry: not supported by berth, ignored")],
    ),
    "misspelt job field": (
        [job(minAvailible=1)],
        [(E, "t.yaml: Job/j: spec.minAvailible: unknown field (did you mean minAvailable?)")],
    ),
    "ttlSecondsAfterFinished is accepted silently": ([job(ttlSecondsAfterFinished=60)], []),
}


@pytest.mark.parametrize("docs,expected", BAD_CASES.values(), ids=BAD_CASES.keys())
def test_bad_input(docs: list[dict], expected: list[tuple[str, str]]) -> None:
    assert problems(check(docs)) == expected


def test_a_kubernetes_job_is_read_as_one_not_as_a_volcano_job() -> None:
    m = check([{**job(), "apiVersion": "batch/v1"}])
    assert (m.jobs, dict(m.skipped)) == ([], {})
    assert [str(p) for p in m.problems] == [
        "t.yaml: Job/j: spec.tasks: unknown field",
        "t.yaml: Job/j: spec.template: field required",
    ]


def test_a_job_with_warnings_only_still_loads() -> None:
    m = check([job(plugins={"ssh": []})])
    assert m.errors == []
    assert [j.name for j in m.jobs] == ["j"]


def test_duplicate_job_across_files(tmp_path: Path) -> None:
    text = (
        f"apiVersion: {BATCH_API}\nkind: Job\nmetadata: {{name: j}}\n"
        "spec: {tasks: [{name: t, template: {spec: {containers: [{name: c}]}}}]}\n"
    )
    one = write(tmp_path, text, "one.yaml")
    two = write(tmp_path, text, "two.yaml")
    m = load_files([one, two])
    assert [str(p) for p in m.problems] == [
        f'{two}: Job/j: metadata.name: duplicate Job "default/j" (also defined in {one})'
    ]


def test_command_target_is_checked_across_files(tmp_path: Path) -> None:
    jobs = write(tmp_path, textwrap.dedent(FULL).split("---\napiVersion: bus")[0], "jobs.yaml")
    commands = write(
        tmp_path,
        f"apiVersion: {BUS_API}\nkind: Command\nmetadata: {{name: c, namespace: ml, "
        'annotations: {berth.io/submit-time: "40"}}\n'
        "action: ResumeJob\ntarget: {kind: Job, name: train}\n",
        "commands.yaml",
    )
    assert [p.path for p in load_files([commands]).errors] == ["target.name"]
    m = load_files([jobs, commands])
    assert m.problems == []
    assert [c.action for c in m.commands] == [JobAction.RESUME_JOB]


def test_negative_timeout_is_an_error() -> None:
    m = check([policy_job(event="PodPending", action="AbortJob", timeout="-5m")])
    assert [(p.path, p.message) for p in m.errors] == [
        ("spec.policies[0].timeout", "must not be negative (got -5m)")
    ]


@pytest.mark.parametrize("code", [-1, 256])
def test_exit_code_out_of_range_is_an_error(code: int) -> None:
    m = check([policy_job(exitCode=code, action="AbortJob")])
    assert [(p.path, p.message) for p in m.errors] == [
        (
            "spec.policies[0].exitCode",
            f"{code} is not an exit code a container can fail with (expected 1-255)",
        )
    ]


def test_command_before_its_job_is_a_warning(tmp_path: Path) -> None:
    text = FULL.replace('annotations: {berth.io/submit-time: "60"}', "annotations: {}")
    m = load(tmp_path, text)
    assert [(p.severity, p.path, p.message) for p in m.problems] == [
        (
            "warning",
            "metadata.annotations.berth.io/submit-time",
            "issued at 0s, before Job train arrives at 30s: it will have no effect",
        )
    ]


def test_job_class_goes_to_templates_before_the_default() -> None:
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": name == "standard",
        }
        for name, value in (("standard", 100), ("high", 1000))
    ]
    m = check([*classes, job(tasks=[task("a")], priorityClassName="high")])
    (template,) = [t.template for t in m.jobs[0].tasks]
    assert (template.priority_class_name, template.priority) == ("high", 1000)


# -- the CLI --------------------------------------------------------------------------------------

BAD_JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: broken}
spec:
  minAvailable: 3
  plugins: {ssh: []}
  policies:
    - {event: PodFailed, exitCode: 1, action: RestartJob}
  tasks:
    - name: a
      template:
        metadata:
          annotations: {berth.io/fail-probability: "2"}
        spec:
          containers: [{name: c}]
    - name: a
      dependsOn: {name: [a]}
      template:
        spec:
          containers: [{name: c}]
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def test_validate_bad_job_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, BAD_JOB, "bad.yaml")
    rc, out, err = run(capsys, "validate", str(path))
    assert rc == 1
    assert out.splitlines() == [
        f"{path}: Job/broken: spec.policies[0]: set either event/events or exitCode, not both",
    ]
    assert err.splitlines() == [
        f"warning: {path}: Job/broken: spec.plugins: not supported by berth, ignored",
    ]


def test_validate_bad_job_conversion_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # With the policy fixed, the checks made while converting the job come through.
    path = write(tmp_path, BAD_JOB.replace("exitCode: 1, ", ""), "bad.yaml")
    rc, out, _ = run(capsys, "validate", str(path))
    assert rc == 1
    assert out.splitlines() == [
        f"{path}: Job/broken: spec.tasks[0].template.metadata.annotations."
        "berth.io/fail-probability: must be between 0 and 1 (got 2)",
        f'{path}: Job/broken: spec.tasks[1].name: duplicate task name "a"',
        f"{path}: Job/broken: spec.tasks[1].dependsOn.name[0]: a task cannot depend on itself",
        f"{path}: Job/broken: spec.minAvailable: 3 exceeds the job's replicas (2)",
    ]
    assert "valid:" not in out


def test_validate_lists_jobs_and_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, FULL)
    rc, out, err = run(capsys, "validate", str(path))
    assert (rc, err) == (0, "")
    assert out.strip() == "valid: 0 nodes, 0 pods, 0 podgroups, 1 queues, 1 jobs, 2 commands"


def test_validate_without_jobs_omits_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{}]}\n"
    )
    rc, out, _ = run(capsys, "validate", str(path))
    assert rc == 0
    assert out.strip() == "valid: 0 nodes, 1 pods, 0 podgroups, 0 queues"
