"""Capacity loaning: which lent node a reclaim takes (table), lending after the idle time,
reclaimed training pods restarted and every pod counted, and the inference wait bound."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import Manifests, parse_documents
from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.api.selectors import Taint
from berth.controllers.loaning import reclaim_costs, reclaim_order, rigid, server_costs
from berth.controllers.loaning_config import LoaningConfig
from berth.framework.config_files import load_config
from berth.sim.config import SimConfig, SimConfigError
from berth.sim.engine import SimResult, Simulation
from tests.builders import elastic_job_doc, node, pod

POOL = "berth.io/pool"
GPU8 = 8000


def gpu_pod(name: str, group: str, gpus: int, where: str = "", **fields):
    p = pod(name, gpu=gpus * 1000, group=group, **fields)
    p.bound_node = where
    return p


# ---------------------------------------------------------------------------- reclaim order

#: job → [(node, GPUs of one pod)], and the order reclaim should take the lent nodes in.
#: Cost of a node = sum over its pods of (pod GPUs / the job's GPUs).
ORDER_CASES = [
    (
        "empty node first",
        {"a": [("n1", 8)]},
        ["n1", "n2"],
        set(),
        ["n2", "n1"],
        {"n1": 1.0, "n2": 0.0},
    ),
    (
        "a sliver of a big job costs less than a whole small job",
        {"big": [("n1", 1), ("t1", 8), ("t2", 7)], "small": [("n2", 1)]},
        ["n1", "n2"],
        set(),
        ["n1", "n2"],
        {"n1": 1 / 16, "n2": 1.0},
    ),
    (
        "shares of several jobs add up",
        {"a": [("n1", 4), ("t1", 4)], "b": [("n1", 4), ("t1", 4)], "c": [("n2", 2), ("t1", 2)]},
        ["n1", "n2"],
        set(),
        ["n2", "n1"],
        {"n1": 1.0, "n2": 0.5},
    ),
    (
        "equal costs go by name",
        {"a": [("n2", 8)], "b": [("n1", 8)]},
        ["n2", "n1"],
        set(),
        ["n1", "n2"],
        {"n1": 1.0, "n2": 1.0},
    ),
    (
        "pods free to remove cost nothing",
        {"rigid": [("n1", 2), ("t1", 6)], "elastic": [("n2", 8), ("t1", 8)]},
        ["n1", "n2"],
        {"elastic"},
        ["n2", "n1"],
        {"n1": 0.25, "n2": 0.0},
    ),
    (
        "the same jobs, all rigid",
        {"rigid": [("n1", 2), ("t1", 6)], "elastic": [("n2", 8), ("t1", 8)]},
        ["n1", "n2"],
        set(),
        ["n1", "n2"],
        {"n1": 0.25, "n2": 0.5},
    ),
    (
        "a job without GPUs counts pods",
        {"cpu": [("n1", 0), ("t1", 0), ("t2", 0), ("t3", 0)], "gpu": [("n2", 4), ("t1", 4)]},
        ["n1", "n2"],
        set(),
        ["n1", "n2"],
        {"n1": 0.25, "n2": 0.5},
    ),
]


def _on_nodes(
    job_pods: dict[str, list[Pod]], lent: list[str]
) -> tuple[dict[str, list[Pod]], dict[str, list[Pod]]]:
    """The pods on each lent node, and every job's pods by job key: a reclaim cost's inputs."""
    on_node = {
        name: [p for ps in job_pods.values() for p in ps if p.bound_node == name] for name in lent
    }
    return on_node, {f"default/{job}": pods for job, pods in job_pods.items()}


@pytest.mark.parametrize(
    "jobs,lent,free_jobs,expected,costs",
    [case[1:] for case in ORDER_CASES],
    ids=[case[0] for case in ORDER_CASES],
)
def test_reclaim_takes_the_least_cost_node(jobs, lent, free_jobs, expected, costs) -> None:
    job_pods = {
        job: [gpu_pod(f"{job}-{i}", job, gpus, where) for i, (where, gpus) in enumerate(placed)]
        for job, placed in jobs.items()
    }
    free = (lambda p: p.group in free_jobs) if free_jobs else rigid
    got = server_costs(*_on_nodes(job_pods, lent), free)
    assert got == pytest.approx(costs)
    assert reclaim_order(got) == expected


#: job → (started at, [(node, GPUs of one pod)]); jobs keeping their work; the order and the
#: costs at t=1000: the GPU-seconds the stopped jobs' pods have run.
WORK_CASES = [
    (
        "the job that started last goes first",
        {"old": (0.0, [("n1", 8), ("t1", 8)]), "new": (900.0, [("n2", 8)])},
        set(),
        ["n2", "n1"],
        {"n1": 16000.0, "n2": 800.0},
    ),
    (
        "a job that keeps its work costs nothing",
        {"old": (0.0, [("n1", 8)]), "elastic": (0.0, [("n2", 8), ("t1", 8)])},
        {"elastic"},
        ["n2", "n1"],
        {"n1": 8000.0, "n2": 0.0},
    ),
    (
        "a pod without GPUs counts as one, a pod not started as none",
        {"cpu": (500.0, [("n1", 0)]), "gpu": (None, [("n2", 8)])},
        set(),
        ["n2", "n1"],
        {"n1": 500.0, "n2": 0.0},
    ),
]


@pytest.mark.parametrize(
    "jobs,keeping,expected,costs",
    [case[1:] for case in WORK_CASES],
    ids=[case[0] for case in WORK_CASES],
)
def test_reclaim_by_work_takes_the_node_that_loses_least(jobs, keeping, expected, costs) -> None:
    job_pods = {
        job: [
            gpu_pod(f"{job}-{i}", job, gpus, where, start_time=start)
            for i, (where, gpus) in enumerate(placed)
        ]
        for job, (start, placed) in jobs.items()
    }
    keeps = lambda p: p.group in keeping  # noqa: E731
    got = reclaim_costs("work", *_on_nodes(job_pods, ["n1", "n2"]), rigid, keeps, 1000.0)
    assert got == pytest.approx(costs)
    assert reclaim_order(got) == expected


# ---------------------------------------------------------------------------- scenarios

LOANING = LoaningConfig(idle_before_lend=100.0, check_interval=10.0, wait_bound=10.0)


def cluster() -> list:
    inference = [
        node(f"inf-{i}", cpu=32000, gpu=GPU8, labels={POOL: "inference"}) for i in range(2)
    ]
    training = [node("train-0", cpu=32000, gpu=GPU8, labels={POOL: "training"})]
    return inference + training


def simulate(
    manifests: Manifests, until: float | None = None, loaning=LOANING
) -> tuple[Simulation, SimResult]:
    manifests.nodes = manifests.nodes or cluster()
    sim = Simulation(
        manifests, load_config(None), until=until, sim_config=SimConfig(loaning=loaning)
    )
    return sim, sim.run()


def inference_pod(name: str, at: float, gpus: int = 4, duration: float | None = None):
    return pod(
        name, gpu=gpus * 1000, node_selector={POOL: "inference"}, submit_time=at, duration=duration
    )


def training_job(name: str, workers: int, gpus: int, at: float, duration: float):
    group = PodGroup(name, min_member=workers, submit_time=at)
    pods = [
        pod(f"{name}-{i}", gpu=gpus * 1000, group=name, submit_time=at, duration=duration)
        for i in range(workers)
    ]
    return group, pods


def test_idle_inference_nodes_are_lent_after_the_idle_time() -> None:
    # inf-0 serves until t=300; inf-1 never serves.
    sim, result = simulate(
        Manifests(pods=[inference_pod("web", 0.0, gpus=8, duration=299.0)]), until=600
    )
    lends = dict((name, at) for at, name in sim.loaning.lends)
    assert 100 <= lends["inf-1"] <= 110  # idle from the start, checked every 10 s
    assert 300 + 100 <= lends["inf-0"] <= 300 + 110  # idle once its pod ended (start latency 1 s)
    state = sim.scheduler.state
    node_ = state.nodes[state.rows["inf-0"]]
    assert node_.labels[POOL] == "lent" and Taint(POOL, "lent", "NoSchedule") in node_.taints
    lent = sim.series.extra("lent_gpus")
    times = sim.series.times
    assert lent[times < 100].max() == 0 and lent[-1] == 16


def test_training_runs_on_a_lent_node_only_while_lent() -> None:
    # Two 8-GPU jobs and one training node: the second job waits for inf-1 to be lent.
    g1, p1 = training_job("a", 1, 8, 0.0, 1000.0)
    g2, p2 = training_job("b", 1, 8, 0.0, 1000.0)
    sim, result = simulate(Manifests(groups=[g1, g2], pods=p1 + p2))
    second = max(p1 + p2, key=lambda p: p.bind_time)
    assert second.bound_node.startswith("inf-") and 100 <= second.bind_time <= 112
    assert not sim.loaning.reclaims


def test_reclaimed_training_pods_restart_and_every_pod_is_counted() -> None:
    # A 2-worker gang spans train-0 and a lent node; inference wants both inference nodes back
    # at t=500 for 500 s, after which they are lent again and the gang runs once more.
    group, workers = training_job("gang", 2, 8, 200.0, 1000.0)
    web = [inference_pod(f"web-{i}", 0.0, gpus=8, duration=150.0) for i in range(2)]
    late = [inference_pod(f"late-{i}", 500.0, gpus=8, duration=500.0) for i in range(2)]
    sim, result = simulate(Manifests(groups=[group], pods=web + workers + late), until=5000)
    (event,) = [e for e in sim.loaning.reclaims if e.pods_preempted]
    # The gang as a whole: its worker on train-0 cannot run short of its peer.
    assert event.jobs == ["default/gang"] and event.pods_preempted == 2
    assert event.cost == pytest.approx(0.5)  # half the gang's GPUs were on that node
    # The web pods ended at 151, so inf-0 was lent at 260 (idle from the 160 check) and the
    # gang started at 261: 239 s on 8 GPUs each, lost, as both workers start over.
    assert all(p.start_time == 261.0 for p in workers)
    assert event.gpu_hours_lost == pytest.approx(2 * 8 * 239 / 3600)
    evicted = sorted((p for p in result.pods if p.phase == PodPhase.EVICTED), key=lambda p: p.name)
    assert [p.name for p in evicted] == ["gang-0", "gang-1"]
    assert all(p.end_time == 500.0 for p in evicted)
    assert all(result.reasons[p.ref].endswith("taken back for inference") for p in evicted)
    replacements = sorted((p for p in result.pods if "." in p.name), key=lambda p: p.name)
    assert [p.name for p in replacements] == ["gang-0.1", "gang-1.1"]
    assert all(p.submit_time == 500.0 and p.phase == PodPhase.SUCCEEDED for p in replacements)
    # Rerun from the start once the inference nodes were idle and lent again.
    assert all(p.start_time >= 1000 + LOANING.idle_before_lend for p in replacements)
    assert group.phase == GroupPhase.COMPLETED and group.end_time == replacements[0].end_time
    finished = (PodPhase.SUCCEEDED, PodPhase.EVICTED)
    assert len(result.pods) == 8 and all(p.phase in finished for p in result.pods)
    late_pods = [p for p in result.pods if p.name.startswith("late-")]
    assert all(p.bound_node.startswith("inf-") for p in late_pods)
    assert max(p.bind_time - p.submit_time for p in late_pods) <= LOANING.wait_bound


def test_a_reclaim_takes_the_lent_node_that_costs_least() -> None:
    # After both inference nodes are lent: a 3-worker gang over train-0, train-1 and one lent
    # node (a third of it there), then a 1-worker job on the other lent node (all of it).
    nodes = cluster() + [node("train-1", cpu=32000, gpu=GPU8, labels={POOL: "training"})]
    big, big_pods = training_job("big", 3, 8, 110.0, 5000.0)
    small, small_pods = training_job("small", 1, 8, 111.0, 5000.0)
    web = inference_pod("web", 500.0, gpus=8)
    manifests = Manifests(nodes=nodes, groups=[big, small], pods=[*big_pods, *small_pods, web])
    sim, result = simulate(manifests, until=600)
    lent_big = next(p.bound_node for p in big_pods if p.bound_node.startswith("inf-"))
    (event,) = sim.loaning.reclaims
    assert (event.node, event.cost) == (lent_big, pytest.approx(1 / 3))
    assert event.jobs == ["default/big"] and event.pods_preempted == 3
    assert web.bound_node == lent_big and small_pods[0].phase == PodPhase.RUNNING


@pytest.mark.parametrize("cost,stopped", [("jobs", "a"), ("work", "b")])
def test_a_reclaim_by_work_takes_the_node_of_the_job_that_ran_least(cost, stopped) -> None:
    # train-0 is busy; a (t=110) and b (t=400) each take a whole lent node. For web, Aryl's
    # cost finds them alike (one whole job each) and takes inf-0 by name; by work, b has run
    # for 100 s and a for 390 s, so b's node goes back.
    busy, busy_pods = training_job("busy", 1, 8, 0.0, 50000.0)
    a, a_pods = training_job("a", 1, 8, 110.0, 5000.0)
    b, b_pods = training_job("b", 1, 8, 400.0, 5000.0)
    web = inference_pod("web", 500.0, gpus=8)
    manifests = Manifests(groups=[busy, a, b], pods=[*busy_pods, *a_pods, *b_pods, web])
    loaning = replace(LOANING, reclaim_cost=cost)
    sim, result = simulate(manifests, until=600, loaning=loaning)
    assert (a_pods[0].bound_node, b_pods[0].bound_node) == ("inf-0", "inf-1")
    (event,) = sim.loaning.reclaims
    assert event.jobs == [f"default/{stopped}"]
    assert web.bound_node == event.node


@pytest.mark.parametrize("relend", [True, False])
def test_a_rigid_job_a_reclaim_restarted_is_kept_off_lent_nodes_unless_relent(relend) -> None:
    """train-0 is held until t=3000. Job r (t=200) runs on a lent node until inference takes
    both back at t=500 for 500 s. Lent again from about t=1110, they take r's replacement
    (``relendRestarted: true``, Aryl's way) or not: it waits for train-0 and a reclaim cannot
    restart it again. Job s, never restarted, takes a lent node either way."""
    busy, busy_pods = training_job("busy", 1, 8, 0.0, 3000.0)
    r, r_pods = training_job("r", 1, 8, 200.0, 1000.0)
    s, s_pods = training_job("s", 1, 8, 1200.0, 1000.0)
    late = [inference_pod(f"late-{i}", 500.0, gpus=8, duration=500.0) for i in range(2)]
    manifests = Manifests(groups=[busy, r, s], pods=busy_pods + r_pods + s_pods + late)
    loaning = replace(LOANING, relend_restarted=relend)
    sim, result = simulate(manifests, until=8000, loaning=loaning)
    assert r_pods[0].bound_node.startswith("inf-") and r_pods[0].end_time == 500.0
    (again,) = [p for p in result.pods if p.name == "r-0.1"]
    if relend:
        assert again.bound_node.startswith("inf-") and again.start_time < 1200
    else:
        assert again.bound_node == "train-0" and again.start_time >= 3000
    assert s_pods[0].bound_node.startswith("inf-") and s_pods[0].start_time < 1300
    assert sim.loaning.restarted == (set() if relend else {"default/r"})


def test_the_waiting_pods_of_a_restarted_job_are_kept_off_lent_nodes_too() -> None:
    """Job g (minMember 1) has g-0 and g-1 on the lent nodes and g-2 waiting when inference
    takes both back at t=500. With ``relendRestarted: false`` none of its pods, the waiting
    one included, runs on a lent node again: each waits for train-0 (held until t=3000), so
    the reclaims at t=1500 stop nothing."""
    busy, busy_pods = training_job("busy", 1, 8, 0.0, 3000.0)
    g = PodGroup("g", min_member=1, submit_time=200.0)
    g_pods = [
        pod(f"g-{i}", gpu=8000, group="g", submit_time=200.0, duration=1000.0) for i in range(3)
    ]
    inference = [
        inference_pod(f"{name}-{i}", at, gpus=8, duration=500.0)
        for name, at in (("late", 500.0), ("later", 1500.0))
        for i in range(2)
    ]
    manifests = Manifests(groups=[busy, g], pods=busy_pods + g_pods + inference)
    loaning = replace(LOANING, relend_restarted=False)
    sim, result = simulate(manifests, until=8000, loaning=loaning)
    ran = {p.name: p.bound_node for p in result.pods if p.group == "g" and p.start_time}
    assert ran == {"g-0": "inf-0", "g-1": "inf-1", "g-2": "train-0", "g-0.1": "train-0",
                   "g-1.1": "train-0"}  # fmt: skip
    assert [e.jobs for e in sim.loaning.reclaims] == [["default/g"], ["default/g"], [], []]


def test_a_restarted_gang_waits_again_without_being_lost() -> None:
    group, workers = training_job("gang", 2, 8, 200.0, 1000.0)
    late = [inference_pod(f"late-{i}", 500.0, gpus=8) for i in range(2)]  # for good
    _, result = simulate(Manifests(groups=[group], pods=workers + late), until=3000)
    phases = {p.name: p.phase for p in result.pods}
    assert phases == {
        "gang-0": PodPhase.EVICTED,
        "gang-1": PodPhase.EVICTED,
        "gang-0.1": PodPhase.PENDING,
        "gang-1.1": PodPhase.PENDING,
        "late-0": PodPhase.RUNNING,
        "late-1": PodPhase.RUNNING,
    }
    assert group.phase == GroupPhase.INQUEUE  # admitted, waiting for room again


@settings(max_examples=12, deadline=None)
@given(
    arrivals=st.lists(st.integers(min_value=120, max_value=2000), min_size=1, max_size=2),
    jobs=st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=5),
)
def test_inference_pods_wait_no_longer_than_the_bound(arrivals, jobs) -> None:
    """Whatever training holds the lent nodes, an inference pod that fits the pool is bound
    within two scheduling periods (1 s each here), the most the stated bound may assume."""
    groups, pods = [], []
    for i, gpus in enumerate(jobs):
        group, members = training_job(f"t{i}", 1, gpus, 110.0 + i, 5000.0)
        groups.append(group)
        pods += members
    web = [
        inference_pod(f"web-{i}", float(at), gpus=8, duration=300.0)
        for i, at in enumerate(arrivals)
    ]
    sim, result = simulate(Manifests(groups=groups, pods=pods + web), until=4000)
    waits = [p.bind_time - p.submit_time for p in result.pods if p.name.startswith("web-")]
    assert len(waits) == len(arrivals) and max(waits) <= 2 * 1.0 <= LOANING.wait_bound


@pytest.mark.parametrize(
    "loaning,period,message",
    [
        (
            LoaningConfig(wait_bound=1.0),
            1.0,
            "simulation.loaning.waitBound: 1s cannot be kept with a scheduling period of 1s "
            "(expected at least two periods, 2s)",
        ),
        (
            LoaningConfig(inference_pool="serving"),
            1.0,
            "simulation.loaning: no node labelled berth.io/pool=serving",
        ),
    ],
)
def test_loaning_that_cannot_work_is_refused(loaning, period, message) -> None:
    with pytest.raises(SimConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SimConfig(loaning=loaning).check_loaning(cluster(), period)


@pytest.mark.parametrize(
    "raw,message",
    [
        ({"idleBefore": 3}, "simulation.loaning.idleBefore: unknown field"),
        ({"idleBeforeLend": -1}, "simulation.loaning.idleBeforeLend: expected seconds >= 0"),
        ({"checkInterval": 0}, "simulation.loaning.checkInterval: expected seconds > 0"),
        ({"lentPool": "inference"}, "simulation.loaning.lentPool: must differ from inferencePool"),
        ({"poolLabel": ""}, "simulation.loaning.poolLabel: expected a non-empty string"),
        ([], "simulation.loaning: expected a mapping"),
        ({"lendTo": "rigid"}, "simulation.loaning.lendTo: expected one of all, elastic"),
        ({"reclaimCost": "gpus"}, "simulation.loaning.reclaimCost: expected one of jobs, work"),
        ({"relendRestarted": "no"}, "simulation.loaning.relendRestarted: expected true or false"),
    ],
)
def test_bad_loaning_section(raw, message) -> None:
    with pytest.raises(SimConfigError) as error:
        SimConfig.from_raw({"loaning": raw}, "c.yaml")
    assert str(error.value).startswith(f"c.yaml: {message}")


def test_taking_back_an_elastic_jobs_extra_worker_stops_no_job_and_loses_no_work() -> None:
    """An elastic job of 1 to 2 workers of 8 GPUs, both on lent nodes. Inference takes one
    node back at t=500: either worker is above the minimum, so the node costs nothing, the job
    goes on with the other, and no GPU-hour counts as lost."""
    doc = elastic_job_doc(
        {"nvidia.com/gpu": "8"},
        replicas=2,
        min_available=1,
        annotations={"berth.io/duration": "2000", "berth.io/submit-time": "200"},
    )
    manifests = parse_documents([doc], "test")
    manifests.pods = [inference_pod("late", 500.0, gpus=8, duration=100.0)]
    sim, result = simulate(manifests, until=5000)
    workers = [p for p in result.pods if p.owner == "default/train"]
    first = [p for p in workers if p.start_time < 500]
    assert len(first) == 2 and all(p.bound_node.startswith("inf-") for p in first)
    (event,) = [e for e in sim.loaning.reclaims if e.pods_preempted]
    assert sum(p.end_time == 500 for p in first) == 1  # the other worker runs on
    assert (event.cost, event.jobs, event.gpu_hours_lost) == (0, [], 0)
    (job,) = result.jobs
    assert job.phase.value == "Completed" and job.resizes >= 1


ELASTIC_ONLY = replace(LOANING, lend_to="elastic")


def test_lending_to_elastic_jobs_only_keeps_rigid_jobs_off_lent_nodes() -> None:
    """With ``lendTo: elastic`` a rigid job waits for the training node, though both
    inference nodes are lent, while an elastic job's workers take the lent nodes (a reclaim
    costs them no work); with ``all`` the rigid job takes a lent node."""
    doc = elastic_job_doc(
        {"nvidia.com/gpu": "8"},
        replicas=2,
        min_available=1,
        annotations={"berth.io/duration": "2000", "berth.io/submit-time": "200"},
    )
    for loaning, rigid_on_lent in ((ELASTIC_ONLY, False), (LOANING, True)):
        manifests = parse_documents([doc], "test")
        g1, p1 = training_job("first", 1, 8, 0.0, 3000.0)  # holds train-0
        g2, p2 = training_job("rigid", 1, 8, 150.0, 500.0)
        manifests.groups += [g1, g2]
        manifests.pods += p1 + p2
        sim, result = simulate(manifests, until=5000, loaning=loaning)
        (rigid,) = [p for p in result.pods if p.group == "rigid"]
        assert rigid.bound_node.startswith("inf-") == rigid_on_lent
        if not rigid_on_lent:
            assert rigid.bound_node == "train-0" and rigid.bind_time >= 3000
        workers = [p for p in result.pods if p.owner == "default/train"]
        assert workers and all(p.bound_node.startswith("inf-") for p in workers)
