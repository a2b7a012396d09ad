"""Which trace jobs --elastic-fraction makes elastic: the same ones on every run, about the
stated share, only jobs of identical workers whose range holds two sizes or more, gang and
maximum as multiples of the workers asked for (half and as asked by default)."""

from __future__ import annotations

import re

import pytest

from berth.api.objects import Pod, PodGroup
from berth.traces.elastic import chosen, elastic_job, parse_range
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
    # Annotated as a manifest's elastic Job is, so its PodGroup says so to the scheduler.
    assert made.annotations == {"berth.io/elastic": "true"}
    assert elastic_job(job("one", 1), 1.0) is None  # one worker: nothing to shrink
    assert elastic_job(job("open", 3, None), 1.0) is None  # no duration: no work to measure


@pytest.mark.parametrize(
    "span,workers,expected",
    [
        ("0.5:1", 4, (2, 4)),
        ("0.5:1", 3, (2, 3)),
        ("0.5:1", 1, None),  # one size only: stays rigid
        ("0.5:2", 1, (1, 2)),  # a one-worker job may now grow
        ("0.5:2", 3, (2, 6)),
        ("1:1.5", 3, (3, 4)),  # floor(4.5): never a partial worker
        ("0.25:1", 8, (2, 8)),
    ],
)
def test_the_range_is_a_multiple_of_the_workers_asked_for(span, workers, expected) -> None:
    made = elastic_job(job("j", workers), 1.0, parse_range(span))
    if expected is None:
        assert made is None
        return
    assert made is not None and made.elastic is not None
    assert (made.elastic.min_workers, made.elastic.max_workers) == expected
    assert made.min_available == expected[0] and made.tasks[0].replicas == expected[1]
    assert made.elastic.reference == workers  # the trace's duration is its run time as asked


@pytest.mark.parametrize(
    "text,message",
    [
        ("0.5", "'0.5' is not LOW:HIGH (two numbers, e.g. 0.5:2)"),
        ("a:2", "'a:2' is not LOW:HIGH"),
        ("0:2", "0 is not in (0, 1] (the gang's share of the workers)"),
        ("0.5:0.8", "0.8 is below 1 (the maximum's multiple of the workers)"),
        ("nan:2", "is not LOW:HIGH"),
    ],
)
def test_bad_ranges(text, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_range(text)
