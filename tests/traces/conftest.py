"""Where the trace tests find their inputs: samples written for this project (``data/``) and
the real public traces beside the project (``../shared/traces``), which users do not have —
tests that need those skip when they are absent."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from berth.traces.cli import add_trace_commands

DATA = Path(__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"


@pytest.fixture
def data() -> Path:
    return DATA


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"real traces not found at {SHARED}")
    return SHARED


@pytest.fixture
def berth_trace() -> Callable[..., int]:
    """Runs ``berth trace ...`` through the handlers, as ``berth.cli`` will."""

    def run(*argv: str) -> int:
        parser = argparse.ArgumentParser(prog="berth")
        add_trace_commands(parser.add_subparsers(dest="command"))
        args = parser.parse_args(["trace", *argv])
        return int(args.handler(args))

    return run
