"""How a command fails on bad input: which errors mean "your input is wrong" rather than
"berth is broken", the exit status they get, and the one-line-each way they are printed."""

from __future__ import annotations

import sys

from berth.api.problems import ManifestError


class InputConflict(ValueError):
    """Command-line inputs that contradict each other (or a trace window that ends before it
    starts)."""


def input_errors() -> tuple[type[Exception], ...]:
    """Everything that means "your input is wrong" rather than "berth is broken".

    A function, not a constant: the error classes live in the configuration, simulator and
    catalog modules, which a command imports when it runs, not when the parser is built. A
    command names it in its ``except`` clause, which is evaluated only once something raised.
    """
    from berth.executors import SweepError
    from berth.framework.config import ConfigError
    from berth.framework.plugin import PluginArgumentError
    from berth.sim.config import SimConfigError
    from berth.sim.inputs import InputError
    from berth.traces.catalog import FetchError

    return (
        ManifestError,
        ConfigError,
        PluginArgumentError,
        SimConfigError,
        InputError,
        InputConflict,
        FetchError,
        SweepError,
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
