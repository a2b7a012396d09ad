"""Package faces that load their names when first asked for (PEP 562's module ``__getattr__``).

A package whose names come from heavy modules hands them out this way, so that importing the
package, or one light module in it, does not load the rest: the command line builds its parser
from the traces package's light modules, and a run without DRA objects never loads the
allocator.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name in ``homes`` is imported
    from the module it maps to when first asked for, then kept in ``namespace`` (the package's
    globals), so later lookups find it without coming back here."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *homes})

    return load, names
