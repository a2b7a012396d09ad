"""tiresias under preemption: after a session no waiting job could have run on GPUs that a
job of a lower level (running before the session) holds, and every job of a trace completes."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.actions.eviction import Evictor
from berth.api.objects import PodGroup
from berth.cli import main
from berth.framework.scheduler import Scheduler
from berth.plugins.tiresias import Service, Tiresias
from tests.builders import GANG, config, node, pod
from tests.properties.generators import asked_pod_by_pod, decisions

GPU = 1000
SIZES = st.sampled_from([1, 2, 4, 8])
RUNNING = st.lists(st.tuples(SIZES, st.integers(0, 3000)), max_size=6)  # GPUs, started
WAITING = st.lists(st.tuples(SIZES, st.integers(0, 9000)), min_size=1, max_size=5)  # banked


def _scheduler(
    nodes: int, running: list[tuple[int, int]], waiting: list[tuple[int, int]]
) -> tuple[Scheduler, Tiresias]:
    """Nodes of 8 GPUs, jobs running on them since ``running``'s times, and jobs waiting with
    ``waiting``'s banked service."""
    cfg = config(["tiresias", GANG, "resource-fit", "least-allocated"], actions="allocate, preempt")
    s = Scheduler(cfg)
    for i in range(nodes):
        s.add_node(node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU))
    for index, (gpus, start) in enumerate(running):
        p = pod(f"r{index}", cpu=100, mem=1, gpu=gpus * GPU, start_time=float(start))
        free = {n: s.state.free[s.state.rows[n]][s.state.gpu_column] for n in s.state.names}
        room = [n for n in sorted(free) if free[n] >= gpus * GPU]
        if room:
            s.place_bound(p, room[0])
    tiresias = next(p for p in s.framework.plugins if isinstance(p, Tiresias))
    for index, (gpus, banked) in enumerate(waiting):
        tiresias.services[f"default/w{index}"] = Service(banked=float(banked))
        s.submit(pod(f"w{index}", cpu=100, mem=1, gpu=gpus * GPU, submit_time=float(index)))
    return s, tiresias


@settings(max_examples=60, deadline=None)
@given(nodes=st.integers(1, 3), running=RUNNING, waiting=WAITING)
def test_no_higher_level_job_waits_beside_a_lower_level_one(nodes, running, waiting) -> None:
    s, tiresias = _scheduler(nodes, running, waiting)
    s.run_session(3000.0)
    for job in s.jobs.values():
        if not job.pending:
            continue
        mine = tiresias.level(job)
        need = sum(p.requests.get("nvidia.com/gpu", 0) for p in job.pending)
        for row, name in enumerate(s.state.names[: s.state.n]):
            lower = 0  # GPUs of jobs of a lower level that ran before the session
            for other in s.jobs.values():
                if other is job or tiresias.level(other) <= mine:
                    continue
                for p in other.bound.values():
                    if p.bound_node == name and p.start_time is not None:
                        lower += p.requests.get("nvidia.com/gpu", 0)
            free = int(s.state.free[row][s.state.gpu_column])
            assert not lower or free + lower < need, (job.key, name, free, lower, need)


def _decided(nodes: int, running: list[tuple[int, int]], waiting: list[tuple[int, int]]) -> tuple:
    return decisions(_scheduler(nodes, running, waiting)[0], 3000.0)


@pytest.mark.from_source  # patches the compiled Evictor (tests/conftest.py)
@settings(max_examples=60, deadline=None)
@given(nodes=st.integers(1, 3), running=RUNNING, waiting=WAITING)
def test_preempt_decides_alike_with_the_ranked_victims_and_without(nodes, running, waiting):
    """The ranks kept per victim table, one answer for waiting jobs of the same level, and
    the nodes that the allowed victims could never free passed over change what is
    computed, not what is decided."""
    fast = _decided(nodes, running, waiting)
    with asked_pod_by_pod():
        assert _decided(nodes, running, waiting) == fast


GANGS = st.lists(  # pods, GPUs each, banked service
    st.tuples(st.integers(1, 4), SIZES, st.integers(0, 9000)), min_size=1, max_size=3
)


