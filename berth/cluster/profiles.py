"""What each owner's pods used, kept after they leave, so the owner's next pods are placed by
it (Alnair's profiler: utilization aggregated from pods to the job that owns them).

A pod's usage is measured as fractions of its requests: its cpu and memory (the peak of its
usage curve when it has one) and its GPU (``utilization``). When a pod leaves its node the
owner's profile keeps the larger of what it had and what the pod used, per metric, so a job
whose last run peaked at 40% of its GPUs is estimated at 40% next time.
"""

from __future__ import annotations

import numpy as np

from berth.api.objects import Pod

#: The metrics of a profile, in order.
METRICS = ("cpu", "memory", "gpu")


def owner_key(pod: Pod) -> str:
    """The object whose pods share a profile: the workload or job that made the pod, else its
    PodGroup; a lone pod has none (nothing later can learn from it)."""
    if pod.owner:
        return pod.owner
    if pod.group:
        return f"{pod.namespace}/{pod.group}"
    return ""


def measured(pod: Pod) -> np.ndarray:
    """What ``pod`` used of its requests, per metric (cpu, memory, gpu)."""
    profile = pod.usage_profile
    if profile is None:
        cpu = memory = pod.utilization
    else:
        cpu, memory = max(profile.cpu), max(profile.memory)
    return np.array([cpu, memory, pod.utilization], dtype=np.float64)


class OwnerProfiles:
    """Owner → the per-metric maximum of what its departed pods used."""

    def __init__(self) -> None:
        self._by_owner: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._by_owner)

    def record(self, pod: Pod) -> None:
        owner = owner_key(pod)
        if not owner:
            return
        used = measured(pod)
        known = self._by_owner.get(owner)
        self._by_owner[owner] = used if known is None else np.maximum(known, used)

    def get(self, pod: Pod) -> np.ndarray | None:
        """The profile of the pod's owner, or None when none of its pods has left yet."""
        owner = owner_key(pod)
        return self._by_owner.get(owner) if owner else None
