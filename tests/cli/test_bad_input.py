"""The CLI on bad input: one precise line per problem, exit status 1, no traceback, no output."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.cli import main

DATA = Path(__file__).resolve().parents[1] / "scenarios" / "data"
CLUSTER = DATA / "cluster.yaml"
WORKLOAD = DATA / "workload.yaml"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: FILE: Kind/name: field.path: message
PROBLEM_LINE = re.compile(
    r"^(?P<file>[^:]+): (?P<kind>[A-Za-z]+)/(?P<name>[^:]+): "
    r"(?P<path>[^ :]+): (?P<message>.+)$"
)

BAD = """\
apiVersion: v1
kind: Pod
metadata:
  name: bad-cpu
spec:
  containers:
    - name: main
      resources:
        requests:
          cpu: lots
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: web
---
apiVersion: v1
kind: Pod
metadata:
  labels:
    app: nameless
spec:
  containers:
    - name: main
---
apiVersion: v1
kind: Pod
metadata:
  name: bad-duration
  annotations:
    berth.io/duration: "-5"
spec:
  containers:
    - name: main
"""

WARN_ONLY = """\
apiVersion: v1
kind: Pod
metadata:
  name: typo
spec:
  containers:
    - name: main
      resources:
        requests:
          cpu: 500m
  nodeSelektor:
    disk: ssd
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


# -- validate -------------------------------------------------------------------------------------


def test_validate_good_files(capsys):
    rc, out, err = run(capsys, "validate", str(CLUSTER), str(WORKLOAD))
    assert rc == 0
    assert out.strip() == "valid: 6 nodes, 13 pods, 1 podgroups, 3 queues"
    assert err == ""


@pytest.mark.parametrize(
    "config",
    ["loaning/scheduler.yaml", "rollout/scheduler.conf", "volcano-scheduler.conf", "binpack.yaml"],
)
def test_validate_takes_every_shipped_configuration(capsys, config):
    rc, out, err = run(capsys, "validate", str(EXAMPLES / config))
    assert rc == 0, out + err
    assert out.startswith(f"valid: {EXAMPLES / config}: scheduler configuration")


def test_validate_takes_a_configuration_of_simulation_settings_only(tmp_path, capsys):
    path = tmp_path / "latency.yaml"
    path.write_text("simulation:\n  startLatency: 5\n")
    rc, out, _ = run(capsys, "validate", str(path))
    assert rc == 0 and "scheduler configuration" in out


def test_validate_tells_configurations_and_manifests_apart_in_a_folder(tmp_path, capsys):
    (tmp_path / "scheduler.conf").write_text("actions: enqueue, allocate\n")
    (tmp_path / "cluster.yaml").write_text(CLUSTER.read_text())
    rc, out, err = run(capsys, "validate", str(tmp_path))
    assert rc == 0, out + err
    assert "scheduler.conf: scheduler configuration" in out
    assert out.strip().endswith("valid: 6 nodes, 0 pods, 0 podgroups, 0 queues")


def test_a_configuration_given_as_a_workload_is_named_as_one(tmp_path, capsys):
    config = tmp_path / "scheduler.yaml"
    config.write_text("actions: enqueue, allocate\ntiers: []\n")
    rc, out, err = run(
        capsys, "simulate", "--cluster", str(CLUSTER), "--workload", str(config),
        "--out", str(tmp_path / "out"), "--quiet",
    )  # fmt: skip
    assert rc != 0
    assert "a scheduler configuration, not a manifest (give it with --config)" in out + err


def test_validate_reports_each_problem_on_one_line(tmp_path, capsys):
    path = write(tmp_path, "bad.yaml", BAD)
    rc, out, err = run(capsys, "validate", str(path))
    assert rc == 1
    lines = [line for line in (out + err).splitlines() if line.strip()]
    expected = [
        f'{path}: Pod/bad-cpu: spec.containers[0].resources.requests.cpu: "lots" is not a '
        "quantity (expected e.g. 500m, 2, 4Gi)",
        f'{path}: Widget/web: kind: unknown kind "Widget" (expected one of Node, '
        "NodePool, HyperNode, Pod, PodGroup, Queue, PriorityClass, Job, Command, PyTorchJob, "
        "TrainingJob, Namespace, "
        "Deployment, ReplicaSet, StatefulSet, CloneSet, SidecarSet, BroadcastJob, "
        "LeaderWorkerSet, JobSet, "
        "ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate, Workload, List)",
        f"{path}: Pod/-: metadata.name: field required",
        f"{path}: Pod/bad-duration: metadata.annotations.berth.io/duration: must be > 0 (got -5)",
    ]
    assert sorted(lines) == sorted(expected)
    for line in lines:
        assert PROBLEM_LINE.match(line), line
    assert "valid:" not in out


