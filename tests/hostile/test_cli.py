"""Command lines: every reading, selection and run option of ``berth simulate`` given hostile
values and combinations, on a small trace or the shipped examples. Each run ends within the
deadline, refused in one line or with its outputs written."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.hostile.harness import EXAMPLES, berth, hostile

TRACE = "job_id,submission_time,duration,num_gpu\nj_1,0,3600,1\nj_2,60,600,16\nj_3,120,0,8\n"

NUMBERS = ["0", "-1", "1", "0.5", "3", "1e9", "1e308", "1e400", "nan", "inf", "-inf", "", "x"]
TIMES = [*NUMBERS, "90m", "1d", "99999d", "1e15", "-20m", "2h30", "1h1h"]

OPTIONS: dict[str, list[str]] = {
    "--until": TIMES,
    "--seed": [*NUMBERS, str(2**64)],
    "--from": TIMES,
    "--to": TIMES,
    "--sample": NUMBERS,
    "--speedup": [*NUMBERS, "1e-300"],
    "--max-pods": NUMBERS,
    "--queues": ["a:1,b:2", "a:0", "a:-1", "a:nan", "by-size", "trace", ":", "a:1,a:2", ""],
    "--gpus-per-node": NUMBERS,
    "--machine-memory": NUMBERS,
    "--max-instances": NUMBERS,
    "--elastic-fraction": NUMBERS,
    "--elastic-range": ["0.5:1", "1:0.5", "0:1", "nan:1", "1", "a:b", "0.5:1e9"],
    "--network-topology": ["hard", "soft:2", "hard:0", "soft:-1", "firm", "hard:x"],
    "--on-bad-row": ["fail", "skip", "ignore"],
    "--format": ["itp", "philly", "openb", "pai", "helios"],
    "--explain": ["*", "j-1*", "[", ""],
}
FLAGS = ["--cluster-from-trace", "--force", "--unknown-fields=warn"]

arguments = st.lists(
    st.sampled_from(sorted(OPTIONS)).flatmap(
        lambda option: st.sampled_from(OPTIONS[option]).map(lambda value: [option, value])
    )
    | st.sampled_from(FLAGS).map(lambda flag: [flag]),
    max_size=4,
)


@hostile(30)
@given(source=st.sampled_from(["trace", "manifests"]), extra=arguments)
def test_simulate_options(tmp_path, source, extra):
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    if source == "trace":
        trace = folder / "itp.csv"
        trace.write_text(TRACE)
        inputs = ["--trace", str(trace), "--cluster-from-trace"]
    else:
        inputs = ["--cluster", str(EXAMPLES / "cluster.yaml")]
        inputs += ["--workload", str(EXAMPLES / "workload.yaml")]
    words = [word for pair in extra for word in pair]
    if "--until" not in words:
        words += ["--until", "2h"]
    out = folder / "out"
    outcome = berth("simulate", *inputs, *words, "--quiet", "--out", out)
    if outcome.rc == 0:
        assert (out / "summary.json").is_file(), outcome
