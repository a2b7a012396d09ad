"""Progress bars for long work, on stderr and only on a terminal: a pipe, a log file or CI sees
no bar, so their output stays what the command printed (and stdout, e.g. ``bench --json``,
stays machine-readable)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from berth.durations import format_duration


def _console() -> Console:
    return Console(stderr=True)


def shown() -> bool:
    """Whether bars are drawn at all (stderr is a terminal)."""
    return _console().is_terminal


@contextmanager
def bars() -> Iterator[Progress]:
    """A bar display that disappears when done; a no-op off a terminal."""
    console = _console()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as p:
        yield p


def simulated_time(progress: Progress, description: str, horizon: float):
    """A task for a simulation that will end near ``horizon`` simulated seconds, and the
    callback the simulator calls with the simulated time it has reached."""
    total = horizon if horizon > 0 and math.isfinite(horizon) else None
    task = progress.add_task(description, total=total, detail="")

    def update(now: float) -> None:
        progress.update(task, completed=now, detail=f"t={format_duration(now)}")

    return task, update
