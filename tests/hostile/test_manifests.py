"""The shipped examples, mutated at the YAML-tree level, through ``berth validate`` and
``berth simulate``: every outcome a clear refusal or a run that wrote its outputs."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.hostile.harness import EXAMPLES, berth, hostile, refused
from tests.hostile.mutations import mutated

MANIFESTS = sorted(
    p
    for p in EXAMPLES.rglob("*.yaml")
    if "kind" in p.read_text() and "KubeSchedulerConfiguration" not in p.read_text()
)
CONFIGURATIONS = sorted(
    [*EXAMPLES.rglob("*.conf"), EXAMPLES / "binpack.yaml", EXAMPLES / "kube-scheduler.yaml"]
    + [EXAMPLES / "loaning" / "scheduler.yaml"]
)
CLUSTER = EXAMPLES / "cluster.yaml"
WORKLOAD = EXAMPLES / "workload.yaml"
TREES = {path: [d for d in yaml.safe_load_all(path.read_text()) if d] for path in MANIFESTS}
CONFIG_TREES = {path: [yaml.safe_load(path.read_text())] for path in CONFIGURATIONS}


def write(folder: Path, docs: list[Any], form: str) -> Path:
    """``docs`` as a file of one of the forms berth reads manifests in."""
    path = Path(tempfile.mkdtemp(dir=folder)) / f"manifests.{form}"
    if form == "yaml":
        path.write_text(yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False))
    elif form == "json":
        path.write_text(json.dumps(docs))
    else:
        path.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    return path


def out_folder(folder: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=folder)) / "out"


def test_every_example_is_found():
    assert len(MANIFESTS) >= 15 and len(CONFIGURATIONS) == 6


@pytest.mark.parametrize("example", MANIFESTS, ids=lambda p: str(p.relative_to(EXAMPLES)))
@pytest.mark.parametrize("form", ["yaml", "json", "jsonl"])
def test_an_example_says_the_same_in_every_form(tmp_path, example, form):
    """Nothing valid is refused and nothing is lost on the way from one form to another."""
    original = berth("validate", example)
    again = berth("validate", write(tmp_path, TREES[example], form))
    assert original.rc == again.rc == 0, again
    assert original.out.splitlines()[-1] == again.out.splitlines()[-1]


documents = st.sampled_from(MANIFESTS).flatmap(
    lambda path: st.tuples(st.just(path), mutated(TREES[path]))
)


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return False


@hostile(500)
@given(case=documents, form=st.sampled_from(["yaml", "json", "jsonl"]))
def test_mutated_manifests_are_refused_or_valid(tmp_path, case, form):
    example, (docs, done) = case
    outcome = berth("validate", write(tmp_path, docs, form))
    if _has_nan(docs):
        # No manifest field takes NaN or an infinity.
        assert refused(outcome), f"{example}: {done}\n{outcome}"


@hostile(60)
@given(case=documents)
def test_mutated_workloads_simulate_or_are_refused(tmp_path, case):
    example, (docs, done) = case
    workload = write(tmp_path, docs, "yaml")
    out = out_folder(tmp_path)
    outcome = berth(
        "simulate", "--cluster", CLUSTER, "--workload", workload, "--until", "20m",
        "--quiet", "--out", out,
    )  # fmt: skip
    if outcome.rc == 0:
        assert (out / "summary.json").is_file(), f"{example}: {done}\n{outcome}"
    else:
        assert not out.exists(), f"{example}: {done}\n{outcome}"


configurations = st.sampled_from(CONFIGURATIONS).flatmap(
    lambda path: st.tuples(st.just(path), mutated(CONFIG_TREES[path]))
)


@hostile(20)
@given(case=configurations)
def test_mutated_configurations_validate_as_they_simulate(tmp_path, case):
    """A configuration ``validate`` passes runs, and one ``simulate`` refuses ``validate``
    refuses too. (The converse does not hold yet: ``simulate`` runs the default configuration,
    with a warning, on a mapping of unknown fields, which ``validate`` reads as a manifest.)"""
    example, (tree, done) = case
    config = write(tmp_path, tree, "yaml")
    checked = berth("validate", config)
    out = out_folder(tmp_path)
    ran = berth(
        "simulate", "--cluster", CLUSTER, "--workload", WORKLOAD, "--config", config,
        "--until", "20m", "--quiet", "--out", out,
    )  # fmt: skip
    if not any(tree):
        # An empty configuration file: both refuse it (--config default is the default).
        assert refused(ran) and refused(checked) and "empty" in ran.err, f"{checked}\n{ran}"
        return
    assert refused(ran) <= refused(checked), f"{example}: {done}\n{checked}\n{ran}"
    if refused(checked) and not refused(ran):
        assert "warning: " in ran.err, f"{example}: {done}\n{checked}\n{ran}"
    if ran.rc == 0:
        assert (out / "summary.json").is_file()


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_file_of_50_mb_is_refused_at_once(tmp_path, suffix):
    """Whatever it holds: its size is checked before it is read (a sparse file stands in)."""
    big = tmp_path / f"big{suffix}"
    with big.open("wb") as handle:
        handle.truncate(50_000_000)
    for argv in (
        ["validate", big],
        ["simulate", "--cluster", big, "--quiet", "--out", tmp_path / "out"],
        ["simulate", "--config", big, "--quiet", "--out", tmp_path / "out"],
    ):
        outcome = berth(*argv, deadline=10)
        assert refused(outcome) and "50.0 MB, more than the 32 MB" in outcome.text, outcome
