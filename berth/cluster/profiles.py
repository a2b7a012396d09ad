"""What each owner's pods used, kept after they leave, so the owner's next pods are placed by
it (Alnair's profiler: utilization aggregated from pods to the job that owns them).

A pod's usage is measured as fractions of its requests: its cpu and memory (the peak of its
usage curve when it has one) and its GPU (``utilization``). When a pod leaves its node the
owner's profile keeps the larger of what it had and what the pod used, per metric, so a job
whose last run peaked at 40% of its GPUs is estimated at 40% next time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

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
        return pod.job_key
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
    """Owner → the per-metric maximum of what its departed pods used, least recently recorded
    first.

    ``measure`` is how a departing pod is measured (a live cluster reads what its node agent
    reported), ``limit`` how many owners are kept (the least recently recorded go first; None:
    all, as the simulator keeps them), and ``changes`` counts records (for whoever saves them).
    """

    def __init__(self) -> None:
        self._by_owner: dict[str, np.ndarray] = {}
        self.measure: Callable[[Pod], np.ndarray] = measured
        self.limit: int | None = None
        self.changes = 0

    def __len__(self) -> int:
        return len(self._by_owner)

    def record(self, pod: Pod) -> None:
        owner = owner_key(pod)
        if not owner:
            return
        used = self.measure(pod)
        known = self._by_owner.pop(owner, None)
        self._by_owner[owner] = used if known is None else np.maximum(known, used)
        self.changes += 1
        if self.limit is not None:
            while len(self._by_owner) > self.limit:
                del self._by_owner[next(iter(self._by_owner))]

    def restore(self, owner: str, profile: np.ndarray) -> None:
        """Put back a profile saved earlier (as the most recently recorded)."""
        self._by_owner.pop(owner, None)
        self._by_owner[owner] = profile

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        """(owner, profile), least recently recorded first."""
        return iter(self._by_owner.items())

    def get(self, pod: Pod) -> np.ndarray | None:
        """The profile of the pod's owner, or None when none of its pods has left yet."""
        owner = owner_key(pod)
        return self._by_owner.get(owner) if owner else None
