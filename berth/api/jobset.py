"""JobSet (``jobset.x-k8s.io/v1alpha2``): ``replicatedJobs``, each ``replicas`` copies of a
``batch/v1`` Job template, finished by a success policy and restarted (or failed) by a failure
policy; optionally each Job in a topology domain of its own (the
``alpha.jobset.sigs.k8s.io/exclusive-topology`` annotation).

Shapes follow kubernetes-sigs/jobset ``api/jobset/v1alpha2``; the manifest model is in
``berth.api.schema.jobset``, the spec the controller reads and the conversion into it are here.
The Jobs a JobSet makes are ordinary ``batch/v1`` Jobs in the store, run by berth's Job
controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from berth.api.loaded import Context
from berth.api.lws import nested_template
from berth.api.templates import add_workload
from berth.api.workloads import JOB_SET, KubeJobSpec

if TYPE_CHECKING:
    from berth.api.schema.jobset import JobSetDoc
    from berth.api.schema.workloads import KubeJobSpec as KubeJobSpecDoc

JOBSET_API = "jobset.x-k8s.io/v1alpha2"

# Labels and annotations JobSet puts on its Jobs and their pods (upstream's names).
JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_KEY = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX_KEY = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX_KEY = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
RESTART_ATTEMPT_KEY = "jobset.sigs.k8s.io/restart-attempt"
EXCLUSIVE_KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"


# -- what the controller reads --------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ReplicatedJob:
    name: str
    replicas: int
    job: KubeJobSpec
    labels: dict[str, str]  # the Job template's metadata
    annotations: dict[str, str]


@dataclass(slots=True, frozen=True)
class JobSetSpec:
    replicated_jobs: tuple[ReplicatedJob, ...]
    success_operator: str = "All"  # or Any
    #: The replicated Jobs the success policy looks at (all when empty).
    success_targets: tuple[str, ...] = ()
    max_restarts: int = 0

    @property
    def pod_count(self) -> int:
        return sum(
            r.replicas * (r.job.completions or r.job.parallelism) for r in self.replicated_jobs
        )


def job_spec(
    owner: str, namespace: str, doc: KubeJobSpecDoc, path: str, ctx: Context
) -> KubeJobSpec:
    """A batch/v1 Job spec as berth's Job controller reads it, with Kubernetes' defaults."""
    template = nested_template(owner, namespace, doc.template, f"{path}.template", ctx)
    if doc.completions is None and doc.parallelism is None:
        completions, parallelism = 1, 1
    else:
        completions = doc.completions
        parallelism = 1 if doc.parallelism is None else doc.parallelism
    if doc.completion_mode == "Indexed" and completions is None:
        ctx.error(f"{path}.completions", "field required when completionMode is Indexed")
    deadline = doc.active_deadline_seconds
    return KubeJobSpec(
        template=template,
        parallelism=parallelism,
        completions=completions,
        backoff_limit=doc.backoff_limit,
        completion_mode=doc.completion_mode,
        active_deadline=None if deadline is None else float(deadline),
    )


def convert_job_set(doc: JobSetDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    replicated = []
    seen: set[str] = set()
    for i, rjob in enumerate(spec.replicated_jobs):
        path = f"spec.replicatedJobs[{i}]"
        if rjob.name in seen:
            ctx.error(f"{path}.name", f'"{rjob.name}" is not unique')
        seen.add(rjob.name)
        job = job_spec(meta.name, meta.namespace, rjob.template.spec, f"{path}.template.spec", ctx)
        replicated.append(
            ReplicatedJob(
                rjob.name,
                rjob.replicas,
                job,
                dict(rjob.template.metadata.labels),
                dict(rjob.template.metadata.annotations),
            )
        )
    success = spec.success_policy
    targets = tuple(success.target_replicated_jobs) if success else ()
    for j, target in enumerate(targets):
        if target not in seen:
            ctx.error(
                f"spec.successPolicy.targetReplicatedJobs[{j}]",
                f'"{target}" is not the name of a replicated job',
            )
    failure = spec.failure_policy
    if failure is not None and failure.restart_strategy != "Recreate":
        ctx.warn(
            "spec.failurePolicy.restartStrategy",
            f"{failure.restart_strategy} is run as Recreate (every Job recreated at once)",
        )
    if EXCLUSIVE_KEY in meta.annotations and not meta.annotations[EXCLUSIVE_KEY]:
        ctx.error(f"metadata.annotations.{EXCLUSIVE_KEY}", "must name a node label")
    converted = JobSetSpec(
        replicated_jobs=tuple(replicated),
        success_operator=success.operator if success else "All",
        success_targets=targets,
        max_restarts=failure.max_restarts if failure else 0,
    )
    add_workload(JOB_SET, doc, converted, ctx)
