"""pods.csv and jobs.csv, and the shared number formatting."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.metrics import tables
from berth.metrics.tables import JobOutcome, format_decimal, write_jobs_csv, write_pods_csv


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (0.0, "0"),
        (12.0, "12"),
        (12.5, "12.5"),
        (0.1 + 0.2, "0.3"),
        (1.23456, "1.235"),
        (-0.0001, "0"),
        (-2.5, "-2.5"),
        (86400.0, "86400"),
    ],
)
def test_format_decimal(value: float | None, text: str) -> None:
    assert format_decimal(value) == text


def test_pods_csv_exact(tmp_path: Path) -> None:
    pods = [
        Pod(
            name="train-0",
            namespace="ml",
            group="train",
            bound_node="node-3",
            gpu_devices="0,1,2,3",
            cpuset="0-3,8",
            submit_time=10.0,
            bind_time=12.25,
            start_time=13.0,
            end_time=3613.0001,
            phase=PodPhase.SUCCEEDED,
            waited_for="minResources exceed the idle capacity: cpu needs 8, 2 idle",
        ),
        Pod(name="web", namespace="default", group="web-g", submit_time=5.5, priority=1000),
        Pod(name="orphan", group="", submit_time=0.0, phase=PodPhase.EVICTED),
    ]
    path = tmp_path / "pods.csv"
    reasons = {
        "default/web": "0/3 nodes available: 3 insufficient cpu",
        "default/orphan": "preempted by default/train-7",
    }
    write_pods_csv(path, pods, {"ml/train": "research", "default/web-g": "online"}, reasons)
    assert path.read_text() == (
        "namespace,name,job,queue,node,devices,cpuset,submit_time,bind_time,start_time,end_time,"
        "phase,priority,reason,waited_for\n"
        'ml,train-0,train,research,node-3,"0,1,2,3","0-3,8",10,12.25,13,3613,Succeeded,0,,'
        '"minResources exceed the idle capacity: cpu needs 8, 2 idle"\n'
        "default,web,web-g,online,,,,5.5,,,,Pending,1000,0/3 nodes available: 3 insufficient cpu,"
        "\n"
        "default,orphan,,,,,,0,,,,Evicted,0,preempted by default/train-7,\n"
    )


def test_pods_csv_rows_of_a_task_share_their_formatting(tmp_path: Path, monkeypatch) -> None:
    """Pods of one group and times in a row, then others, with the kept formatted times let
    go of every few rows: each row as its own fields format."""
    monkeypatch.setattr(tables, "_TIMES_KEPT", 2)
    pods = [
        Pod(name=f"t{i}", group="task" if i < 4 else "other", submit_time=1.5 * (i // 2))
        for i in range(7)
    ]
    for pod in pods[::2]:
        pod.bind_time, pod.start_time, pod.phase = 9.0, 9.125, PodPhase.RUNNING
    path = tmp_path / "pods.csv"
    write_pods_csv(path, pods, {"default/task": "a", "default/other": "b"})
    rows = path.read_text().splitlines()[1:]
    assert rows == [
        f"default,{pod.name},{pod.group},{'a' if pod.group == 'task' else 'b'},,,,"
        f"{format_decimal(pod.submit_time)},{format_decimal(pod.bind_time)},"
        f"{format_decimal(pod.start_time)},,{pod.phase},0,,"
        for pod in pods
    ]


def test_jobs_csv_exact(tmp_path: Path) -> None:
    groups = [
        PodGroup(
            name="train",
            namespace="ml",
            queue="research",
            min_member=4,
            submit_time=10.0,
            start_time=12.125,
            end_time=100.0,
            phase=GroupPhase.COMPLETED,
        ),
        PodGroup(name="web-g", submit_time=5.5),
    ]
    path = tmp_path / "jobs.csv"
    outcomes = {
        "ml/train": JobOutcome(tasks=5, phase="Completed", retries=1, preemptions=1, resizes=3),
        "default/web-g": JobOutcome(reason="queue q1 is closed"),
    }
    write_jobs_csv(path, groups, outcomes)
    assert path.read_text() == (
        "namespace,name,queue,min_member,tasks,submit_time,start_time,end_time,phase,"
        "retries,preemptions,resizes,reason\n"
        "ml,train,research,4,5,10,12.125,100,Completed,1,1,3,\n"
        "default,web-g,default,1,0,5.5,,,Pending,0,0,0,queue q1 is closed\n"
    )


def test_csv_quotes_awkward_names(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    write_jobs_csv(path, [PodGroup(name="a,b")], {})
    assert path.read_text().splitlines()[1].startswith('default,"a,b",')


def test_tables_are_byte_identical_for_identical_input(tmp_path: Path) -> None:
    def pods() -> list[Pod]:
        return [
            Pod(name=f"p{i}", group=f"g{i % 3}", submit_time=i / 3, bind_time=i / 7)
            for i in range(100)
        ]

    write_pods_csv(tmp_path / "a.csv", pods(), {"default/g1": "q"})
    write_pods_csv(tmp_path / "b.csv", pods(), {"default/g1": "q"})
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
