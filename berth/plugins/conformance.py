"""conformance: never evict what keeps the cluster itself running (Volcano's conformance).

Pods in ``kube-system`` and pods of the two built-in system priority classes are taken out of
every victim list, for preemption and reclaim alike.
"""

from __future__ import annotations

from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin

SYSTEM_NAMESPACE = "kube-system"
CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def evictable(pod: Pod) -> bool:
    return pod.namespace != SYSTEM_NAMESPACE and pod.priority_class_name not in CRITICAL_CLASSES


class Conformance(Plugin):
    name = "conformance"
    judges_each_alone = True

    def preemptable(self, preemptor: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        return [c for c in candidates if evictable(c)]

    def reclaimable(self, reclaimer: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        return [c for c in candidates if evictable(c)]
