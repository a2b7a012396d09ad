"""Malformed input: ``FILE:LINE: what is wrong (expected ...)`` with on_bad_row="fail", counted
and reported with "skip", and never dropped silently."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from berth.traces import (
    TraceError,
    TraceOptions,
    detect_format,
    iter_jobs,
    iter_specs,
    load_nodes,
)
from berth.traces.loader import find_table

SKIP = TraceOptions(on_bad_row="skip")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.fixture
def itp(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        "itp.csv",
        """
        job_id,submission_time,duration,num_gpu
        a,0,100,1
        b,10,100,x
        c,20,100
        d,30,-5,1
        e,40,100,0
        f,50,100,2
        """,
    )


def test_first_bad_row_fails_with_file_and_line(itp: Path) -> None:
    with pytest.raises(TraceError) as caught:
        list(iter_jobs(itp))
    assert str(caught.value) == (
        f'{itp}:3: num_gpu "x" is not a number (expected a GPU count >= 1)'
    )


def test_skip_counts_every_bad_row(itp: Path) -> None:
    jobs = iter_jobs(itp, options=SKIP)
    assert [job.group.name for job in jobs] == ["a", "f"]
    assert jobs.log.rows == 6
    assert jobs.skipped == [
        f'{itp}:3: num_gpu "x" is not a number (expected a GPU count >= 1)',
        f"{itp}:4: has 3 fields (expected 4: job_id,submission_time,duration,num_gpu)",
        f"{itp}:5: duration -5 is below 0 (expected seconds >= 0)",
        f"{itp}:6: num_gpu 0 is below 1 (expected a GPU count >= 1)",
    ]
    assert jobs.log.lines() == [f"skipped 4 bad rows (first: {jobs.skipped[0]})"]


def test_header_without_a_required_column(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "job_id,submission_time,duration\na,0,1\n")
    with pytest.raises(TraceError, match=r"t.csv:1: header lacks num_gpu \(expected job_id,"):
        list(iter_jobs(path, fmt="itp"))


def test_philly_job_without_attempts_names_its_first_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cluster_job_log",
        """
        [
          {"jobid": "j1", "submitted_time": "2017-10-03 02:25:44", "attempts": [
            {"start_time": "2017-10-03 02:26:00", "end_time": "2017-10-03 02:27:00",
             "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]},
          {"jobid": "j2", "submitted_time": "2017-10-03 02:30:00", "attempts": []},
          {"jobid": "j3", "submitted_time": "not a time", "attempts": []}
        ]
        """,
    )
    with pytest.raises(TraceError, match=r"cluster_job_log:5: job j2 has no attempts"):
        list(iter_jobs(path))
    jobs = iter_jobs(path, options=SKIP)
    assert [job.group.name for job in jobs] == ["j1"]
    assert jobs.skipped[1].endswith(
        ':6: submitted_time "not a time" is not a date and time (expected e.g. 2017-10-03 02:25:44)'
    )


def test_invalid_json_is_fatal_even_when_skipping(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster_job_log", '[\n  {"jobid": "j1",\n   "vc": }\n]\n')
    with pytest.raises(TraceError, match=r"cluster_job_log:3: invalid JSON: Expecting value"):
        list(iter_jobs(path, options=SKIP))


def test_openb_rows_that_contradict_themselves(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "pods.csv",
        """
        name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
        p0,1000,1024,1,1500,,LS,Running,0,10,0
        p1,1000,1024,1,500,,LS,Running,20,10,20
        p2,1000,1024,1,500,,XX,Running,20,,20
        """,
    )
    jobs = iter_jobs(path, options=SKIP)
    (kept,) = jobs
    assert [message.split(": ", 1)[1] for message in jobs.skipped] == [
        "gpu_milli 1500 is above 1000 (expected thousandths of a GPU, 0..1000)",
        "deletion_time 10 is before creation_time 20",
    ]
    assert (kept.pods[0].priority, kept.pods[0].duration) == (0, None)  # unknown QoS: no class


def test_alibaba2017_rule_exclusions_are_counted_not_bad(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "batch_task.csv",
        """
        10,20,1,1,2,Terminated,50,0.01
        10,0,1,2,2,Running,50,0.01
        10,20,1,3,393,Waiting,,
        30,20,1,4,1,Terminated,50,0.01
        """,
    )
    specs = iter_specs(path, options=SKIP)
    assert [(spec.name, spec.duration) for spec in specs] == [("task-1-1", 10), ("task-1-2", None)]
    assert specs.log.excluded == {"tasks without a cpu or memory request": 1}
    assert specs.skipped == [
        f"{path}:4: task_end_time 20 is before task_create_time 30",
    ]
    assert specs.log.lines()[1] == "left out 1 tasks without a cpu or memory request"


def test_unknown_format_names_the_known_ones_in_one_short_line(tmp_path: Path) -> None:
    path = write(tmp_path, "x.csv", "a,b,c," + "x" * 500 + "\n1,2,3\n")
    with pytest.raises(TraceError) as caught:
        detect_format(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: unknown trace format: first line 'a,b,c,xxx")
    for name in ("itp", "philly", "openb", "helios", "alibaba2017", "pai", "alibaba2018"):
        assert name in message
    assert message.endswith("name it with --format")
    assert "\n" not in message and len(message) < len(str(path)) + 300


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty (expected a trace file)"),
        ("\n  \n", "is empty (expected a trace file)"),
        ("job_id,submission_time,duration,num_gpu\n", "no job rows (a header at most)"),
    ],
    ids=["empty", "blank", "header only"],
)
def test_a_trace_without_rows_is_an_error(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "cluster01.csv", text)
    with pytest.raises(TraceError) as caught:
        list(iter_jobs(path, "itp"))
    assert str(caught.value) == f"{path}: {message}"


def test_wrong_kind_of_table(itp: Path) -> None:
    with pytest.raises(TraceError, match="holds jobs, not nodes"):
        load_nodes(itp)


def test_named_format_that_does_not_fit(itp: Path) -> None:
    with pytest.raises(TraceError, match=r"not a pai file \(expected pai_task_table \("):
        find_table(itp, "pai")
    with pytest.raises(TraceError, match=r"unknown format 'nope' \(expected one of itp,"):
        find_table(itp, "nope")


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nothing.csv: file not found"):
        detect_format(tmp_path / "nothing.csv")
    binary = tmp_path / "cluster01.csv"
    binary.write_bytes(b"job_id,submission_time,duration,num_gpu\n\xff\xfe\x00\n")
    with pytest.raises(TraceError, match=r"cluster01.csv: is not a UTF-8 text file"):
        list(iter_jobs(binary, fmt="itp"))


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="on_bad_row must be one of fail, skip"):
        TraceOptions(on_bad_row="ignore")
    with pytest.raises(ValueError, match="gpus_per_node must be >= 1"):
        TraceOptions(gpus_per_node=0)


def test_a_truncated_json_log_says_so(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cluster_job_log",
        '[{"jobid": "a", "submitted_time": "2017-10-03 02:25:44", "attempts": []},\n'
        ' {"jobid": "b", "submitt',
    )
    with pytest.raises(TraceError, match=r"cluster_job_log:2: the file ends inside this object"):
        list(iter_jobs(path, "philly", TraceOptions(on_bad_row="skip")))
