"""The report's job tables pick the same jobs as sorting every job would."""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.objects import GroupPhase, PodGroup
from berth.collector import MIDDLE_PER_FULL, new_objects_only
from berth.metrics.tables import JobOutcome
from berth.report.jobs import _Job, _largest

# Few distinct sizes, so that ties (broken by the job's key) are common.
sizes = st.lists(st.sampled_from([0.0, 1.0, 2.5, 7.0, -3.0]), max_size=40)


@settings(max_examples=300, deadline=None)
@given(sizes, st.integers(0, 12), st.randoms(use_true_random=False))
def test_largest_is_the_head_of_the_full_sort(values: list[float], count: int, rng) -> None:
    names = [f"job-{i:02d}" for i in range(len(values))]
    rng.shuffle(names)
    jobs = [
        _Job(PodGroup(name=name, submit_time=value), JobOutcome())
        for name, value in zip(names, values, strict=True)
    ]

    def size(job: _Job) -> float:
        return job.group.submit_time

    expected = sorted(jobs, key=lambda j: (-size(j), j.group.key))[:count]
    assert _largest(jobs, size, count) == expected


def test_job_wait_and_jct_are_those_of_its_group() -> None:
    done = PodGroup(
        name="a", submit_time=10.0, start_time=15.0, end_time=40.0, phase=GroupPhase.COMPLETED
    )
    job = _Job(done, JobOutcome())
    assert (job.wait, job.jct, job.phase) == (5.0, 30.0, str(GroupPhase.COMPLETED))
    waiting = _Job(PodGroup(name="b", submit_time=3.0), JobOutcome(phase="Pending"))
    assert (waiting.wait, waiting.jct, waiting.phase) == (None, None, "Pending")


def test_writing_outputs_leaves_the_collector_as_it_found_it() -> None:
    assert gc.get_freeze_count() == 0
    with new_objects_only():
        assert gc.get_freeze_count() > 0
        with new_objects_only():  # an inner block leaves the outer one to unfreeze
            pass
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    gc.freeze()  # a process that froze objects of its own keeps them frozen
    try:
        frozen = gc.get_freeze_count()
        with new_objects_only():
            pass
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()


def test_full_collections_are_rarer_inside_and_as_before_after() -> None:
    before = gc.get_threshold()
    with new_objects_only():
        assert gc.get_threshold()[2] >= MIDDLE_PER_FULL
        assert gc.get_threshold()[:2] == before[:2]
    assert gc.get_threshold() == before
