"""Go duration strings ("1h", "1h30m", "90s", "1.5h"), the form Volcano's arguments and
annotations use for times, read as seconds.

Volcano parses them with Go's ``time.ParseDuration``; reading the same grammar keeps a
configuration or annotation that works there working here.
"""

from __future__ import annotations

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
