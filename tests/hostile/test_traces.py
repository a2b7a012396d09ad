"""The first rows of every trace format berth reads, mutated cell by cell, through ``berth
trace info``, ``berth trace convert`` and ``berth validate`` of what convert wrote: a trace is
refused in one line, or every job and node it converts to is a valid object of its own."""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.hostile.harness import ROOT, berth, hostile, refused
from tests.hostile.mutations import HOSTILE_SCALARS, mutated

PHILLY = ROOT / "tests" / "traces" / "data" / "philly" / "cluster_job_log"

#: A few first rows of each table, as published (file name, then the rows; a header row where
#: the published file has one).
SAMPLES: dict[str, list[list[str]]] = {
    "itp.csv": [
        ["job_id", "submission_time", "duration", "num_gpu"],
        ["job_A", "0", "3600", "1"],
        ["job_a", "60", "120", "16"],
        ["job-a", "60", "0", "8"],
    ],
    "philly_jobs.csv": [
        ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"],
        ["2017-10-09 07:01:55", "3600", "1", "3600", "vc1"],
        ["2017-10-09 07:00:00", "60", "12", "480", "vc_2"],
    ],
    "cluster_log.csv": [
        [
            "job_id",
            "user",
            "vc",
            "gpu_num",
            "cpu_num",
            "node_num",
            "state",
            "submit_time",
            "start_time",
            "end_time",
            "duration",
            "queue",
        ],
        [
            "1",
            "u1",
            "vcJkd",
            "8",
            "8",
            "1",
            "COMPLETED",
            "2020-06-09 18:41:01",
            "2020-06-09 18:41:01",
            "2020-06-10 04:55:09",
            "36848",
            "0",
        ],
        [
            "2",
            "u2",
            "vcjkd",
            "16",
            "64",
            "2",
            "FAILED",
            "2020-06-09 18:50:00",
            "2020-06-09 19:00:00",
            "2020-06-09 21:00:00",
            "",
            "0",
        ],
    ],
    "openb_pod_list.csv": [
        [
            "name",
            "cpu_milli",
            "memory_mib",
            "num_gpu",
            "gpu_milli",
            "gpu_spec",
            "qos",
            "pod_phase",
            "creation_time",
            "deletion_time",
            "scheduled_time",
        ],
        [
            "openb-pod-0001",
            "12000",
            "16384",
            "1",
            "1000",
            "V100M16|V100M32",
            "LS",
            "Running",
            "0",
            "3600",
            "1",
        ],
        ["openb_pod_0001", "6000", "8192", "1", "500", "", "BE", "Succeeded", "10", "", "11"],
        ["OpenB-Pod-0001", "1000", "1024", "0", "0", "", "Burstable", "Failed", "20", "50", ""],
    ],
    "openb_node_list.csv": [
        ["sn", "cpu_milli", "memory_mib", "gpu", "model"],
        ["node_1", "96000", "786432", "8", "V100M32"],
        ["node-1", "64000", "262144", "2", "T4"],
        ["Node_2", "32000", "131072", "0", ""],
    ],
    "pai_task_table.csv": [
        ["4b3f_04", "ps", "1.0", "Terminated", "4550885.0", "4551410.0", "600.0", "10.0", "", ""],
        [
            "4b3f_04",
            "worker",
            "2.0",
            "Terminated",
            "4550890.0",
            "4551400.0",
            "400.0",
            "29.296875",
            "50.0",
            "MISC",
        ],
        ["4b3f-04", "worker", "4.0", "Running", "2081336.0", "", "800.0", "32.0", "100.0", "V100"],
    ],
    "pai_machine_spec.csv": [
        ["m_1", "V100", "96", "512", "8"],
        ["M_1", "CPU", "64", "256", "0"],
        ["m-2", "T4", "64", "256", "2"],
    ],
    "batch_task.csv": [
        ["0", "100", "j_1", "t_1", "3", "Terminated", "50", "0.01"],
        ["10", "0", "j_1", "t-1", "2", "Running", "100", "0.02"],
        ["-5", "60", "J_1", "t_1", "1", "Terminated", "200", "0.5"],
    ],
    "machine_meta.csv": [
        ["m_7", "900", "3", "4", "64", "50", "USING"],
        ["m_7", "100", "1", "2", "96", "100", "IMPORT_INSTALLING"],
        ["m-7", "0", "1", "2", "96", "100", "USING"],
    ],
    "disaggregated_DLRM_trace.csv": [
        [
            "instance_sn",
            "role",
            "app_name",
            "cpu_request",
            "cpu_limit",
            "gpu_request",
            "gpu_limit",
            "rdma_request",
            "rdma_limit",
            "memory_request",
            "memory_limit",
            "disk_request",
            "disk_limit",
            "max_instance_per_node",
            "creation_time",
            "scheduled_time",
            "deletion_time",
        ],
        [
            "i_a",
            "CN",
            "app_1",
            "8",
            "8",
            "0",
            "0",
            "1",
            "1",
            "40.0",
            "40.0",
            "85.0",
            "100.0",
            "-1",
            "",
            "",
            "",
        ],
        [
            "i-a",
            "HN",
            "app_2",
            "12",
            "12",
            "1",
            "1",
            "25",
            "25",
            "120.0",
            "120.0",
            "680.0",
            "800.0",
            "2",
            "100.0",
            "120.0",
            "NaN",
        ],
    ],
    "AzureLLMInferenceTrace_code.csv": [
        ["TIMESTAMP", "ContextTokens", "GeneratedTokens"],
        ["2023-11-16 18:00:00.5000000", "100", "10"],
        ["2023-11-16 18:00:59.0000000", "200", "20"],
    ],
}
#: Tables whose converted output is a load curve, not manifests.
CURVES = {"AzureLLMInferenceTrace_code.csv"}

