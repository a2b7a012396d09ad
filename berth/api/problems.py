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
            parts.append(f"{clip(self.kind, NAME_CHARACTERS)}/{clip(self.name, NAME_CHARACTERS)}")
        if self.path:
            parts.append(clip(self.path, PATH_CHARACTERS))
        parts.append(clip(self.message, MESSAGE_CHARACTERS))
        return ": ".join(parts)


#: How much of a kind or name, a field path and a message a problem line shows. The input
#: decides all three (a name, a key, a value quoted back), and a line must stay a line however
#: long they are: a kind of 50 MB printed whole is not a message.
NAME_CHARACTERS = 100
PATH_CHARACTERS = 160
MESSAGE_CHARACTERS = 400


def clip(text: str, limit: int) -> str:
    """``text`` on one line of at most about ``limit`` characters: the middle of a longer one
    gives way to "...", keeping its start (what it is) and end (what was expected)."""
    if len(text) > limit:
        keep = (limit - 3) // 2
        text = f"{text[:keep]}...{text[-keep:]}"
    return " ".join(text.splitlines()) or text


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
