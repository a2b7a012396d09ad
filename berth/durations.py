"""Times written as text, read as seconds.

Go duration strings ("1h", "1h30m", "90s", "1.5h") are the form Volcano's arguments and
annotations use; Volcano parses them with Go's ``time.ParseDuration``, and reading the same
grammar keeps a configuration or annotation that works there working here. Command-line times
(``--until 1d``, ``--from 2h``) are plain seconds or numbers with s, m, h, d units.
"""

from __future__ import annotations

import math
import re

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """Text that Go's time.ParseDuration would reject."""


def non_negative(value: object) -> bool:
    """Whether a configuration value is a number of seconds (or another amount) a run can
    use: an int or float, finite, at least 0 (YAML's ``.inf`` and ``.nan`` are floats)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def parse_duration(text: str) -> float:
    """Seconds in ``text``; a leading sign is allowed as in Go, and "0" needs no unit."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    if body[:1] in ("+", "-"):
        body = body[1:]
    if body == "0":
        return 0.0
    position, total = 0, 0.0
    while position < len(body):
        match = _PART.match(body, position)
        if match is None:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not body or position != len(body):
        raise DurationError(f"{text!r} is not a duration (expected e.g. 30m, 1h, 1h30m)")
    return sign * total


_SPAN_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}
_SPAN_PART = re.compile(r"(\d+\.?\d*|\.\d+)([smhd])")
_PLAIN = re.compile(r"\d+\.?\d*|\.\d+")


def parse_span(text: str) -> float:
    """Seconds in a time span written for people, as the command line takes them: plain seconds
    (``3600``, ``1.5``) or numbers with units s, m, h, d (``90m``, ``2h``, ``1d``, ``1d12h``); a
    leading minus is allowed (trace windows may start before 0). Never NaN or infinite."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    if body[:1] in ("+", "-"):
        body = body[1:]
    position, total = 0, 0.0
    if _PLAIN.fullmatch(body):
        position, total = len(body), float(body)
    while position < len(body):
        match = _SPAN_PART.match(body, position)
        if match is None:
            break
        total += float(match.group(1)) * _SPAN_UNITS[match.group(2)]
        position = match.end()
    if not body or position != len(body) or not math.isfinite(total):
        raise DurationError(f"{text!r} is not a time (expected seconds, or e.g. 90m, 2h, 1d)")
    return sign * total


def format_duration(seconds: float | None) -> str:
    """Two units at most ("3h 20m"): a delay read at a glance, not a timestamp."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    sign = "-" if seconds < 0 else ""
    value = abs(seconds)
    if value < 59.5:
        return sign + _format_seconds(value)
    secs = round(value)
    if secs < 3600:
        return sign + _two_units(secs, 60, "m", "s")
    mins = round(value / 60)
    if mins < 24 * 60:
        return sign + _two_units(mins, 60, "h", "m")
    return sign + _two_units(round(value / 3600), 24, "d", "h")


def _format_seconds(value: float) -> str:
    if value >= 10:
        return f"{round(value)}s"
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "<0.1s" if text == "0" and value > 0 else f"{text}s"


def _two_units(amount: int, per: int, big: str, small: str) -> str:
    whole, rest = divmod(amount, per)
    return f"{whole}{big} {rest}{small}" if rest else f"{whole}{big}"
