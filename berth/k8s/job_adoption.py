"""A Volcano Job's pods taken back by a restarted ``berth serve``: its Job controller makes a
slot's first pod under the name of the latest one its predecessor made, which the cache then
adopts (``KubeStore.create``), instead of a second pod beside it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from berth.api.keys import JOB_NAME_LABEL, TASK_INDEX_ANNOTATION, TASK_NAME_LABEL
from berth.api.objects import BatchJob
from berth.k8s.client import KubeClient
from berth.k8s.kinds import BY_KIND


def made_before(client: KubeClient, job: BatchJob) -> dict[tuple[str, int], int]:
    """``attempts_made`` of the job's pods as the API has them (asked once per job, before its
    first pod is made: the caches may not have its pods yet)."""
    path = BY_KIND["Pod"].collection(job.namespace)
    query = {"labelSelector": f"{JOB_NAME_LABEL}={job.name}"}
    return attempts_made(job, client.request("GET", path, query=query)["items"])


def attempts_made(job: BatchJob, pods: Iterable[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """Per (task, index) slot of a Volcano Job, the pods its controller made before a restart,
    read from the API pods' names (``<job>-<task>-<index>``, then ``.<n>`` for the n-th
    replacement): the latest's n + 1, so that the slot's next pod takes its name and adopts it,
    or n + 2 when the latest is terminating (its name is not free)."""
    made: dict[tuple[str, int], tuple[int, bool]] = {}
    for raw in pods:
        meta = raw.get("metadata") or {}
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        if meta.get("namespace") != job.namespace or labels.get(JOB_NAME_LABEL) != job.name:
            continue
        task = labels.get(TASK_NAME_LABEL) or annotations.get(TASK_NAME_LABEL, "")
        index = str(annotations.get(TASK_INDEX_ANNOTATION, ""))
        base, name = f"{job.name}-{task}-{index}", str(meta.get("name", ""))
        suffix = name[len(base) :] if index.isdigit() and name.startswith(base) else "?"
        if suffix and not (suffix[0] == "." and suffix[1:].isdigit()):
            continue
        n = int(suffix[1:]) if suffix else 0
        slot = (task, int(index))
        if n >= made.get(slot, (-1, False))[0]:
            made[slot] = (n, bool(meta.get("deletionTimestamp")))
    return {slot: n + (2 if terminating else 1) for slot, (n, terminating) in made.items()}
