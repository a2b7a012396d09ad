"""``berth serve --scaling aryl``'s remaining work of a job (``berth.k8s.remaining``), from its
trainer's ``berth.io/progress``, its ``berth.io/duration`` and the workers berth saw running:
each source and the arithmetic of each, without a cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from berth.api.elastic import ElasticSpec, Throughput
from berth.api.objects import BatchJob, PodPhase
from berth.k8s.remaining import RemainingWork

#: speed(n) = n: two workers for 100 s do 200 one-worker seconds.
LINEAR = Throughput("linear", 1.0)


class Store:
    """What RemainingWork reads of the cache: the job's raw object."""

    def __init__(self, kind: str, annotations: dict[str, str]) -> None:
        self.objects = {(kind, "default/train"): {"metadata": {"annotations": annotations}}}

    def raw(self, kind: str, key: str) -> dict[str, Any] | None:
        return self.objects.get((kind, key))


def job(duration: float | None) -> BatchJob:
    return BatchJob("train", elastic=ElasticSpec(1, 4, duration, LINEAR))


CASES = [
    # (annotations on the job, its duration, source, remaining one-worker seconds)
    # work = 1000 s at its four workers = 4000; berth saw 200 done
    ({}, 1000.0, "estimate", 3800.0),
    ({"berth.io/progress": "0.5"}, 1000.0, "progress", 2000.0),
    ({"berth.io/progress": "1"}, 1000.0, "progress", 0.0),
    ({"berth.io/progress": "0.25"}, None, "progress", 600.0),  # 200 × 0.75 / 0.25
    ({"berth.io/progress": "0"}, None, "unknown", None),  # nothing to scale
    ({}, None, "unknown", None),
    ({"berth.io/progress": "half"}, 1000.0, "estimate", 3800.0),  # unreadable: ignored
    ({"berth.io/progress": "1.5"}, 1000.0, "estimate", 3800.0),  # above 1: ignored
    ({"berth.io/progress": "nan"}, None, "unknown", None),
]


@pytest.mark.parametrize("kind", ["Job", "PyTorchJob"])
@pytest.mark.parametrize(("annotations", "duration", "source", "remaining"), CASES)
def test_remaining_work_and_its_source(
    kind: str, annotations: dict[str, str], duration: float | None, source: str, remaining: Any
):
    workers = {f"w{i}": SimpleNamespace(phase=PodPhase.RUNNING, start_time=0.0) for i in range(2)}
    scheduler = SimpleNamespace(jobs={"default/train": SimpleNamespace(bound=workers)})
    work = RemainingWork(Store(kind, annotations), scheduler)  # type: ignore[arg-type]
    train = job(duration)
    work.observe([train], now=0.0)
    work.observe([train], now=100.0)
    left = work.remaining(train)
    if remaining is None:
        assert left is None
    else:
        assert left == pytest.approx(remaining)
    assert work.sources == {"default/train": source}
    assert work.counts()[source] == 1


def test_a_job_met_after_a_restart_is_credited_since_its_earliest_worker_started():
    # Running since t=40 and t=70 at two workers: credited 2 × (100 − 40) at first sight.
    workers = {
        "a": SimpleNamespace(phase=PodPhase.RUNNING, start_time=40.0),
        "b": SimpleNamespace(phase=PodPhase.RUNNING, start_time=70.0),
        "c": SimpleNamespace(phase=PodPhase.PENDING, start_time=None),
    }
    scheduler = SimpleNamespace(jobs={"default/train": SimpleNamespace(bound=workers)})
    work = RemainingWork(Store("Job", {}), scheduler)  # type: ignore[arg-type]
    train = job(1000.0)
    work.observe([train], now=100.0)
    assert work.remaining(train) == pytest.approx(4000.0 - 120.0)
    # A job that ended is forgotten.
    work.observe([], now=200.0)
    assert work.sources == {}
