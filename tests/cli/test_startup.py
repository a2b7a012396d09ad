"""Every ``berth`` command builds the whole parser before it runs, ``--help`` included, so the
parser must stay light: the simulator, the manifest schemas, the report's plotting and the
Kubernetes client are imported by the commands that use them, when they run. Each check runs
in a fresh interpreter, since this test process has long imported all of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Packages (with their submodules) that building the parser must leave unloaded.
HEAVY = (
    "matplotlib",
    "pydantic",
    "kubernetes",
    "numpy",
    "yaml",
    "rich",
    "berth.actions",
    "berth.api.manifest",
    "berth.api.objects",
    "berth.api.schema",
    "berth.controllers",
    "berth.framework",
    "berth.k8s",
    "berth.metrics",
    "berth.plugins",
    "berth.report",
    "berth.sim",
    "berth.traces.formats",
    "berth.traces.loader",
)

#: Imports the command line, runs ``main`` with the arguments given, if any (a --help exits),
#: then lists the modules loaded.
_LOADED = """
import sys
from berth.cli import main
if len(sys.argv) > 1:
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


def _loaded(*argv: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stderr.split()
    assert "berth.cli" in loaded
    return loaded


def _among(loaded: list[str], packages: tuple[str, ...]) -> list[str]:
    return [name for name in loaded if any(name == p or name.startswith(p + ".") for p in packages)]


def _heavy_loaded(*argv: str) -> list[str]:
    return _among(_loaded(*argv), HEAVY)


def test_importing_the_command_line_loads_nothing_heavy() -> None:
    assert _heavy_loaded() == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["simulate", "--help"],
        ["compare", "--help"],
        ["trace", "convert", "--help"],
        ["trace", "get", "--help"],
        ["serve", "--help"],
        ["fill", "--help"],
        ["bench", "--help"],
        ["validate", "--help"],
    ],
    ids=" ".join,
)
def test_help_builds_the_parser_without_heavy_modules(argv: list[str]) -> None:
    assert _heavy_loaded(*argv) == []


#: What only manifests (the pydantic models) or DRA objects (the allocator) need.
MANIFEST_ONLY = ("pydantic", "berth.api.schema.base", "berth.cluster.dra.allocator")

_ITP_ROWS = """job_id,submission_time,duration,num_gpu
a,0,600,8
b,60,1200,16
c,120,300,1
"""


def test_a_trace_run_loads_no_manifest_models(tmp_path: Path) -> None:
    """A run from a trace reads no manifest: building the models (a tenth of a second) and
    the DRA allocator are left to the runs that do."""
    trace = tmp_path / "trace.csv"
    trace.write_text(_ITP_ROWS)
    run = ["simulate", "--trace", str(trace), "--format", "itp", "--cluster-from-trace"]
    loaded = _loaded(*run, "--quiet", "--out", str(tmp_path / "out"))
    assert "berth.sim.engine" in loaded  # (it did simulate)
    assert _among(loaded, MANIFEST_ONLY) == []


def test_a_manifest_run_loads_the_models(tmp_path: Path) -> None:
    cluster, workload = EXAMPLES / "cluster.yaml", EXAMPLES / "workload.yaml"
    run = ["simulate", "--cluster", str(cluster), "--workload", str(workload), "--quiet"]
    loaded = _loaded(*run, "--out", str(tmp_path / "out"))
    assert {"pydantic", "berth.api.schema.pods"} <= set(loaded)
    assert "berth.cluster.dra.allocator" not in loaded
