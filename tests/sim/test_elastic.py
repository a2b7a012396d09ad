"""Elastic Volcano Jobs: throughput models, progress integrated exactly across a resize (a job
that gains workers mid-run ends at the hand-computed time), and bad elastic manifests."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from berth.api.elastic import Throughput, parse_throughput
from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import JobPhase, PodPhase
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, Simulation
from tests.builders import elastic_job_doc, node_doc, timed_pod_doc


@pytest.mark.parametrize(
    "text,workers,speed",
    [
        ("linear", 1, 1.0),
        ("linear", 2, 1.8),  # 0.9 per doubling
        ("linear", 4, 3.24),
        ("linear:1", 8, 8.0),
        ("linear:0.5", 4, 1.0),
        ("amdahl:0", 8, 8.0),
        ("amdahl:0.1", 4, 1 / (0.1 + 0.9 / 4)),
        ("table:1=1,2=1.8,4=3.2", 3, 2.5),  # linear between measured points
        ("table:1=1,2=1.8,4=3.2", 8, 3.2),  # no gain past the last
        ("table:2=1.8,4=3.2", 1, 0.9),
    ],
)
def test_throughput_models(text, workers, speed) -> None:
    assert parse_throughput(text).speed(workers) == pytest.approx(speed)
    assert parse_throughput(text).speed(0) == 0


@pytest.mark.parametrize("text", ["linear", "linear:0.7", "amdahl:0.1", "table:1=1,2=1.8,4=3.2"])
def test_speeds_at_once_are_the_speeds_one_by_one(text) -> None:
    model = parse_throughput(text)
    counts = np.arange(1, 12)
    assert model.speeds(counts) == pytest.approx([model.speed(int(n)) for n in counts])


@pytest.mark.parametrize(
    "text,message",
    [
        ("linear:1.5", "efficiency 1.5 is not in (0, 1]"),
        ("amdahl:x", "'x' is not a number (expected a serial fraction)"),
        ("amdahl:1", "serial fraction 1 is not in [0, 1)"),
        ("table:", "an empty table"),
        ("table:0=1", "is not workers=speed"),
        ("table:1=1,1=2", "a worker count appears twice"),
        ("cubic", "'cubic' is not linear[:e], amdahl:s or table:n=speed,..."),
    ],
)
def test_bad_throughput_models(text, message) -> None:
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        parse_throughput(text)


def node(name: str) -> dict[str, Any]:
    return node_doc(name)


def blocker(name: str, on: str, seconds: int) -> dict[str, Any]:
    return timed_pod_doc(name, on, seconds, {"cpu": "4"})


def elastic_job(annotations: dict[str, str], min_available: int = 2) -> dict[str, Any]:
    return elastic_job_doc({"cpu": "4"}, min_available=min_available, annotations=annotations)


def simulate(docs: list[dict[str, Any]]):
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = parse_config({"simulation": {"startLatency": 0}}, "test")
    sim = SimConfig.from_raw(config.simulation, "test")
    return Simulation(manifests, config, sim_config=sim).run()


def test_a_job_that_gains_workers_ends_at_the_hand_computed_time() -> None:
    # 1000 s at 4 workers under linear 0.9: 4 x 0.81 = 3.24 worker-speeds, 3240 units of work.
    # t=1 (the session after the PodGroup's admission): two workers (n2 and n3 are taken until
    # t=300) run at 1.8: 1.8 x 299 done by t=300. t=300: two more start; 30 s pause, then the
    # rest at 3.24.
    docs = [node(f"n{i}") for i in range(4)]
    docs += [blocker("b2", "n2", 300), blocker("b3", "n3", 300)]
    docs.append(elastic_job({"berth.io/duration": "1000"}))
    result = simulate(docs)
    (job,) = result.jobs
    assert job.phase == JobPhase.COMPLETED
    assert job.resizes == 1
    workers = [p for p in result.pods if p.owner == job.key]
    assert len(workers) == 4
    assert {p.phase for p in workers} == {PodPhase.SUCCEEDED}
    assert sorted(p.start_time for p in workers) == [1, 1, 300, 300]
    end = 330 + (3240 - 1.8 * 299) / 3.24
    assert [p.end_time for p in workers] == [pytest.approx(end)] * 4
    # the end it had at two workers (t=1801) was cancelled: it does not stretch the run
    assert result.end_time == pytest.approx(end)


def test_a_job_at_its_full_size_from_the_start_takes_its_duration() -> None:
    docs = [node(f"n{i}") for i in range(4)]
    docs.append(elastic_job({"berth.io/duration": "1000", "berth.io/throughput": "amdahl:0.2"}))
    result = simulate(docs)
    (job,) = result.jobs
    assert job.resizes == 0
    assert [p.end_time for p in result.pods] == [pytest.approx(1 + 1000)] * 4


def test_without_room_for_more_it_runs_at_its_minimum() -> None:
    # only two nodes: the job never grows; linear 0.9: 3240 / 1.8 = 1800 s from t=1
    docs = [node("n0"), node("n1"), elastic_job({"berth.io/duration": "1000"})]
    result = simulate(docs)
    (job,) = result.jobs
    assert job.phase == JobPhase.COMPLETED
    ends = [p.end_time for p in result.pods if p.phase == PodPhase.SUCCEEDED]
    assert ends == [pytest.approx(1801), pytest.approx(1801)]
    assert {p.phase for p in result.pods} == {PodPhase.SUCCEEDED, PodPhase.DELETED}


@pytest.mark.parametrize(
    "annotations,min_available,message",
    [
        ({"berth.io/duration": "60"}, 4, "an elastic job needs spec.minAvailable (4) below its "
         "replicas (4)"),
        ({}, 2, "berth.io/duration: an elastic job needs its run time at its 4 workers"),
        ({"berth.io/duration": "60", "berth.io/throughput": "fast"}, 2,
         "berth.io/throughput: 'fast' is not linear[:e]"),
    ],
)  # fmt: skip
def test_bad_elastic_jobs(annotations, min_available, message) -> None:
    manifests = parse_documents([elastic_job(annotations, min_available)], "test")
    assert any(message in str(p) for p in manifests.errors), [str(p) for p in manifests.errors]


def test_default_model_is_linear_point_nine() -> None:
    assert Throughput().speed(2) == pytest.approx(1.8)


def test_workers_above_the_minimum_leave_a_lent_server_for_free() -> None:
    from berth.api.objects import Pod
    from berth.controllers.loaning import server_costs
    from berth.sim.elastic import ElasticProgress
    from berth.sim.events import EventQueue

    manifests = parse_documents([elastic_job({"berth.io/duration": "100"})], "test")
    (job,) = manifests.jobs
    progress = ElasticProgress([job], EventQueue())
    workers = [Pod(f"w{i}", owner=job.key, group="train", requests={"nvidia.com/gpu": 1000})
               for i in range(3)]  # fmt: skip
    for w in workers:
        progress.started(w, 0.0)
    assert [progress.above_minimum(w) for w in workers] == [True] * 3  # 3 running, minimum 2
    costs = server_costs(
        {"lent-a": workers[:1], "lent-b": [Pod("rigid", group="other")]},
        {job.key: workers, "default/other": [Pod("rigid", group="other")]},
        progress.above_minimum,
    )
    assert costs["lent-a"] == 0 and costs["lent-b"] > 0
    progress.stopped(workers[0], 10.0)
    assert not progress.above_minimum(workers[1])  # down to its minimum: no longer free


def test_preemption_shrinks_an_elastic_job_before_it_breaks_any_gang() -> None:
    # Four workers fill four nodes; at t=100 a high-priority pod needs a node. Volcano's gang
    # vote lets only workers above the minimum go: the job shrinks to 3 and goes on, with no
    # restart; its evicted worker is recreated and waits.
    docs = [node(f"n{i}") for i in range(4)]
    docs.append(elastic_job({"berth.io/duration": "1000"}))
    urgent = blocker("urgent", "", 500)
    del urgent["spec"]["nodeName"]
    urgent["metadata"]["annotations"]["berth.io/submit-time"] = "100"
    urgent["spec"]["priority"] = 1000
    docs.append(urgent)
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = parse_config(
        {
            "actions": "enqueue, allocate, preempt, backfill",
            "tiers": [
                {"plugins": [{"name": "priority"}, {"name": "gang"}]},
                {"plugins": [{"name": "resource-fit"}]},
            ],
            "simulation": {"startLatency": 0},
        },
        "test",
    )
    sim = SimConfig.from_raw(config.simulation, "test")
    result = Simulation(manifests, config, sim_config=sim).run()
    (job,) = result.jobs
    assert job.phase == JobPhase.COMPLETED and job.retries == 0
    evicted = [p for p in result.pods if p.phase == PodPhase.EVICTED]
    assert len(evicted) == 1 and evicted[0].owner == job.key
    assert job.resizes >= 1
    urgent_pod = next(p for p in result.pods if p.name == "urgent")
    assert urgent_pod.start_time == 100


def test_a_target_that_does_not_fit_runs_with_what_fits() -> None:
    # Alnair reduces an elastic job's target by one until it fits; berth's placement gets the
    # same end at once: 4 asked, 3 nodes, the job runs with 3 from t=1.
    docs = [node(f"n{i}") for i in range(3)]
    docs.append(elastic_job({"berth.io/duration": "1000"}))
    result = simulate(docs)
    (job,) = result.jobs
    started = [p for p in result.pods if p.start_time is not None]
    assert len(started) == 3 and job.phase == JobPhase.COMPLETED
    speed3 = 3 * 0.9 ** math.log2(3)
    assert [p.end_time for p in started] == [pytest.approx(1 + 3240 / speed3)] * 3
