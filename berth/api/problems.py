"""What goes wrong in an input, located down to the field, and the context converters file it in.

Loading never stops at the first mistake: converters report through a ``Context`` into the
``Manifests`` being built, and the caller decides what to do with the problems.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from berth.api.manifest import Manifests


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


@dataclass(slots=True)
class Context:
    """The object being parsed, so problems can be filed against it."""

    out: Manifests
    file: str
    kind: str
    name: str
    prefix: str  # where the object sits inside its document: "" or "items[3]"
    base: str = ""  # where the part being converted sits inside the object, e.g. a task template

    def within(self, base: str) -> Context:
        return Context(self.out, self.file, self.kind, self.name, self.prefix, base)

    def report(self, severity: str, path: str, message: str) -> None:
        if self.base:
            path = f"{self.base}.{path}" if path else self.base
        # Objects inside a List are named by Kind/name already; the prefix only helps when the
        # name could not be read.
        if self.prefix and self.name == "-":
            path = f"{self.prefix}.{path}" if path else self.prefix
        self.out.problems.append(Problem(self.file, self.kind, self.name, path, message, severity))

    def error(self, path: str, message: str) -> None:
        self.report("error", path, message)

    def warn(self, path: str, message: str) -> None:
        self.report("warning", path, message)

    def origin(self, explicit_priority: bool = False) -> Origin:
        return Origin(self.file, explicit_priority)


def display(namespace: object, name: str) -> str:
    """Names in problem lines: the namespace shows only when it is not the default one."""
    if isinstance(namespace, str) and namespace and namespace != "default":
        return f"{namespace}/{name}"
    return name