def test_validate_counts_problems_across_files(tmp_path, capsys):
    bad = write(tmp_path, "bad.yaml", BAD)
    also = write(tmp_path, "also.yaml", BAD.replace("bad-cpu", "other-cpu"))
    rc, out, err = run(capsys, "validate", str(bad), str(also), str(CLUSTER))
    assert rc == 1
    lines = [line for line in (out + err).splitlines() if line.strip()]
    # Four problems in each file, plus bad-duration defined in both.
    assert len(lines) == 9
    assert sum(1 for line in lines if line.startswith(f"{also}: ")) == 5
    assert any(line.startswith(f"{also}: Pod/other-cpu: ") for line in lines)
    assert (
        f'{also}: Pod/bad-duration: metadata.name: duplicate Pod "default/bad-duration" '
        f"(also defined in {bad})"
    ) in lines


def test_validate_unknown_field_is_an_error_or_asked_for_a_warning(tmp_path, capsys):
    path = write(tmp_path, "warn.yaml", WARN_ONLY)
    rc, out, err = run(capsys, "validate", str(path))
    assert rc == 1
    assert (
        out == f"{path}: Pod/typo: spec.nodeSelektor: unknown field (did you mean nodeSelector?)\n"
    )
    rc, out, err = run(capsys, "validate", "--unknown-fields", "warn", str(path))
    assert rc == 0
    assert (
        f"{path}: Pod/typo: spec.nodeSelektor: unknown field (did you mean nodeSelector?), ignored"
        in err
    )
    assert err.count("\n") == 1
    assert "valid: 0 nodes, 1 pods" in out


def test_validate_duplicate_across_files(tmp_path, capsys):
    one = write(tmp_path, "one.yaml", WARN_ONLY.replace("nodeSelektor", "nodeSelector"))
    two = write(tmp_path, "two.yaml", WARN_ONLY.replace("nodeSelektor", "nodeSelector"))
    rc, out, _ = run(capsys, "validate", str(one), str(two))
    assert rc == 1
    assert out.strip() == (
        f'{two}: Pod/typo: metadata.name: duplicate Pod "default/typo" (also defined in {one})'
    )


def test_validate_missing_file(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    rc, out, err = run(capsys, "validate", str(missing))
    assert rc == 1
    assert (out + err).strip() == f"{missing}: file not found"


def test_validate_malformed_yaml_names_the_line(tmp_path, capsys):
    path = write(
        tmp_path, "broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: [a\n"
    )
    rc, out, err = run(capsys, "validate", str(path))
    assert rc == 1
    (line,) = (out + err).strip().splitlines()
    assert line.startswith(f"{path}: invalid YAML at line ")
    assert re.search(r"line [56], column \d+", line), line


#: Characters YAML accepts in a stream (control characters are covered separately below).
YAML_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Cn")) | st.sampled_from("\t\n"),
    max_size=120,
)


@given(junk=YAML_TEXT | st.sampled_from([":", "- - -", "{", "[a, b", "a: b: c", "---\n- 1\n"]))
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_validate_never_crashes_on_junk(tmp_path, capsys, junk):
    path = tmp_path / "junk.yaml"
    path.write_text(junk, encoding="utf-8")
    rc, out, err = run(capsys, "validate", str(path))
    assert rc in (0, 1)
    for line in (out + err).splitlines():
        if rc == 1 and not line.startswith("warning: "):
            assert line.startswith(f"{path}: ")


def test_validate_control_character_is_one_line(tmp_path, capsys):
    path = tmp_path / "ctrl.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\x08b\n")
    rc, out, err = run(capsys, "validate", str(path))
    assert rc == 1
    lines = (out + err).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{path}: invalid YAML at line 4"), lines[0]


def test_a_whole_csv_given_as_manifests_is_quoted_by_its_start_only(tmp_path, capsys):
    """YAML reads a CSV as one long string; the message quotes a line's start, not the file."""
    path = tmp_path / "tasks.csv"
    rows = "".join(f"{i},{i + 60},{i},{i},1,Terminated,50,0.01\n" for i in range(5000))
    path.write_text("task_create_time,task_end_time,job_id,task_id,instances,status\n" + rows)
    rc, out, err = run(capsys, "validate", str(path))
    assert rc == 1
    lines = (out + err).strip().splitlines()
    assert lines == [
        f"{path}: -/-: expected an object with apiVersion and kind "
        '(got "task_create_time,task_end_time,job_id,task_id,instances,stat...")'
    ]


