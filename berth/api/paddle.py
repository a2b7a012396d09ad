"""PaddlePaddle EDL ``paddlepaddle.org/v1`` TrainingJob documents → batch Jobs berth's Job
controller runs.

A TrainingJob becomes a Job with a ``master`` task of one pod when it is ``fault_tolerant``
(EDL starts a master only then), a ``pserver`` task of the parameter servers'
``min-instance`` (EDL never scales them) and a ``trainer`` task of up to ``max-instance``
trainers, so its pods are named ``<job>-master-0``, ``<job>-pserver-<i>`` and
``<job>-trainer-<i>``. Every pod is one container of the job's ``image`` with its role's
``resources``. A trainer range (``min-instance`` below ``max-instance``) makes it an elastic
job (``berth.api.elastic``) whose gang is the master, the parameter servers and
``min-instance`` trainers; ``berth.io/duration`` is then its run time with ``max-instance``
trainers. Without a range it is a gang of all its pods, and the duration is theirs.
"""

from __future__ import annotations

from berth.api import schema
from berth.api.jobs import add_operator_job
from berth.api.loaded import Context
from berth.api.objects import TaskSpec
from berth.api.pod_spec import build_pod
from berth.resources import GPU

#: The image EDL gives a TrainingJob that names none.
DEFAULT_IMAGE = "paddlepaddle/paddlecloud-job"
#: The GPU resource name of the Kubernetes releases EDL was written for; read as nvidia.com/gpu.
OLD_GPU = "alpha.kubernetes.io/nvidia-gpu"
#: The labels EDL puts on each role's pods.
ROLE_LABELS = {
    "master": "paddle-job-master",
    "pserver": "paddle-job-pserver",
    "trainer": "paddle-job",
}


class _RoleContext(Context):
    """Files a role's pod problems under ``spec.<role>``: the pod's one container is the role,
    so ``spec.containers[0].resources`` reads as the role's own ``resources``."""

    def report(self, severity: str, path: str, message: str) -> None:
        super().report(severity, path.removeprefix("spec.containers[0]."), message)


def convert_training_job(doc: schema.TrainingJobDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    trainer, pserver = spec.trainer, spec.pserver
    trainers_min, trainers_max = trainer.min_instance, trainer.max_instance
    if trainers_min > trainers_max:
        ctx.error(
            "spec.trainer.min-instance", f"{trainers_min} exceeds max-instance ({trainers_max})"
        )
        return
    if trainers_min < trainers_max and not spec.fault_tolerant:
        ctx.error(
            "spec.fault_tolerant",
            f"trainers between {trainers_min} and {trainers_max} need fault_tolerant: true "
            "(EDL scales only fault-tolerant jobs)",
        )
        return
    pservers = pserver.min_instance if pserver is not None else 0
    if pserver is not None and pserver.max_instance is not None and pservers > pserver.max_instance:
        ctx.error(
            "spec.pserver.min-instance", f"{pservers} exceeds max-instance ({pserver.max_instance})"
        )
        return
    if spec.master is not None and not spec.fault_tolerant:
        ctx.warn("spec.master", "EDL runs a master only for a fault_tolerant job, ignored")
    masters = 1 if spec.fault_tolerant else 0
    master_resources = spec.master.resources if spec.master is not None else None
    roles = (
        ("master", master_resources, masters),
        ("pserver", pserver.resources if pserver is not None else None, pservers),
        ("trainer", trainer.resources, trainers_max),
    )
    tasks = []
    for role, resources, count in roles:
        if not count:
            continue
        pod_spec = _pod_spec(role, spec.image or DEFAULT_IMAGE, resources, ctx)
        if pod_spec is None:
            return
        labels = {ROLE_LABELS[role]: meta.name}
        role_ctx = _RoleContext(ctx.out, ctx.file, ctx.kind, ctx.name, ctx.prefix, f"spec.{role}")
        pod = build_pod(
            f"{meta.name}-{role}",
            meta.namespace,
            schema.TemplateMeta(labels=labels),
            pod_spec,
            role_ctx,
        )
        tasks.append(TaskSpec(name=role, replicas=count, template=pod))
    replicas = masters + pservers + trainers_max
    add_operator_job(
        meta,
        tasks,
        masters + pservers + trainers_min,
        replicas,
        trainers_min < trainers_max,
        replicas,
        ctx,
    )


def _pod_spec(
    role: str, image: str, resources: schema.ResourceRequirements | None, ctx: Context
) -> schema.PodSpec | None:
    """A role's pod: one container of the job's image with the role's resources, the old GPU
    name read as ``nvidia.com/gpu`` (None, with an error, when both names are given)."""
    amounts: dict[str, dict] = {"requests": {}, "limits": {}}
    for part in amounts:
        given = dict(getattr(resources, part)) if resources is not None else {}
        if OLD_GPU in given:
            if GPU in given:
                ctx.error(
                    f"spec.{role}.resources.{part}.{OLD_GPU}",
                    f"given together with {GPU} (expected one of the two)",
                )
                return None
            given[GPU] = given.pop(OLD_GPU)
        amounts[part] = given
    container = schema.Container(
        name=role, image=image, resources=schema.ResourceRequirements(**amounts)
    )
    return schema.PodSpec(containers=[container])
