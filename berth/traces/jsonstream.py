"""Objects of a large JSON file, one at a time.

Philly's ``cluster_job_log`` is a single JSON array (hundreds of MB for the full trace); loading it
with ``json.load`` would hold every job at once. This reader decodes one array element at a time
from a sliding buffer, so memory stays at one chunk plus one object, and it remembers the line
each object starts on for error messages. A stream of objects without the enclosing array (JSON
Lines) reads the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from berth.traces.errors import TraceError
from berth.traces.rows import open_text

_CHUNK = 1 << 20
#: An object still undecodable with this much text after its start is broken, not truncated.
_MAX_OBJECT = 64 << 20
_SEPARATORS = re.compile(r"[\s,]*")


@dataclass(frozen=True, slots=True)
class JsonItem:
    line: int
    value: object
    problem: str = ""


def read_json_objects(path: str | Path) -> Iterator[JsonItem]:
    """Elements of a top-level array (or top-level values in sequence) with their start lines.

    Invalid JSON is always fatal: without a parse there is no telling where the element ends,
    so it cannot be skipped like a bad row.
    """
    decoder = json.JSONDecoder()
    with open_text(path) as handle:
        buffer, pos, line = "", 0, 1
        eof, started = False, False
        while True:
            end = _SEPARATORS.match(buffer, pos).end()  # type: ignore[union-attr]
            line += buffer.count("\n", pos, end)
            pos = end
            if pos == len(buffer):
                if eof:
                    return
                chunk = handle.read(_CHUNK)
                buffer, pos, eof = buffer[pos:] + chunk, 0, not chunk
                continue
            if not started:
                started = True
                if buffer[pos] == "[":
                    pos += 1
                    continue
            if buffer[pos] == "]":
                return
            try:
                value, end = decoder.raw_decode(buffer, pos)
            except RecursionError:
                raise TraceError(
                    f"{path}:{line}: invalid JSON: nested too deeply (expected an array of job "
                    "objects)"
                ) from None
            except json.JSONDecodeError as exc:
                if not eof and _cut_short(buffer, exc) and len(buffer) - pos < _MAX_OBJECT:
                    # As much again as the object has so far: an object of n characters is
                    # decoded about log(n) times, not once per chunk it spans.
                    chunk = handle.read(max(_CHUNK, len(buffer) - pos))
                    buffer, pos, eof = buffer[pos:] + chunk, 0, not chunk
                    continue
                where = line + buffer.count("\n", pos, exc.pos)
                if eof and buffer.rstrip()[-1:] not in ("]", "}"):
                    raise TraceError(
                        f"{path}:{where}: the file ends inside this object (truncated?): {exc.msg}"
                    ) from None
                raise TraceError(
                    f"{path}:{where}: invalid JSON: {exc.msg} (expected an array of job objects)"
                ) from None
            yield JsonItem(line, value)
            line += buffer.count("\n", pos, end)
            pos = end


#: How close to the end of the text a decoding error must be to be the text running out (a
#: literal, number or escape cut in two) rather than a mistake.
_TAIL = 16


def _cut_short(buffer: str, exc: json.JSONDecodeError) -> bool:
    """Whether decoding failed because the text read so far ends inside the object (more
    text may complete it), not because the object is broken where it failed."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(buffer) - _TAIL
