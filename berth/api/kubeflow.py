"""Kubeflow ``kubeflow.org/v1`` PyTorchJob documents → batch Jobs berth's Job controller runs.

A PyTorchJob becomes a Job with a ``master`` task (when it has a Master) and a ``worker``
task, so its pods are named as the training operator names them (``<job>-master-0``,
``<job>-worker-<i>``). Without ``elasticPolicy`` it is a gang of all its pods. With one, it is
an elastic job (``berth.api.elastic``): the gang is the master and ``minReplicas`` workers,
up to ``maxReplicas`` workers run, and ``berth.io/duration`` is its run time at the Worker's
``replicas`` (for a rigid one, its pods' run time).
"""

from __future__ import annotations

from berth.api import schema
from berth.api.jobs import add_operator_job
from berth.api.loaded import Context
from berth.api.objects import TaskSpec
from berth.api.pod_spec import build_pod


def convert_pytorch_job(doc: schema.PyTorchJobDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    replica_specs = spec.pytorch_replica_specs
    worker = replica_specs.get("Worker")
    if worker is None:
        ctx.error("spec.pytorchReplicaSpecs", "a PyTorchJob needs a Worker replica spec")
        return
    master = replica_specs.get("Master")
    masters = master.replicas if master is not None else 0
    policy = spec.elastic_policy
    workers_min = worker.replicas
    workers_max = worker.replicas
    if policy is not None:
        workers_min = policy.min_replicas or worker.replicas
        workers_max = policy.max_replicas or worker.replicas
        where = "spec.elasticPolicy"
        if workers_min > workers_max:
            ctx.error(
                f"{where}.minReplicas",
                f"{workers_min} exceeds maxReplicas ({workers_max})",
            )
            return
        if not workers_min <= worker.replicas <= workers_max:
            ctx.error(
                "spec.pytorchReplicaSpecs.Worker.replicas",
                f"{worker.replicas} is outside elasticPolicy's {workers_min}..{workers_max}",
            )
            return
    tasks = []
    for name, item, count in (("master", master, masters), ("worker", worker, workers_max)):
        if item is None or not count:
            continue
        kind = name.capitalize()
        pod = build_pod(
            f"{meta.name}-{name}",
            meta.namespace,
            item.template.metadata,
            item.template.spec,
            ctx.within(f"spec.pytorchReplicaSpecs.{kind}.template"),
        )
        tasks.append(TaskSpec(name=name, replicas=count, template=pod))
    add_operator_job(
        meta,
        tasks,
        masters + workers_min,
        masters + workers_max,
        workers_min < workers_max,
        masters + worker.replicas,
        ctx,
    )
