"""``.jsonl`` manifests: one JSON object per line, every problem naming its line."""

from __future__ import annotations

import json
from pathlib import Path

from berth.api.manifest import load_files

QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}


def pod(name: str, cpu: object = "500m") -> dict[str, object]:
    container = {"name": "main", "resources": {"requests": {"cpu": cpu}}}
    annotations = {"berth.io/submit-time": "12", "berth.io/duration": "30"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [container]},
    }


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_objects_one_per_line(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps(QUEUE), "", json.dumps(pod("a")), "  "])
    loaded = load_files(path)
    assert not loaded.problems
    assert [q.name for q in loaded.queues] == ["q"]
    (only,) = loaded.pods
    assert (only.name, only.requests["cpu"], only.submit_time, only.duration) == ("a", 500, 12, 30)


def test_invalid_json_names_its_line_and_the_rest_still_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path, [json.dumps(pod("a")), '{"apiVersion": "v1", "kind": ', json.dumps(QUEUE)]
    )
    loaded = load_files(path)
    assert [str(p) for p in loaded.problems] == [
        f"{path}:2: invalid JSON at column 30: Expecting value (expected an object per line)"
    ]
    assert ([p.name for p in loaded.pods], [q.name for q in loaded.queues]) == (["a"], ["q"])


def test_object_problems_name_their_line(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps(pod("a")), json.dumps(pod("b", cpu="lots")), "[1]"])
    problems = [str(p) for p in load_files(path).errors]
    assert problems == [
        f'{path}:2: Pod/b: spec.containers[0].resources.requests.cpu: "lots" is not a quantity '
        "(expected e.g. 500m, 2, 4Gi)",
        f"{path}:3: -/-: expected an object with apiVersion and kind (got a list)",
    ]


def test_duplicates_name_the_first_line(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps(pod("a")), json.dumps(pod("a"))])
    (problem,) = load_files(path).errors
    assert str(problem) == (
        f'{path}:2: Pod/a: metadata.name: duplicate Pod "default/a" (also defined in {path}:1)'
    )