def _table(victims) -> tuple:
    """A victim table as building it decides it (the order of a job's pods aside)."""
    pods = zip(
        victims.pods,
        victims.rows.tolist(),
        victims.requests.tolist(),
        victims.priority.tolist(),
        strict=True,
    )
    return (
        list(victims.jobs),
        {key: sorted(p.key for p in group) for key, group in victims.eligible.items()},
        list(victims.eligible),
        sorted((p.key, row, tuple(request), priority) for p, row, request, priority in pods),
        victims.top.tolist(),
        victims.count.tolist(),
        {row: sorted(keys) for row, keys in victims.on_row.items()},
    )


def _derivations(nodes: int, running: list[tuple[int, int]], gangs: list) -> int:
    """One session with ``gangs`` waiting (each task that evicts asks a victim table);
    every table derived from the last one is checked against one built afresh."""
    s, tiresias = _scheduler(nodes, running, [])
    for index, (members, gpus, banked) in enumerate(gangs):
        name = f"g{index}"
        s.add_group(PodGroup(name, min_member=members))
        tiresias.services[f"default/{name}"] = Service(banked=float(banked))
        for m in range(members):
            gang_pod = pod(f"{name}-{m}", cpu=100, mem=1, gpu=gpus * GPU, group=name)
            gang_pod.submit_time = float(index)
            s.submit(gang_pod)
    derived = 0
    original = Evictor._derived

    def checked(evictor, victim_jobs, best_effort):
        nonlocal derived
        table = original(evictor, victim_jobs, best_effort)
        if table is not None:
            derived += 1
            assert _table(table) == _table(evictor._built(victim_jobs, best_effort))
        return table

    with patch.object(Evictor, "_derived", checked):
        s.run_session(3000.0)
    return derived


@pytest.mark.from_source  # patches the compiled Evictor (tests/conftest.py)
@settings(max_examples=80, deadline=None)
@given(nodes=st.integers(1, 3), running=RUNNING, gangs=GANGS)
def test_a_table_derived_after_an_eviction_is_the_one_built_afresh(nodes, running, gangs):
    _derivations(nodes, running, gangs)


@pytest.mark.from_source
def test_tasks_and_jobs_that_evict_in_turn_derive_their_tables():
    # Four two-GPU jobs with 6,000 GPU-seconds each (level 1) fill the node. A fresh gang of
    # two 4-GPU tasks evicts for both, the second from the table the first left; so do two
    # one-task jobs, the second after the first's statement was committed.
    assert _derivations(1, [(2, 0)] * 4, [(2, 4, 0)]) == 1
    assert _derivations(1, [(2, 0)] * 4, [(1, 4, 0), (1, 4, 0)]) == 1


TRACE = st.lists(
    st.tuples(st.integers(0, 5000), st.integers(1, 4000), SIZES), min_size=1, max_size=12
)


@settings(max_examples=12, deadline=None)
@given(jobs=TRACE)
def test_every_job_completes(jobs) -> None:
    repo = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        rows = sorted(jobs)
        lines = ["job_id,submission_time,duration,num_gpu"]
        lines += [
            f"j{i},{submit},{duration},{gpus}" for i, (submit, duration, gpus) in enumerate(rows)
        ]
        (work / "trace.csv").write_text("\n".join(lines) + "\n")
        (work / "node.yaml").write_text(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: "
            '{cpu: "512", memory: 4Ti, nvidia.com/gpu: "8", pods: "110"}\n'
        )
        args = ["simulate", "--trace", str(work / "trace.csv"), "--format", "itp"]
        args += ["--cluster", str(work / "node.yaml"), "--quiet", "--out", str(work / "out")]
        config_file = str(repo / "examples" / "policies" / "tiresias.yaml")
        assert main([*args, "--config", config_file]) == 0
        done = list(csv.DictReader((work / "out" / "jobs.csv").open()))
        assert len(done) == len(rows)
        assert all(r["phase"] == "Completed" for r in done)
        # a job runs its duration once, resumed where it stopped: its runs add up to it
        runs: dict[str, float] = {}
        for r in csv.DictReader((work / "out" / "pods.csv").open()):
            runs[r["job"]] = runs.get(r["job"], 0.0) + float(r["end_time"]) - float(r["start_time"])
        for i, (_, duration, _) in enumerate(rows):
            assert abs(runs[f"j{i}"] - duration) < 1e-6
