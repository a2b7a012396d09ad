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
            except json.JSONDecodeError as exc:
                if not eof and len(buffer) - pos < _MAX_OBJECT:
                    chunk = handle.read(_CHUNK)
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
