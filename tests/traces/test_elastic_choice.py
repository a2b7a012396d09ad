"""Which trace jobs --elastic-fraction makes elastic: the same ones on every run, about the
stated share, only jobs of two or more identical workers, gang half and size as asked."""

from __future__ import annotations

from berth.api.objects import Pod, PodGroup
from berth.traces.elastic import chosen, elastic_job
from berth.traces.model import TraceJob


def job(name: str, workers: int, duration: float | None = 600.0) -> TraceJob:
    pods = [
        Pod(f"{name}-{i}", group=name, requests={"nvidia.com/gpu": 8000}, duration=duration)
        for i in range(workers)
    ]
    return TraceJob(PodGroup(name=name, min_member=workers, queue="q"), pods)


def test_the_choice_is_a_stable_share() -> None:
    names = [f"job-{i}" for i in range(2000)]
    picked = [n for n in names if chosen(n, 0.25)]
    assert picked == [n for n in names if chosen(n, 0.25)]
    assert 400 < len(picked) < 600
    assert all(chosen(n, 1.0) for n in names) and not any(chosen(n, 0.0) for n in names)


def test_an_elastic_trace_job() -> None:
    made = elastic_job(job("big", 4), 1.0)
    assert made is not None and made.elastic is not None
    assert (made.min_available, made.tasks[0].replicas, made.queue) == (2, 4, "q")
    assert (made.elastic.min_workers, made.elastic.max_workers, made.elastic.reference) == (2, 4, 4)
    assert made.elastic.duration == 600 and made.tasks[0].template.duration is None
    assert elastic_job(job("one", 1), 1.0) is None  # one worker: nothing to shrink
    assert elastic_job(job("open", 3, None), 1.0) is None  # no duration: no work to measure
