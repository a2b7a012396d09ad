"""What the serve loop lends the parts attached to it (capacity loaning, colocation, the GPU
profiles): a Protocol ``berth.k8s.server.Server`` satisfies, so that those parts name what they
use without importing the server that builds them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from berth.api.objects import Pod
from berth.controllers.job import JobController
from berth.framework.scheduler import Scheduler
from berth.k8s.books import PodBooks
from berth.k8s.cache import KubeStore
from berth.k8s.client import KubeClient
from berth.k8s.kubeflow import KubeflowJobs
from berth.k8s.leader import LeaderElector
from berth.k8s.metrics import Metrics
from berth.k8s.options import ServeOptions
from berth.k8s.scaling import ServeScaling


class ServeParts(Protocol):
    client: KubeClient
    store: KubeStore
    scheduler: Scheduler
    metrics: Metrics
    books: PodBooks
    options: ServeOptions
    controller: JobController
    kubeflow: KubeflowJobs | None
    scaling: ServeScaling | None
    elector: LeaderElector | None
    clock: Callable[[], float]

    def evict_running(self, pods: list[Pod], reason: str) -> int: ...

    def mark_dirty(self) -> None: ...
