"""How trace loading reports rows it cannot use.

Real traces are messy: a row may be malformed (a bad row: the trace is wrong), or well-formed but
outside what berth models (an excluded row: a documented rule of the format leaves it out), or
usable only after a change (an adjusted job: e.g. instances capped). None of these may vanish
silently, so every reader counts them in a ``TraceLog`` that the caller prints.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from berth.api.problems import MESSAGE_CHARACTERS, clip

ON_BAD_ROW = ("fail", "skip")


class TraceError(ValueError):
    """A trace that cannot be read; the message starts with ``FILE:LINE:`` when a row is bad."""


class RowError(ValueError):
    """What is wrong with one row; the reader prefixes ``FILE:LINE`` and applies on_bad_row."""


class Excluded(Exception):
    """A valid row that a documented format rule leaves out; the message is the counted reason,
    phrased to follow a count ("tasks without a cpu or memory request")."""


@dataclass
class TraceLog:
    """What happened to the rows of one read: counts and messages for the caller to print."""

    on_bad_row: str = "fail"  # one of ON_BAD_ROW, checked by TraceOptions
    rows: int = 0  # data rows (or JSON objects) read
    skipped: list[str] = field(default_factory=list)
    excluded: Counter[str] = field(default_factory=Counter)
    adjusted: Counter[str] = field(default_factory=Counter)

    def bad_row(self, where: str, message: str) -> None:
        """Fail on the first bad row, or count it; ``where`` is ``FILE:LINE``."""
        text = f"{where}: {clip(message, MESSAGE_CHARACTERS)}"
        if self.on_bad_row == "fail":
            raise TraceError(text)
        self.skipped.append(text)

    def lines(self) -> list[str]:
        """One human line per kind of event, in a stable order."""
        lines = []
        if self.skipped:
            lines.append(f"skipped {len(self.skipped):,} bad rows (first: {self.skipped[0]})")
        lines += [f"left out {n:,} {reason}" for reason, n in sorted(self.excluded.items())]
        lines += [f"changed {n:,} {reason}" for reason, n in sorted(self.adjusted.items())]
        return lines
