"""Values that parse but mean nothing, references that cannot be met, and inputs too large to
read: each refused (or warned about) in one short line, found by ``tests/hostile``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from berth.api import documents
from berth.api.manifest import load_files
from berth.api.numbers import to_float, to_int
from berth.api.problems import Problem


@pytest.mark.parametrize("text", ["1", "-2.5", " 3 ", ".5", "5.", "1e3", "+4E-2", "nan", "inf"])
def test_plain_numbers_read(text):
    assert to_float(text) == pytest.approx(float(text), nan_ok=True)


@pytest.mark.parametrize("text", ["1_000", "١٢", "１２", "0x10", "1.5.5", "", " ", "1 000", "e5"])
def test_numbers_no_kubernetes_parser_reads_are_refused(text):
    with pytest.raises(ValueError):
        to_float(text)
    with pytest.raises(ValueError):
        to_int(text)


def test_integers_read_and_refuse():
    assert to_int(" -12 ") == -12
    for text in ("1.0", "1e3", "9" * 5000):
        with pytest.raises(ValueError):
            to_int(text)


def pod(annotations: dict[str, str], **spec: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": annotations},
        "spec": {"containers": [{"name": "m"}], **spec},
    }


def elastic_job(switch: str) -> dict:
    template = {"spec": {"containers": [{"name": "m"}]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {"berth.io/elastic": switch}},
        "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 2, "template": template}]},
    }


def problems(tmp_path: Path, *docs: dict) -> list[str]:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(list(docs)))
    return [f"{p.severity}: {str(p).removeprefix(f'{path}: ')}" for p in load_files(path).problems]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            pod({"berth.io/submit-time": "1_000"}),
            'error: Pod/p: metadata.annotations.berth.io/submit-time: "1_000" is not a number',
        ),
        (
            pod({"berth.io/duration": "١٢"}),
            "error: Pod/p: metadata.annotations.berth.io/duration: "
            '"\\u0661\\u0662" is not a number',
        ),
        (
            pod({"berth.io/gpu-memory": "1_0"}),
            'error: Pod/p: metadata.annotations.berth.io/gpu-memory: "1_0" is not an integer '
            "(expected a positive integer)",
        ),
        (
            pod({"sla-waiting-time": "banana"}),
            'error: Pod/p: metadata.annotations.sla-waiting-time: "banana" is not a duration '
            "(expected e.g. 30m, 1h, 1h30m)",
        ),
        (
            elastic_job("yes please"),
            'error: Job/j: metadata.annotations.berth.io/elastic: "yes please" is not true or '
            "false",
        ),
        (
            pod({"scheduling.volcano.sh/queue-name": "nowhere"}),
            "warning: Pod/p: metadata.annotations.scheduling.volcano.sh/queue-name: no Queue "
            'named "nowhere" in the loaded files: the pod waits until one exists',
        ),
        (
            pod({"scheduling.k8s.io/group-name": "nobody"}),
            "warning: Pod/p: metadata.annotations.scheduling.k8s.io/group-name: no PodGroup "
            'named "nobody" in the loaded files: the pod waits until one exists',
        ),
        (
            {
                "apiVersion": "berth.io/v1alpha1",
                "kind": "NodePool",
                "metadata": {"name": "pool"},
                "spec": {"count": 10**9, "template": {}},
            },
            "error: NodePool/pool: spec.count: must be <= 1000000 (got 1000000000)",
        ),
    ],
)
def test_values_that_parse_but_mean_nothing(tmp_path, doc, expected):
    assert problems(tmp_path, doc) == [expected]


def test_a_false_elastic_switch_is_a_rigid_job(tmp_path):
    assert problems(tmp_path, elastic_job("false")) == []


@pytest.mark.parametrize(
    ("kind", "name", "path", "message"),
    [
        ("x" * 50_000_000, "-", "", "unknown kind"),
        ("Pod", "n" * 100_000, "metadata.name", "too long"),
        ("Pod", "p", "metadata.labels." + "k" * 100_000, "unknown field"),
        ("Pod", "p", "spec", "point 1 '" + "x" * 100_000 + "': expected time=cpu[/memory]"),
        ("Pod", "p", "spec", "a\nvalue\r\non three lines"),
    ],
)
def test_a_problem_is_one_short_line_whatever_the_input(kind, name, path, message):
    line = str(Problem("f.yaml", kind, name, path, message, "error"))
    assert len(line) < 500 and len(line.splitlines()) == 1
    assert line.startswith(f"f.yaml: {kind[:20]}")
    assert line.endswith(message[-20:].replace("\r\n", " "))


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_file_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch, suffix):
    monkeypatch.setattr(documents, "MAX_TEXT_CHARACTERS", 1000)
    path = tmp_path / f"big{suffix}"
    path.write_text("# padding\n" * 200)
    (problem,) = load_files(path).problems
    assert str(problem) == (
        f"{path}: 0.0 MB, more than the 32 MB berth reads as one YAML or JSON file (write a "
        "larger workload as JSON Lines, .jsonl, or split it into files)"
    )


def test_json_lines_have_no_size_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "MAX_TEXT_CHARACTERS", 1000)
    path = tmp_path / "big.jsonl"
    path.write_text(
        "".join(json.dumps(pod({}) | {"metadata": {"name": f"p{i}"}}) + "\n" for i in range(50))
    )
    assert len(load_files(path).pods) == 50


def test_json_broken_deep_in_is_reported_as_json(tmp_path):
    """Without reading it all again as YAML, which takes minutes on a large file."""
    items = ",".join(json.dumps(pod({}) | {"metadata": {"name": f"p{i}"}}) for i in range(1000))
    assert documents.load_yaml(f"[{items}]")[0][999]["metadata"]["name"] == "p999"
    with pytest.raises(documents.DocumentError, match=r"^invalid JSON at line 1, column \d+: "):
        documents.load_yaml(f"[{items}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{a: 1, b: [x, y]}", [{"a": 1, "b": ["x", "y"]}]),  # YAML's flow style, not JSON
        ('{"replicas": 1e3}', [{"replicas": 1000.0}]),  # JSON's number, not YAML 1.1's string
        ("[1, 2]\n", [[1, 2]]),
    ],
)
def test_json_and_flow_yaml_read_as_what_they_are(text, expected):
    assert documents.load_yaml(textwrap.dedent(text)) == expected


def test_a_json_key_repeated_is_named_by_line():
    with pytest.raises(documents.DocumentError, match=r"duplicate key \"a\" \(first at line 1\)"):
        documents.load_yaml('{"a": 1,\n "a": 2}')
