"""Every ``berth`` command builds the whole parser before it runs, ``--help`` included, so the
parser must stay light: the simulator, the manifest schemas, the report's plotting and the
Kubernetes client are imported by the commands that use them, when they run. Each check runs
in a fresh interpreter, since this test process has long imported all of them."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


def _heavy_loaded(*argv: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stderr.split()
    assert "berth.cli" in loaded
    return [name for name in loaded if any(name == h or name.startswith(h + ".") for h in HEAVY)]


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