cells = st.one_of(
    st.sampled_from([str(v) for v in HOSTILE_SCALARS if v is not None]),
    st.sampled_from(['"', ",", "a,b", "\x00", "\r", "-0", "00", "1.0e2", "2017-13-45 99:99:99"]),
    st.text(max_size=20),
)


@st.composite
def mutated_table(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    """A sample table with one to three cells, rows or columns changed, as CSV text."""
    name = draw(st.sampled_from(sorted(SAMPLES)))
    rows = [list(row) for row in SAMPLES[name]]
    done = []
    for _ in range(draw(st.integers(1, 3))):
        row = draw(st.integers(0, len(rows) - 1))
        how = draw(st.sampled_from(["cell", "cell", "cell", "drop cell", "add cell", "repeat"]))
        if how == "repeat":
            rows.insert(row, list(rows[row]))
        elif how == "add cell":
            rows[row].append(draw(cells))
        elif rows[row]:
            column = draw(st.integers(0, len(rows[row]) - 1))
            if how == "drop cell":
                del rows[row][column]
            else:
                rows[row][column] = draw(cells)
        done.append(f"{how} in row {row}")
    text = io.StringIO()
    csv.writer(text, lineterminator=draw(st.sampled_from(["\n", "\r\n"]))).writerows(rows)
    return name, text.getvalue(), done


def converted(tmp_path: Path, name: str, text: str, done: list[str]) -> None:
    """``trace info`` and ``trace convert`` of the trace ``text`` refuse it or succeed, and what
    convert wrote validates with as many pods as it says it wrote."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    trace = folder / name
    trace.write_text(text)
    berth("trace", "info", trace)
    out = folder / ("curve.csv" if name in CURVES else "out.yaml")
    made = berth("trace", "convert", trace, "--out", out)
    if refused(made) or name in CURVES:
        return
    checked = berth("validate", out)
    assert checked.rc == 0, f"{name}: {done}\n{text[:2000]}\n{made}\n{checked}"
    wrote = re.search(r"wrote ([\d,]+) jobs \(([\d,]+) pods\)", made.text)
    if wrote:
        pods = int(wrote.group(2).replace(",", ""))
        assert f" {pods} pods" in checked.out, f"{name}: {done}\n{made}\n{checked}"


def test_every_sample_converts_as_it_is(tmp_path):
    """The samples are valid input: each is read whole, none refused."""
    for name, rows in SAMPLES.items():
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        trace = tmp_path / name
        trace.write_text(text.getvalue())
        assert berth("trace", "info", trace).rc == 0, name


@hostile(300)
@given(case=mutated_table())
def test_mutated_trace_rows(tmp_path, case):
    converted(tmp_path, *case)


PHILLY_JOBS = json.loads(PHILLY.read_text())


@hostile(150)
@given(case=mutated([PHILLY_JOBS]), cut=st.none() | st.integers(1, 2000))
def test_mutated_philly_job_logs(tmp_path, case, cut):
    """The JSON tree mutated like a manifest's, and sometimes cut short (not JSON at all)."""
    documents, done = case
    text = json.dumps(documents[0] if len(documents) == 1 else documents, indent=1)
    if cut is not None:
        text = text[:cut]
        done.append(f"cut at {cut}")
    converted(tmp_path, "cluster_job_log", text, done)
