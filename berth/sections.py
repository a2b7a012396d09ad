"""The check every section of a configuration file starts with (``simulation.loaning``,
``simulation.scaling``, ...): a mapping, naming only the fields the section reads, refused in
one line that names the file, the section and the first field it does not know."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def section(
    raw: Any,
    where: str,
    known: Iterable[str],
    error: type[Exception],
    shape: str = "a mapping",
) -> dict[str, Any]:
    """``raw`` when it is a mapping of ``known`` fields; else ``error`` saying, at ``where``
    (the file and the section's path), that ``shape`` was expected or which field is unknown
    (the first in sorted order) and which ones are known (in their order)."""
    if not isinstance(raw, dict):
        raise error(f"{where}: expected {shape}")
    known = list(known)
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise error(f"{where}.{unknown[0]}: unknown field (expected {', '.join(known)})")
    return raw
