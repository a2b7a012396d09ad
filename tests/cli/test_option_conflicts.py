"""Options that contradict each other, or that the input given leaves without effect: each is
refused in one line (exit 1, nothing written) or run with a warning naming what was ignored;
and an end (``--until``) past everything the run holds says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = EXAMPLES / "cluster.yaml"
WORKLOAD = EXAMPLES / "workload.yaml"
TRACE = "job_id,submission_time,duration,num_gpu\nj1,0,3600,1\nj2,600,600,2\n"
MACHINES = "m_1,0,1,2,96,100,USING\nm_2,0,1,2,96,100,USING\n"  # Alibaba 2018 machine_meta
LOAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0000000,100,20\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = main([str(word) for word in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "cluster99.csv"
    path.write_text(TRACE)
    return path


@pytest.mark.parametrize(
    ("until", "warned"),
    [
        ("30m", None),  # cuts the first job short
        ("3601", None),  # the run's own end (a session after j1 ends): nothing to say
        ("2d", "--until 2d cuts nothing: the run's last event was at 1h,"),
        ("3602", "--until 3,602s cuts nothing: the run's last event was at 3,601s,"),
    ],
)
def test_an_until_past_the_end_of_the_run_says_so(capsys, tmp_path, trace, until, warned):
    rc, _, err = run(
        capsys, "simulate", "--trace", trace, "--cluster-from-trace", "--until", until,
        "--quiet", "--out", tmp_path / "out",
    )  # fmt: skip
    assert rc == 0
    lines = [line for line in err.splitlines() if "cuts nothing" in line]
    if warned is None:
        assert not lines, err
    else:
        assert len(lines) == 1 and lines[0].startswith(f"warning: {warned}"), err


def test_an_until_over_services_that_still_run_cuts_them(capsys, tmp_path):
    """Pods running at the end are what --until stops: no warning, however far it is."""
    rc, _, err = run(
        capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--workload",
        EXAMPLES / "rollout" / "deployment.yaml", "--until", "30d", "--quiet",
        "--out", tmp_path / "out",
    )  # fmt: skip
    assert rc == 0 and "cuts nothing" not in err, err


def test_compare_says_an_until_cuts_nothing_once(capsys, tmp_path, trace):
    rc, out, err = run(
        capsys, "compare", "--trace", trace, "--cluster-from-trace", "--config", "default",
        "--config", EXAMPLES / "binpack.yaml", "--jobs", "1", "--until", "2d",
        "--out", tmp_path / "out",
    )  # fmt: skip
    assert rc == 0
    assert (out + err).count("--until 2d cuts nothing") == 1, out + err


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "---\n", "{}\n"])
def test_an_empty_configuration_is_refused_by_validate_and_simulate_alike(capsys, tmp_path, text):
    config = tmp_path / "scheduler.yaml"
    config.write_text(text)
    rc, out, err = run(capsys, "validate", config)
    assert rc == 1 and f"{config}: empty: no manifests or scheduler configuration" in out + err
    rc, out, err = run(
        capsys, "simulate", "--cluster", EXAMPLES / "cluster.yaml", "--workload",
        EXAMPLES / "workload.yaml", "--config", config, "--quiet", "--out", tmp_path / "out",
    )  # fmt: skip
    assert rc == 1 and err.strip() == (
        f"error: {config}: empty: no scheduler configuration in it (for the built-in one, give "
        "--config default or leave --config out)"
    )
    assert not (tmp_path / "out").exists()


#: ``{trace}``, ``{machines}``, ``{load}`` and ``{out}`` stand for files the test writes.
INPUTS = ["--cluster", str(CLUSTER), "--workload", str(WORKLOAD)]
TRACE_RUN = ["--trace", "{trace}", "--cluster-from-trace"]
REFUSED = [
    # simulate and compare read their inputs alike
    (["simulate", *INPUTS, "--cluster-from-trace"], "--cluster and --cluster-from-trace: give one"),
    (["compare", "--config", "default", "--config", "default", *INPUTS, "--cluster-from-trace"],
     "--cluster and --cluster-from-trace: give one"),
    (["simulate", "--cluster-from-trace"], "--cluster-from-trace: sizes a cluster for --trace or"),
    (["simulate", "--gpus-per-node", "4"], "--gpus-per-node: a trace reading option, only with"),
    (["simulate", *INPUTS, "--format", "itp"], "--format: a trace reading option, only with"),
    (["simulate", *INPUTS, "--max-instances", "2", "--network-topology", "hard"],
     "--max-instances, --network-topology: trace reading options, only with --trace"),
    (["simulate", *INPUTS, "--machine-memory", "1000"], "--machine-memory: a trace reading"),
    (["simulate", *INPUTS, "--on-bad-row", "skip"], "--on-bad-row: a trace reading option"),
    (["simulate", "--cluster", "{machines}", "--workload", str(WORKLOAD), "--max-instances", "2"],
     "--max-instances: a trace reading option, only with --trace"),
    (["simulate", *INPUTS, "--sample", "3"], "--sample: only with --trace"),
    (["simulate", *INPUTS, "--elastic-fraction", "0.5"], "--elastic-fraction: only with --trace"),
    # bench: the synthetic benchmark and --sim take different options
    (["bench", "--sim", "--nodes", "10"], "--nodes: only without --sim"),
    (["bench", "--sim", "--scenario", "gang", "--search", "sampled"],
     "--scenario, --search: only without --sim"),
    (["bench", "--trace", "{trace}"], "--trace: only with --sim"),
    (["bench", "--format", "itp", "--cluster", str(CLUSTER)], "--format, --cluster: only with"),
    (["bench", "--sim", "--cluster", str(CLUSTER)], "--cluster: with --sim, only beside --trace"),
    # fill: a target that would never end
    (["fill", "--cluster", "{machines}", "--workload", str(WORKLOAD), "--target", "inf"],
     "--target inf: at most 10"),
    (["fill", "--cluster", "{machines}", "--workload", str(WORKLOAD), "--target", "1e9"],
     "--target 1e+09: at most 10"),
]  # fmt: skip
WARNED = [
    (["simulate", *TRACE_RUN, "--machine-memory", "1000"],
     "warning: --machine-memory: ignored (no effect on itp jobs)"),
    (["simulate", *TRACE_RUN, "--unknown-fields", "warn"],
     "warning: --unknown-fields: ignored (no manifest file is read)"),
    (["trace", "convert", "{trace}", "--out", "{out}.yaml", "--bin", "30", "--seed", "3"],
     "warning: --bin, --seed: ignored (no effect on itp jobs)"),
    (["trace", "convert", "{machines}", "--out", "{out}.yaml", "--sample", "1", "--queues", "a:1"],
     "warning: --sample, --queues: ignored (no effect on alibaba2018 nodes)"),
    (["trace", "convert", "{load}", "--out", "{out}.csv", "--from", "1h", "--gpus-per-node", "4"],
     "warning: --gpus-per-node, --from: ignored (no effect on azure-llm load)"),
    (["trace", "info", "{trace}", "--bin", "30", "--machine-memory", "1000"],
     "warning: --machine-memory, --bin: ignored (no effect on itp jobs)"),
    (["trace", "info", "{machines}", "--max-instances", "3"],
     "warning: --max-instances: ignored (no effect on alibaba2018 nodes)"),
]  # fmt: skip
USED = [
    # what the input given reads: no error, no warning
    ["simulate", "--cluster", "{machines}", "--workload", str(WORKLOAD), "--machine-memory",
     "1000", "--on-bad-row", "skip", "--until", "1m"],
    ["simulate", "--workload", str(WORKLOAD), "--cluster-from-trace", "--gpus-per-node", "4",
     "--until", "1m"],
    ["simulate", *TRACE_RUN, "--gpus-per-node", "4", "--max-instances", "1"],
    ["trace", "convert", "{trace}", "--out", "{out}.yaml", "--sample", "1", "--seed", "3"],
    ["trace", "convert", "{machines}", "--out", "{out}.yaml", "--machine-memory", "1000"],
    ["trace", "info", "{load}", "--bin", "30"],
]  # fmt: skip


def _words(tmp_path: Path, argv: list[str]) -> list[str]:
    files = {
        "trace": ("cluster99.csv", TRACE),
        "machines": ("machine_meta.csv", MACHINES),
        "load": ("AzureLLMInferenceTrace_code.csv", LOAD),
    }
    names = {"out": str(tmp_path / "converted")}
    for key, (name, text) in files.items():
        (tmp_path / name).write_text(text)
        names[key] = str(tmp_path / name)
    words = [word.format(**names) for word in argv]
    if words[0] in ("simulate", "compare", "fill"):
        words += ["--out", str(tmp_path / "out")]
    if words[0] == "simulate":
        words.append("--quiet")
    return words


@pytest.mark.parametrize(("argv", "expected"), REFUSED, ids=lambda v: " ".join(v)[:60])
def test_contradicting_or_unused_options_are_refused(capsys, tmp_path, argv, expected):
    rc, out, err = run(capsys, *_words(tmp_path, argv))
    assert rc == 1, out + err
    assert expected in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("argv", "expected"), WARNED, ids=lambda v: " ".join(v)[:60])
def test_options_without_effect_are_named_in_a_warning(capsys, tmp_path, argv, expected):
    rc, out, err = run(capsys, *_words(tmp_path, argv))
    assert rc == 0, out + err
    assert [line for line in err.splitlines() if line.startswith("warning: ")] == [expected]


@pytest.mark.parametrize("argv", USED, ids=lambda v: " ".join(v)[:60])
def test_options_the_input_reads_are_taken_quietly(capsys, tmp_path, argv):
    rc, out, err = run(capsys, *_words(tmp_path, argv))
    assert rc == 0, out + err
    assert "warning: " not in err and "error" not in err, err
