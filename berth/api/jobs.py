"""Volcano ``batch.volcano.sh`` Job and ``bus.volcano.sh`` Command documents."""

from __future__ import annotations

from berth.api import schema
from berth.api.elastic import (
    DEFAULT_RESIZE_PAUSE,
    ELASTIC_ANNOTATION,
    RESIZE_PAUSE_ANNOTATION,
    THROUGHPUT_ANNOTATION,
    ElasticSpec,
    Throughput,
    is_elastic,
    parse_throughput,
)
from berth.api.fields import at_least_zero, check_deadline, check_sla, float_annotation, preemptable
from berth.api.hypernodes import network_topology
from berth.api.keys import DURATION_ANNOTATION, SUBMIT_TIME_ANNOTATION
from berth.api.loaded import Context
from berth.api.objects import BatchJob, Command, JobAction, JobEvent, LifecyclePolicy, TaskSpec
from berth.api.pod_spec import build_pod
from berth.durations import DurationError, parse_duration


def _policies(
    items: list[schema.JobPolicy], path: str, ctx: Context
) -> tuple[LifecyclePolicy, ...]:
    result = []
    for index, item in enumerate(items):
        timeout = None
        if item.timeout is not None:
            try:
                timeout = parse_duration(item.timeout)
            except DurationError:
                ctx.error(
                    f"{path}[{index}].timeout",
                    f"{schema.show(item.timeout)} is not a duration (expected e.g. 30s, 5m, 1h)",
                )
            else:
                if timeout < 0:
                    ctx.error(
                        f"{path}[{index}].timeout", f"must not be negative (got {item.timeout})"
                    )
                    timeout = None
        if item.exit_code is not None and not 1 <= item.exit_code <= 255:
            ctx.error(
                f"{path}[{index}].exitCode",
                f"{item.exit_code} is not an exit code a container can fail with (expected 1-255)",
            )
        events = {JobEvent(e) for e in item.events}
        if item.event is not None:
            events.add(JobEvent(item.event))
        result.append(
            LifecyclePolicy(JobAction(item.action), frozenset(events), item.exit_code, timeout)
        )
    return tuple(result)


