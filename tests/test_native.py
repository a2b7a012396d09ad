"""The compiled group (berth.native): used all together while every module is built from the
source it has now, else every one from source; and what ran is what the process says."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from berth import native

_NAMES = ("berth.a", "berth.sub.b")
_ROOT = Path(__file__).resolve().parent.parent
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _tree(root: Path, built: tuple[str, ...], stamped: dict[str, str] | None) -> None:
    """The two modules' sources, compiled files for those ``built`` (empty: never imported
    here), and the build's record of the sources it was built from: the digests of these
    sources, with ``stamped`` as the source text recorded for a module instead (None: no
    record)."""
    for name in _NAMES:
        path = native.source(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n")
        if name in built:
            path.with_name(path.stem + _SUFFIX).write_bytes(b"")
    if stamped is not None:
        native.stamp(root, _NAMES)
        recorded = json.loads((root / "berth" / native.STAMP).read_text())
        for name, text in stamped.items():
            recorded[name] = hashlib.sha256(text.encode()).hexdigest()
        (root / "berth" / native.STAMP).write_text(json.dumps(recorded))


@pytest.mark.parametrize(
    ("built", "stamped", "asked", "expected"),
    [
        (_NAMES, {}, None, "compiled"),
        (_NAMES, {}, "1", "compiled"),
        (_NAMES, {}, "0", "from source: asked"),
        ((), {}, None, "from source: not built"),
        (("berth.a",), {}, None, "from source: not built"),
        (_NAMES, None, None, "from source: not built"),
        (
            _NAMES,
            {"berth.sub.b": "# berth.sub.b as it was\n"},
            None,
            "from source: berth.sub.b changed since the build",
        ),
    ],
)
def test_the_group_runs_compiled_only_when_every_module_is_built_from_its_source(
    tmp_path: Path,
    built: tuple[str, ...],
    stamped: dict[str, str] | None,
    asked: str | None,
    expected: str,
) -> None:
    _tree(tmp_path, built, stamped)
    assert native.mode(tmp_path, _NAMES, asked) == expected


def test_from_source_the_group_is_found_as_its_sources_and_nothing_else(tmp_path: Path) -> None:
    _tree(tmp_path, _NAMES, {})
    finder = native._FromSource(tmp_path, _NAMES)
    spec = finder.find_spec("berth.sub.b")
    assert spec is not None and spec.origin == str(native.source(tmp_path, "berth.sub.b"))
    assert isinstance(spec.loader, importlib.machinery.SourceFileLoader)
    assert finder.find_spec("berth.c") is None


def _modules_loaded(env: dict[str, str]) -> list[str]:
    code = (
        "import importlib, berth.native as n\n"
        "print(n.MODE)\n"
        "for name in n.COMPILED: print(importlib.import_module(name).__file__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return out.stdout.splitlines()


def test_what_this_process_loads_is_what_it_reports() -> None:
    mode, *files = _modules_loaded(dict(os.environ))
    assert mode == native.MODE
    compiled = [not f.endswith(".py") for f in files]
    assert all(compiled) if mode == "compiled" else not any(compiled)


def test_asked_for_the_sources_a_built_tree_loads_every_module_from_source() -> None:
    mode, *files = _modules_loaded({**os.environ, native.SWITCH: "0"})
    assert mode == "from source: asked"
    assert files and all(f.endswith(".py") for f in files)


@pytest.mark.skipif(native.MODE != "compiled", reason="from source they run in place")
def test_the_tests_that_patch_the_compiled_group_pass_from_source() -> None:
    """(tests/conftest.py takes them out of a compiled run.)"""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "from_source"]
        + ["tests"],
        cwd=_ROOT,
        env={**os.environ, native.SWITCH: "0"},
        capture_output=True,
        text=True,
    )
    # (0: all passed; pytest says 5 when it selected none)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


_SHARED = _ROOT.parent / "shared" / "traces"
#: Replays whose outputs must not depend on how the group runs: the built-in scenario, gangs
#: with preemption on real ITP jobs, Alibaba's task runs (many pods at one time) and GPU
#: sharing on openb.
_REPLAYS = {
    "built-in scenario": [],
    "itp cluster04, first 4 days": ["--trace", "itp/cluster04.csv", "--to", "4d"],
    "alibaba 2017, first 3 minutes": ["--trace", "alibaba-2017/batch_task.csv", "--to", "3m"],
    "openb default": ["--trace", "alibaba-openb-2023/openb_pod_list_default.csv"],
}


@pytest.mark.skipif(native.MODE != "compiled", reason="compared only where the group is built")
@pytest.mark.parametrize("argv", _REPLAYS.values(), ids=_REPLAYS.keys())
def test_a_replay_writes_the_same_outputs_compiled_and_from_source(
    argv: list[str], tmp_path: Path
) -> None:
    """mypyc keeps Python's semantics only for code that keeps to its types (a dict subclass's
    overrides, for one, are passed over), so the two ways must be seen to agree."""
    if argv and not (_SHARED / argv[1]).exists():
        pytest.skip(f"real traces not found at {_SHARED}")
    trace = ["--trace", str(_SHARED / argv[1]), *argv[2:], "--cluster-from-trace"] if argv else []
    outputs = {}
    for switch in ("1", "0"):
        out = tmp_path / switch
        run = subprocess.run(
            [sys.executable, "-m", "berth.cli", "simulate", *trace, "--quiet", "--out", str(out)],
            cwd=tmp_path,
            env={**os.environ, native.SWITCH: switch},
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        outputs[switch] = {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}
    assert outputs["1"] and outputs["1"] == outputs["0"]