# -- simulate -------------------------------------------------------------------------------------


def test_simulate_bad_workload_writes_nothing(tmp_path, capsys):
    bad = write(tmp_path, "bad.yaml", BAD)
    out_dir = tmp_path / "out"
    rc, out, err = run(
        capsys,
        "simulate",
        "--cluster",
        str(CLUSTER),
        "--workload",
        str(bad),
        "--out",
        str(out_dir),
        "--quiet",
    )
    assert rc == 1
    assert not out_dir.exists()
    _, validate_out, validate_err = run(capsys, "validate", str(CLUSTER), str(bad))
    problems = sorted(line for line in (out + err).splitlines() if line.strip())
    assert problems == sorted(
        line for line in (validate_out + validate_err).splitlines() if line.strip()
    )
    assert len(problems) == 4


@pytest.mark.parametrize(
    "case",
    [
        "missing-cluster",
        "missing-workload",
        "malformed-cluster",
        "workload-without-cluster",
        "cluster-without-nodes",
    ],
)
def test_simulate_bad_inputs(tmp_path, capsys, case):
    out_dir = tmp_path / "out"
    broken = write(tmp_path, "broken.yaml", "kind: NodePool\nspec:\n  count: [1\n")
    missing = tmp_path / "missing.yaml"
    argv, expected = {
        "missing-cluster": (["--cluster", str(missing)], f"{missing}: file not found"),
        "missing-workload": (
            ["--cluster", str(CLUSTER), "--workload", str(missing)],
            f"{missing}: file not found",
        ),
        "malformed-cluster": (["--cluster", str(broken)], f"{broken}: invalid YAML at line "),
        "workload-without-cluster": (
            ["--workload", str(WORKLOAD)],
            "--workload needs nodes: give --cluster FILE, or --cluster-from-trace",
        ),
        "cluster-without-nodes": (["--cluster", str(WORKLOAD)], "no Node or NodePool objects"),
    }[case]
    rc, out, err = run(capsys, "simulate", *argv, "--out", str(out_dir), "--quiet")
    assert rc == 1
    assert expected in err
    assert len(err.strip().splitlines()) == 1
    assert not out_dir.exists()


@pytest.mark.parametrize(
    "config, expected",
    [
        ('actions: "enqueue, allocate, preemptt"\n', "unknown action 'preemptt'"),
        ("actions: [allocate, 3]\n", "actions: expected a list"),
        ("period: -1\n", "period: expected seconds > 0 (got -1)"),
        ("period: fast\n", "period: expected seconds > 0 (got 'fast')"),
        ("period: true\n", "period: expected seconds > 0"),
        ("actions: [allocate\n", "line 2"),
        ("tiers: plugins\n", "tiers: expected a list"),
        ("search:\n  mode: exhaustive\n", "search.mode: expected full or sampled"),
        ("simulation:\n  startLatency: -2\n", "simulation.startLatency: expected seconds >= 0"),
        (
            "simulation:\n  scaling: {policy: fifo}\n",
            "simulation.scaling.policy: 'fifo' is not a scaling policy "
            "(expected edl or aryl or elasticflow)",
        ),
        (
            "simulation:\n  scaling: {policy: edl, maxLoadDesired: 1.5}\n",
            "simulation.scaling.maxLoadDesired: expected a share in (0, 1] (got 1.5)",
        ),
        (
            "simulation:\n  scaling: {policy: aryl, interval: 0}\n",
            "simulation.scaling.interval: expected seconds > 0 (got 0)",
        ),
        (
            "simulation:\n  scaling: {policy: aryl, every: 5}\n",
            "simulation.scaling.every: unknown field (expected policy, interval, "
            "maxLoadDesired, starvationWait)",
        ),
        (
            "tiers:\n  - plugins:\n      - name: binpack\n        arguments:\n"
            "          binpack.weight: heavy\n",
            "'heavy' is not a number",
        ),
    ],
)
def test_simulate_bad_scheduler_config(tmp_path, capsys, config, expected):
    path = write(tmp_path, "conf.yaml", config)
    out_dir = tmp_path / "out"
    rc, out, err = run(
        capsys,
        "simulate",
        "--cluster",
        str(CLUSTER),
        "--workload",
        str(WORKLOAD),
        "--config",
        str(path),
        "--out",
        str(out_dir),
        "--quiet",
    )
    assert rc == 1
    assert err.startswith("error: ")
    assert expected in err
    assert not out_dir.exists()