def convert_job(doc: schema.JobDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    tasks: list[TaskSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(spec.tasks):
        path = f"spec.tasks[{index}]"
        if item.name in seen:
            ctx.error(f"{path}.name", f"duplicate task name {schema.show(item.name)}")
        seen.add(item.name)
        if item.min_available is not None and item.min_available > item.replicas:
            ctx.error(
                f"{path}.minAvailable",
                f"{item.min_available} exceeds the task's replicas ({item.replicas})",
            )
        template = item.template
        pod = build_pod(
            f"{meta.name}-{item.name}",
            meta.namespace,
            template.metadata,
            template.spec,
            ctx.within(f"{path}.template"),
        )
        if template.spec.scheduler_name is None and spec.scheduler_name is not None:
            pod.scheduler_name = spec.scheduler_name
        ctx.out.set_origin(pod, ctx.origin(template.spec.priority is not None))
        depends = item.depends_on
        tasks.append(
            TaskSpec(
                name=item.name,
                replicas=item.replicas,
                template=pod,
                min_available=item.min_available,
                policies=_policies(item.policies, f"{path}.policies", ctx),
                depends_on=tuple(depends.name) if depends else (),
                depends_on_any=depends is not None and depends.iteration == "any",
            )
        )
    _check_dependencies(spec, ctx)
    replicas = sum(task.replicas for task in tasks)
    min_available = spec.min_available
    if min_available is None:
        min_available = sum(
            task.replicas if task.min_available is None else task.min_available for task in tasks
        )
    elif min_available > replicas:
        ctx.error("spec.minAvailable", f"{min_available} exceeds the job's replicas ({replicas})")
    first = sum(task.replicas for task in tasks if not task.depends_on)
    if 0 < first < replicas and min_available > first:
        written = spec.min_available is not None
        ctx.warn(
            "spec.minAvailable" if written else "spec",
            f"minAvailable {'' if written else '(by default) '}{min_available} exceeds the "
            f"{first} pods of the tasks without dependsOn, which are created first: the gang "
            f"can never be complete (expected at most {first})",
        )
    if spec.min_success is not None and spec.min_success > replicas:
        ctx.error("spec.minSuccess", f"{spec.min_success} exceeds the job's replicas ({replicas})")
    check_sla(meta.annotations, ctx)
    check_deadline(meta.annotations, ctx)
    elastic = elastic_spec(meta.annotations, tasks, min_available, replicas, ctx)
    min_success = spec.min_success
    if elastic is not None and min_success is None:
        min_success = min_available  # its workers finish together: the job then ends
    job = BatchJob(
        name=meta.name,
        namespace=meta.namespace,
        tasks=tasks,
        min_available=min_available,
        min_success=min_success,
        queue=spec.queue,
        priority_class_name=spec.priority_class_name,
        max_retry=spec.max_retry,
        policies=_policies(spec.policies, "spec.policies", ctx),
        submit_time=float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero)
        or 0.0,
        annotations=dict(meta.annotations),
        preemptable=preemptable(meta, ctx),
        network_topology=network_topology(spec.network_topology),
        elastic=elastic,
    )
    ctx.out.add(ctx.out.jobs, job, ctx.origin())


def elastic_spec(
    annotations: dict[str, str],
    tasks: list[TaskSpec],
    min_available: int,
    replicas: int,
    ctx: Context,
    reference: int = 0,
) -> ElasticSpec | None:
    """The job's elastic spec (``berth.api.elastic``), or None for a rigid job. Its workers
    get no run time of their own: the job's progress decides when they finish. Its duration
    is its run time at ``reference`` workers (its replicas when 0); only a simulation needs
    it."""
    base = "metadata.annotations."
    switch = annotations.get(ELASTIC_ANNOTATION)
    if switch is not None and switch.strip().lower() not in ("true", "false"):
        ctx.error(f"{base}{ELASTIC_ANNOTATION}", f"{schema.show(switch)} is not true or false")
        return None
    if not is_elastic(annotations):
        return None
    ok = True
    if min_available >= replicas:
        ctx.error(
            f"{base}{ELASTIC_ANNOTATION}",
            f"an elastic job needs spec.minAvailable ({min_available}) below its replicas "
            f"({replicas})",
        )
        ok = False
    throughput = Throughput()
    text = annotations.get(THROUGHPUT_ANNOTATION)
    if text is not None:
        try:
            throughput = parse_throughput(text)
        except ValueError as exc:
            ctx.error(f"{base}{THROUGHPUT_ANNOTATION}", str(exc))
            ok = False
    pause = float_annotation(annotations, RESIZE_PAUSE_ANNOTATION, ctx, at_least_zero)
    duration = float_annotation(annotations, DURATION_ANNOTATION, ctx, at_least_zero)
    if duration is None:
        duration = next((t.template.duration for t in tasks if t.template.duration), None)
    if duration is None and not ctx.out.live:
        ctx.error(
            f"{base}{DURATION_ANNOTATION}",
            f"an elastic job needs its run time at its {reference or replicas} workers",
        )
        ok = False
    for task in tasks:
        task.template.duration = None
    if not ok:
        return None
    return ElasticSpec(
        min_available,
        replicas,
        duration,
        throughput,
        DEFAULT_RESIZE_PAUSE if pause is None else pause,
        reference,
    )


def add_operator_job(
    meta: schema.ObjectMeta,
    tasks: list[TaskSpec],
    min_available: int,
    replicas: int,
    ranged: bool,
    reference: int,
    ctx: Context,
) -> None:
    """A training operator's job (Kubeflow's PyTorchJob, PaddlePaddle's TrainingJob) as a
    Volcano Job: elastic when its workers have a range (``ranged``; its duration is its run
    time at ``reference`` pods), else a gang of all its pods, each running for the job's
    ``berth.io/duration``."""
    annotations = dict(meta.annotations)
    if ranged:
        annotations[ELASTIC_ANNOTATION] = "true"
    elastic = elastic_spec(annotations, tasks, min_available, replicas, ctx, reference=reference)
    if elastic is None and not ranged:
        duration = float_annotation(meta.annotations, DURATION_ANNOTATION, ctx, at_least_zero)
        for task in tasks:
            if task.template.duration is None:
                task.template.duration = duration
    job = BatchJob(
        name=meta.name,
        namespace=meta.namespace,
        tasks=tasks,
        min_available=min_available,
        min_success=min_available if elastic is not None else None,
        submit_time=float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero)
        or 0.0,
        annotations=annotations,
        preemptable=preemptable(meta, ctx),
        elastic=elastic,
    )
    ctx.out.add(ctx.out.jobs, job, ctx.origin())


def _check_dependencies(spec: schema.JobSpec, ctx: Context) -> None:
    """``dependsOn`` must name other tasks of the job, without cycles (a cycle never starts)."""
    names = {task.name for task in spec.tasks}
    edges: dict[str, list[str]] = {}
    for index, task in enumerate(spec.tasks):
        if task.depends_on is None:
            continue
        for position, name in enumerate(task.depends_on.name):
            path = f"spec.tasks[{index}].dependsOn.name[{position}]"
            if name == task.name:
                ctx.error(path, "a task cannot depend on itself")
            elif name not in names:
                expected = ", ".join(sorted(names - {task.name})) or "no other task"
                ctx.error(path, f"no task named {schema.show(name)} (expected one of {expected})")
            else:
                edges.setdefault(task.name, []).append(name)
    cycle = _find_cycle(edges)
    if cycle:
        ctx.error("spec.tasks", f"dependsOn forms a cycle: {' → '.join(cycle)}")


def _find_cycle(edges: dict[str, list[str]]) -> list[str]:
    """One cycle of the graph as a closed path (first name repeated at the end), or []."""
    finished: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str]:
        if node in trail:
            return [*trail[trail.index(node) :], node]
        if node in finished:
            return []
        for nxt in edges.get(node, ()):
            found = visit(nxt, [*trail, node])
            if found:
                return found
        finished.add(node)
        return []

    for start in sorted(edges):
        found = visit(start, [])
        if found:
            return found
    return []


def convert_command(doc: schema.CommandDoc, ctx: Context) -> None:
    meta = doc.metadata
    command = Command(
        name=meta.name,
        namespace=meta.namespace,
        action=JobAction(doc.action),
        target=doc.target.name,
        submit_time=float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero)
        or 0.0,
        reason=doc.reason or doc.message,
    )
    ctx.out.add(ctx.out.commands, command, ctx.origin())
