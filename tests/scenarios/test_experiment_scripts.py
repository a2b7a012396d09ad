"""Every script under docs/ imports and answers ``--help``: the experiments are run by hand
(``make experiment-*``), so nothing else would notice a name moved out from under them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "docs").rglob("*.py"))


def test_there_are_scripts_to_check() -> None:
    assert SCRIPTS, "no scripts under docs/"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_a_docs_script_imports_and_answers_help(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