def test_simulate_missing_config_file(tmp_path, capsys):
    missing = tmp_path / "none.yaml"
    rc, _, err = run(
        capsys,
        "simulate",
        "--cluster",
        str(CLUSTER),
        "--config",
        str(missing),
        "--out",
        str(tmp_path / "out"),
        "--quiet",
    )
    assert rc == 1
    assert str(missing) in err and "cannot read" in err


def simulate_with_config(capsys, config: Path, out_dir: Path) -> tuple[int, str, str]:
    """``berth simulate`` on the test cluster and workload under ``config``."""
    return run(
        capsys,
        "simulate",
        "--cluster",
        str(CLUSTER),
        "--workload",
        str(WORKLOAD),
        "--config",
        str(config),
        "--out",
        str(out_dir),
        "--quiet",
    )


def test_simulate_config_warnings_do_not_stop_the_run(tmp_path, capsys):
    path = write(
        tmp_path, "conf.yaml", 'actions: "enqueue, allocate, shuffle, backfill"\ncolour: blue\n'
    )
    out_dir = tmp_path / "out"
    rc, _, err = simulate_with_config(capsys, path, out_dir)
    assert rc == 0
    assert f"warning: {path}: actions: shuffle is not available in berth yet; skipped" in err
    assert f"warning: {path}: colour: unknown field, ignored" in err
    assert (out_dir / "summary.json").is_file()


VOLCANO_AS_IS = """\
actions: [enqueue, allocate, preempt, reclaim, backfill]
configurations:
  - name: preempt
    arguments: {maxCandidateNodesAbsolute: 4, enableTopologyAwarePreemption: false}
tiers:
  - plugins:
      - name: priority
      - name: gang
        enableJobPipelined: true
        enableTargetJob: false
      - name: conformance
  - plugins:
      - name: overcommit
        arguments: {overcommit-factor: 0.8}
      - name: drf
      - name: predicates
      - name: proportion
      - name: nodeorder
"""


def test_a_volcano_configuration_runs_as_it_is(tmp_path, capsys):
    path = write(tmp_path, "volcano.conf", VOLCANO_AS_IS)
    out_dir = tmp_path / "out"
    rc, _, err = simulate_with_config(capsys, path, out_dir)
    assert rc == 0
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {path}: tiers[0].plugins[1].enableTargetJob: berth has no such extension "
        "point; ignored",
        f"warning: {path}: tiers[1].plugins[0].arguments.overcommit-factor: 0.8 is below 1; "
        "using Volcano's default 1.2",
    ]
    assert (out_dir / "summary.json").is_file()


@pytest.mark.parametrize(
    "text,expected",
    [
        ("tiers:\n- plugins:\n  - name: gang\n    enableJobReady: 'no'\n", "enableJobReady"),
        (
            "configurations: [{name: preempt, arguments: {maxCandidateNodesAbsolute: x}}]\n",
            "integer",
        ),
    ],
    ids=["switch not a boolean", "action argument of the wrong type"],
)
def test_simulate_bad_volcano_settings_are_one_line(tmp_path, capsys, text, expected):
    path = write(tmp_path, "volcano.conf", text)
    rc, _, err = simulate_with_config(capsys, path, tmp_path / "out")
    assert rc == 1
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {path}: ") and expected in line
    assert not (tmp_path / "out").exists()


