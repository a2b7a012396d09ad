"""How a command fails on bad input: which errors mean "your input is wrong" rather than
"berth is broken", the exit status they get, and the one-line-each way they are printed."""

from __future__ import annotations

import sys

from berth.api.manifest import ManifestError
from berth.framework.config import ConfigError
from berth.framework.plugin import PluginArgumentError
from berth.sim.engine import SimConfigError
from berth.sim.inputs import InputError
from berth.traces.catalog import FetchError


class InputConflict(ValueError):
    """Command-line inputs that contradict each other (or a trace window that ends before it
    starts)."""


#: Everything that means "your input is wrong" rather than "berth is broken".
INPUT_ERRORS = (
    ManifestError,
    ConfigError,
    PluginArgumentError,
    SimConfigError,
    InputError,
    InputConflict,
    FetchError,
)

EXIT_INPUT = 1  # bad input: validate problems, configuration errors


def input_failure(exc: Exception) -> int:
    """Print a load-time error the way validate prints problems: one line each."""
    if isinstance(exc, ManifestError):
        for problem in exc.problems:
            print(problem, file=sys.stderr)
    else:
        print(f"error: {exc}", file=sys.stderr)
    return EXIT_INPUT
