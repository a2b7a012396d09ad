"""Numbers written as text (annotations, CSV cells), read the way Kubernetes' parsers read them.

Python's ``float`` and ``int`` take more than a number: ``"1_000"`` (digit grouping) and digits
of other scripts (``"١٢"``, ``"１２"``) parse, so a typo or a mangled cell would pass as a
value no Kubernetes or Volcano parser accepts. These take ASCII digits with an optional sign,
decimal point and exponent, and surrounding blanks. ``nan`` and ``inf`` still parse: callers
refuse them with their own message about what they expected.
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(
    r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf|infinity|nan)", re.ASCII | re.IGNORECASE
)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


def to_float(text: str) -> float:
    """``float(text)`` for a plainly written number; ValueError otherwise."""
    stripped = text.strip()
    if not _DECIMAL.fullmatch(stripped):
        raise ValueError(f"not a number: {text[:40]!r}")
    return float(stripped)


def to_int(text: str) -> int:
    """``int(text)`` for a plainly written integer; ValueError otherwise (also for more digits
    than Python converts)."""
    stripped = text.strip()
    if not _INTEGER.fullmatch(stripped):
        raise ValueError(f"not an integer: {text[:40]!r}")
    return int(stripped)
