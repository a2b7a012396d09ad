"""Options that contradict each other, or that the input given leaves without effect: each is
refused in one line (exit 1, nothing written) or run with a warning naming what was ignored;
and an end (``--until``) past everything the run holds says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRACE = "job_id,submission_time,duration,num_gpu\nj1,0,3600,1\nj2,600,600,2\n"


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
