"""What a trace format is: a name and the tables it can read, each recognisable from its file.

A format may publish several tables (Alibaba openb has a pod list and a node list, PAI has job,
task and machine tables), and a table is one of four kinds: jobs (become PodGroups and Pods),
nodes (become Nodes), usage (machine utilisation samples) or load (request arrivals, read as a
load curve). A table recognises its files from
the file name and the first line, which is all ``detect_format`` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from berth.traces.errors import TraceError, TraceLog
from berth.traces.model import TraceOptions
from berth.traces.rows import open_text

T = TypeVar("T")
Kind = Literal["jobs", "nodes", "usage", "load"]

_SNIFF_BYTES = 65_536


@dataclass(frozen=True, slots=True)
class Sniff:
    """The file name (lowercase) and first non-blank line, for recognising a table."""

    name: str
    first_line: str

    @property
    def fields(self) -> list[str]:
        return [field.strip().lower() for field in self.first_line.split(",")]

    @property
    def is_json(self) -> bool:
        return self.first_line.lstrip()[:1] in ("[", "{")

    @classmethod
    def of(cls, path: Path) -> Sniff:
        """Raises TraceError for a file that cannot be a trace at all: missing, a directory,
        not text, or empty."""
        with open_text(path) as handle:
            head = handle.read(_SNIFF_BYTES)
        first = next((line for line in head.splitlines() if line.strip()), "")
        if not first:
            raise TraceError(f"{path}: is empty (expected a trace file)")
        return cls(path.name.lower(), first)


Matcher = Callable[[Sniff], bool]


def has_columns(*columns: str) -> Matcher:
    """A CSV whose header names at least ``columns``."""
    return lambda sniff: all(column in sniff.fields for column in columns)


def named(*parts: str) -> Matcher:
    """A file whose name contains one of ``parts`` (for tables published without a header)."""
    return lambda sniff: any(part in sniff.name for part in parts)


def table_file(name: str, columns: tuple[str, ...]) -> Matcher:
    """A table published without a header: known by its file name, or by a header if someone
    added one."""
    return lambda sniff: named(name)(sniff) or has_columns(*columns)(sniff)


@dataclass(frozen=True)
class Table(Generic[T]):
    kind: Kind
    what: str  # how the table looks, for messages: "pods (name,cpu_milli,...)"
    matches: Matcher
    read: Callable[[Path, TraceOptions, TraceLog], Iterator[T]]


@dataclass(frozen=True)
class TraceFormat:
    name: str
    description: str
    tables: tuple[Table[Any], ...]
