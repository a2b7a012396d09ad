"""Reading trace files row by row, and the field parsers every format shares.

Readers never hold a file in memory: they yield one row at a time with its line number, so an
error can say ``FILE:LINE`` and a 10 GB trace costs no more memory than a small one. Field
parsers raise ``RowError`` with what was found and what was expected; ``guard`` turns that into
the caller's choice of failing or skipping.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Protocol, TypeVar

from berth.api.numbers import to_float, to_int
from berth.traces.errors import Excluded, RowError, TraceError, TraceLog

T = TypeVar("T")
Item = TypeVar("Item", bound="Located")


class Located(Protocol):
    """A row or object of a trace: where it starts, and what is wrong with its shape, if any."""

    @property
    def line(self) -> int: ...

    @property
    def problem(self) -> str: ...


#: How much of a field a message quotes: a cell can be a whole mangled file.
SHOWN_CHARACTERS = 60


def show(value: str) -> str:
    """A field as it reads in the file, quoted, so empty and blank values are visible; a long
    one by its start."""
    if len(value) > SHOWN_CHARACTERS:
        value = value[:SHOWN_CHARACTERS] + "..."
    return json.dumps(value)


@contextmanager
def open_text(path: str | Path) -> Iterator[IO[str]]:
    """The file for text reading, with the failures users hit turned into one-line errors."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            yield handle
    except FileNotFoundError:
        raise TraceError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory (expected a trace file)") from None
    except UnicodeDecodeError:
        raise TraceError(
            f"{path}: is not a UTF-8 text file (expected CSV or JSON; decompress .gz/.tar.gz first)"
        ) from None


@dataclass(frozen=True, slots=True)
class Row:
    """One CSV row by column name; the parsers strip blanks (some traces pad after commas)."""

    line: int
    values: dict[str, str]
    problem: str = ""  # set when the row has the wrong number of fields

    def text(self, column: str) -> str:
        return self.values.get(column, "").strip()

    def required(self, column: str, expected: str) -> str:
        value = self.text(column)
        if not value:
            raise RowError(f"{column} is empty (expected {expected})")
        return value

    def number(self, column: str, expected: str, minimum: float | None = None) -> float:
        return to_number(self.required(column, expected), column, expected, minimum)

    def optional_number(
        self, column: str, expected: str, minimum: float | None = None
    ) -> float | None:
        value = self.text(column)
        return to_number(value, column, expected, minimum) if value else None

    def integer(self, column: str, expected: str, minimum: int | None = None) -> int:
        return to_integer(self.required(column, expected), column, expected, minimum)


def to_number(value: str, column: str, expected: str, minimum: float | None = None) -> float:
    try:
        number = to_float(value)
    except ValueError:
        raise RowError(f"{column} {show(value)} is not a number (expected {expected})") from None
    if not math.isfinite(number):
        raise RowError(f"{column} {show(value)} is not finite (expected {expected})")
    if minimum is not None and number < minimum:
        raise RowError(f"{column} {value} is below {minimum:g} (expected {expected})")
    return number


def to_integer(value: str, column: str, expected: str, minimum: int | None = None) -> int:
    """Integers, also written as floats ("8.0"), which pandas-exported traces do."""
    try:
        number = to_int(value)
    except ValueError:
        real = to_number(value, column, expected)
        if not real.is_integer():
            raise RowError(
                f"{column} {value} is not a whole number (expected {expected})"
            ) from None
        number = int(real)
    if minimum is not None and number < minimum:
        raise RowError(f"{column} {value} is below {minimum} (expected {expected})")
    return number


def read_csv(
    path: str | Path,
    columns: Sequence[str],
    *,
    header: bool | None,
    required: Sequence[str] | None = None,
) -> Iterator[Row]:
    """Rows of a CSV file keyed by column name.

    ``header`` True: the first row names the columns (in any order, extra ones ignored; the
    ``required`` ones must be there). None: a header is optional — the published file has none,
    but a first row naming the required columns is recognised and skipped. False: no header.
    """
    needed = list(required if required is not None else columns)
    with open_text(path) as handle:
        reader = csv.reader(handle)
        names = list(columns)
        first = header is not False
        try:
            for fields in reader:
                if not fields or (len(fields) == 1 and not fields[0].strip()):
                    continue
                if first:
                    first = False
                    found = [f.strip().lower() for f in fields]
                    if all(column in found for column in needed):
                        names = found
                        continue
                    if header:
                        missing = ", ".join(c for c in needed if c not in found)
                        raise TraceError(
                            f"{path}:{reader.line_num}: header lacks {missing} "
                            f"(expected {','.join(columns)})"
                        )
                yield _row(reader.line_num, names, fields)
        except csv.Error as exc:
            raise TraceError(f"{path}:{reader.line_num}: {exc} (expected CSV)") from None


def _row(line: int, names: list[str], fields: list[str]) -> Row:
    if len(fields) != len(names):
        expected = f"expected {len(names)}: {','.join(names)}"
        return Row(line, {}, f"has {len(fields)} fields ({expected})")
    return Row(line, dict(zip(names, fields, strict=True)))


def guard(
    items: Iterable[Item], parse: Callable[[Item], T], log: TraceLog, path: str | Path
) -> Iterator[T]:
    """Parse items one by one: bad ones go to ``log.bad_row`` (fail or skip), excluded ones are
    counted by reason, the rest are yielded."""
    for item in items:
        log.rows += 1
        try:
            if item.problem:
                raise RowError(item.problem)
            yield parse(item)
        except RowError as exc:
            log.bad_row(f"{path}:{item.line}", str(exc))
        except Excluded as exc:
            log.excluded[str(exc)] += 1


def _moment(value: str) -> datetime:
    """An ISO date and time as a naive UTC time: one with a zone is converted to UTC, one
    without is read as UTC, so a trace that mixes the two still compares and subtracts."""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def parse_datetime(value: str, column: str) -> datetime:
    try:
        return _moment(value)
    except ValueError:
        raise RowError(
            f"{column} {show(value)} is not a date and time (expected e.g. 2017-10-03 02:25:44)"
        ) from None


def is_number(value: str) -> bool:
    try:
        to_float(value)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Clock:
    """Turns a trace's time fields into seconds: numbers are taken as seconds already, dates
    become seconds since ``epoch`` (the trace's earliest submission, found in a first pass)."""

    epoch: datetime | None

    def seconds(self, value: str, column: str) -> float:
        if is_number(value) or self.epoch is None:
            return to_number(value, column, "seconds or a date and time")
        return (parse_datetime(value, column) - self.epoch).total_seconds()


def epoch(values: Iterable[str]) -> datetime | None:
    """The clock epoch of a time column: None when its first value is a number (times are
    seconds already), else the earliest date in it."""
    values = iter(values)
    first = next((value for value in values if value), "")
    if not first or is_number(first):
        return None
    return earliest(itertools.chain([first], values))


def earliest(values: Iterable[str]) -> datetime | None:
    """The earliest date among ``values``; unparsable ones are left to the second pass to report."""
    best: datetime | None = None
    for value in values:
        try:
            moment = _moment(value.strip())
        except ValueError:
            continue
        if best is None or moment < best:
            best = moment
    return best
