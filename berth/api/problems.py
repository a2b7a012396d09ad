"""What goes wrong in an input, located down to the field, and the context converters file it in.

Loading never stops at the first mistake: converters file problems through a ``Context`` (see
``berth.api.loaded``), and the caller decides what to do with them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Problem:
    """One thing wrong (error) or dubious (warning) in the input, located down to the field.

    ``kind`` is empty for problems with a whole file (missing, unparsable); ``name`` is "-" when
    the object's name could not be read.
    """

    file: str
    kind: str
    name: str
    path: str
    message: str
    severity: str  # "error" | "warning"

    def __str__(self) -> str:
        parts = [self.file]
        if self.kind:
            parts.append(f"{self.kind}/{self.name}")
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return ": ".join(parts)


@dataclass(slots=True, frozen=True)
class Origin:
    """Where an object came from, for the checks that run once every file is loaded."""

    file: str
    explicit_priority: bool = False


class ManifestError(Exception):
    """Raised by ``load_or_raise``; the message has one line per error."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def display(namespace: object, name: str) -> str:
    """Names in problem lines: the namespace shows only when it is not the default one."""
    if isinstance(namespace, str) and namespace and namespace != "default":
        return f"{namespace}/{name}"
    return name
