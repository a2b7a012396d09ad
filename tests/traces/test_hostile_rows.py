"""Trace rows that are valid but collide once made object names, and rows that are not valid
but used to pass or to be quoted whole: found by ``tests/hostile``."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.api.problems import MESSAGE_CHARACTERS
from berth.traces import TraceError, load_nodes
from berth.traces.loader import RENAMED_NODES, iter_jobs
from berth.traces.model import TRACE_ID_ANNOTATION


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "openb_node_list.csv",
            "sn,cpu_milli,memory_mib,gpu,model\nn_1,1000,1024,0,\nn-1,2000,1024,0,\n",
        ),
        ("pai_machine_spec.csv", "m_1,CPU,8,16,0\nm-1,CPU,16,16,0\n"),
        ("machine_meta.csv", "m_1,0,1,2,96,100,USING\nm-1,0,1,2,64,100,USING\n"),
    ],
)
def test_machines_whose_names_collide_are_both_kept(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    nodes = load_nodes(path)
    first, second = nodes
    assert (first.name, second.name) == ("n-1" if "openb" in name else "m-1", f"{first.name}-2")
    assert second.labels["kubernetes.io/hostname"] == second.name
    assert second.annotations[TRACE_ID_ANNOTATION] == f"{first.name[0]}-1"
    assert second.allocatable != first.allocatable  # the second machine, not the first again
    assert nodes.log.lines() == [f"changed 1 {RENAMED_NODES}"]


def test_a_machine_listed_twice_is_still_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "pai_machine_spec.csv"
    path.write_text("m_1,CPU,8,16,0\nm_1,CPU,16,16,0\n")
    with pytest.raises(TraceError, match="node m_1 is listed more than once"):
        list(load_nodes(path))


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "pai_machine_spec.csv",
            "m_1,V100,96,512,99999999999999999999999999\n",
            r":1: nvidia.com/gpu 99,999,999,999,999,999,999,999,999,000 is too large",
        ),
        (
            "itp.csv",
            "job_id,submission_time,duration,num_gpu\nj,1_000,60,1\n",
            r':2: submission_time "1_000" is not a number',
        ),
        (
            "itp.csv",
            "job_id,submission_time,duration,num_gpu\nj," + "9" * 100_000 + ",60,1\n",
            r':2: submission_time "9{60}\.\.\." is not finite',
        ),
        (
            "itp.csv",
            "job_id,submission_time,duration,num_gpu," + "x" * 100_000 + "\nj,0,60,1\n",
            r":2: has 4 fields \(expected 5: job_id,submission_time,duration,num_gpu,x+\.\.\.x+\)",
        ),
    ],
)
def test_bad_cells_are_one_short_line(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TraceError, match=expected) as caught:
        list(load_nodes(path) if "machine" in name else iter_jobs(path))
    # The file and line, then the message clipped to its limit.
    assert len(str(caught.value)) < len(str(path)) + 20 + MESSAGE_CHARACTERS