def test_simulate_bad_arguments_exit_non_zero(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--seed", "abc", "--out", str(tmp_path / "out")])
    assert exc.value.code != 0
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--until", "soon", "--out", str(tmp_path / "out")])
    assert exc.value.code != 0
    assert not (tmp_path / "out").exists()


# -- bench ----------------------------------------------------------------------------------------

BENCH_KEYS = {
    "scenario",
    "nodes",
    "running",
    "pods",
    "scheduled",
    "unschedulable",
    "seconds",
    "pods_per_second",
}


@pytest.mark.parametrize("scenario", ["basic", "spread", "anti-affinity", "gang", "mixed"])
def test_bench_json(capsys, scenario):
    rc, out, _ = run(
        capsys,
        "bench",
        "--scenario",
        scenario,
        "--nodes",
        "50",
        "--running",
        "100",
        "--pods",
        "200",
        "--json",
    )
    assert rc == 0
    result = json.loads(out)
    assert isinstance(result, dict)
    assert BENCH_KEYS <= set(result)
    assert result["scenario"] == scenario
    assert (result["nodes"], result["running"], result["pods"]) == (50, 100, 200)
    assert result["scheduled"] + result["unschedulable"] == result["pods"]
    assert result["scheduled"] >= 0 and result["unschedulable"] >= 0
    assert result["seconds"] >= 0 and result["pods_per_second"] >= 0
    if scenario == "anti-affinity":
        # Required hostname anti-affinity among all of them: at most one per node.
        assert result["scheduled"] == 50
    if scenario in ("basic", "spread"):
        assert result["unschedulable"] == 0


def test_bench_sampled_search(capsys):
    rc, out, _ = run(
        capsys,
        "bench",
        "--scenario",
        "anti-affinity",
        "--nodes",
        "150",
        "--running",
        "0",
        "--pods",
        "200",
        "--search",
        "sampled",
        "--json",
    )
    assert rc == 0
    result = json.loads(out)
    assert result["search"] == "sampled"
    assert result["scheduled"] == 150 and result["unschedulable"] == 50


def test_bench_human_output(capsys):
    rc, out, _ = run(capsys, "bench", "--nodes", "10", "--running", "5", "--pods", "20")
    assert rc == 0
    assert "basic: 10 nodes, 5 running, 20 pods" in out and "pods/s" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--nodes", "0"],
        ["--pods", "0"],
        ["--pods", "-3"],
        ["--running", "-1"],
        ["--nodes", "1000000000000"],
        ["--pods", "99999999999999999999"],
        ["--seed", "-1"],
    ],
)
def test_bench_invalid_numbers(capsys, argv):
    rc, out, err = run(capsys, "bench", *argv, "--json")
    assert rc != 0
    assert out == ""
    assert err.startswith("error: ")


@pytest.mark.parametrize(
    "argv",
    [["--scenario", "nope"], ["--nodes", "many"], ["--search", "lucky"]],
)
def test_bench_invalid_arguments(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(["bench", *argv])
    assert exc.value.code != 0
    assert "Traceback" not in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) != 0
    assert "simulate" in capsys.readouterr().out


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_validate_refuses_deep_nesting_in_one_line(tmp_path, capsys, suffix):
    """Told apart from a configuration before it is read as a manifest: both reads refuse it."""
    path = tmp_path / f"deep{suffix}"
    path.write_text("[" * 50_000 + "]" * 50_000)
    rc, out, err = run(capsys, "validate", str(path))
    assert rc == 1
    assert out.strip() == f"{path}: nested 50000 levels deep (at most 200 are read)"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("simulation:\n  startLatency: .inf\n", "simulation.startLatency: expected seconds >= 0"),
        ("simulation:\n  restartLatency: .nan\n", "simulation.restartLatency: expected seconds"),
        (
            "simulation:\n  loaning:\n    idleBeforeLend: .nan\n",
            "simulation.loaning.idleBeforeLend: expected seconds >= 0",
        ),
        (
            "tiers:\n- plugins:\n  - name: least-allocated\n    arguments: {weight: .inf}\n",
            "plugin least-allocated: argument weight: expected a finite number (got inf)",
        ),
        (
            "tiers:\n- plugins:\n  - name: overcommit\n    arguments: {overcommit-factor: .nan}\n",
            "plugin overcommit: argument overcommit-factor: expected a finite number",
        ),
    ],
)
def test_infinite_and_nan_settings_are_refused(tmp_path, capsys, config, expected):
    """Not accepted only to break summary.json at the end of the run."""
    path = tmp_path / "scheduler.yaml"
    path.write_text(config)
    rc, out, err = run(
        capsys, "simulate", "--config", str(path), "--out", str(tmp_path / "out"), "--quiet"
    )
    assert rc == 1
    assert expected in err and len(err.strip().splitlines()) == 1


def test_validate_shows_the_first_problems_then_how_many_more(tmp_path, capsys):
    from berth.cli import main
    from berth.validate_cli import SHOWN_PROBLEMS

    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec: {{replica: 1}}\n"
        for i in range(SHOWN_PROBLEMS + 7)
    )
    path = tmp_path / "pods.yaml"
    path.write_text(pods)
    assert main(["validate", str(path)]) != 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == SHOWN_PROBLEMS + 1
    more = int(lines[-1].removeprefix("... and ").removesuffix(" more problems"))
    assert more >= 7  # every pod has at least the misspelt field
