"""Text into documents, safely: YAML and JSON parsed with the checks a hostile or mistaken
file needs before any parser sees it.

PyYAML's C parser recurses once per nesting level and crashes the process on a few hundred
thousand ``[``; Python's JSON decoder raises RecursionError. No manifest or configuration nests
anywhere near ``MAX_DEPTH``, so deeper text is refused up front, in one line. YAML and JSON
both let a later duplicate key silently replace an earlier one; Kubernetes rejects such
objects, and so does berth. Every failure is a ``DocumentError`` whose message is one line
naming where in the text it is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from berth.api.yaml_errors import yaml_error_message

#: Deeper nesting than this is refused before parsing (Kubernetes objects nest about 15 deep).
MAX_DEPTH = 200
#: Larger YAML or JSON texts are refused before parsing. PyYAML reads about 1 MB a second, so a
#: 50 MB file would keep a command busy for minutes before the first check; a workload that
#: large belongs in JSON Lines (``berth trace convert --out F.jsonl``), read line by line, or
#: in several files. The whole ITP cluster04 trace converted to YAML is 11 MB.
MAX_TEXT_MB = 32
MAX_TEXT_CHARACTERS = MAX_TEXT_MB * 1_000_000
_JSON_FOR_SURE = 65_536

_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"
_QUOTED = re.compile(rb'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\n]|\'\')*\'')
_OPEN = np.zeros(256, dtype=np.int64)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


class DocumentError(ValueError):
    """Text that is not a well-formed document; the message is one line."""


class _Loader(_BASE):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a mapping that repeats a key."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {json.dumps(str(key))} (first at line {first[key]})",
                    key_node.start_mark,
                )
            first[key] = line
        return super().construct_mapping(node, deep=deep)


def nesting_depth(text: str) -> int:
    """How deep ``[`` and ``{`` nest outside quoted strings, or how many block levels the most
    indented line opens (one per two characters of leading spaces and dashes), whichever is
    more."""
    data = _QUOTED.sub(b"", text.encode("utf-8", "surrogatepass"))
    codes = np.frombuffer(data, dtype=np.uint8)
    flow = int(np.cumsum(_OPEN[codes]).max(initial=0)) if len(codes) else 0
    # Leading spaces and "- " both open a block level ("- - - x" nests three lists).
    indent = max((len(line) - len(line.lstrip(" -")) for line in text.splitlines()), default=0)
    return max(flow, indent // 2)


def too_large(size: int) -> str | None:
    """What is wrong with a text or file of ``size`` characters or bytes, if anything."""
    if size <= MAX_TEXT_CHARACTERS:
        return None
    return (
        f"{size / 1_000_000:,.1f} MB, more than the {MAX_TEXT_MB} MB berth reads as one YAML or "
        "JSON file (write a larger workload as JSON Lines, .jsonl, or split it into files)"
    )


def _check_text(text: str) -> None:
    wrong = too_large(len(text))
    if wrong:
        raise DocumentError(wrong)
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise DocumentError(f"nested {depth} levels deep (at most {MAX_DEPTH} are read)")


def load_yaml(text: str) -> list[Any]:
    """Every document of a YAML stream (``---`` separated), None for empty ones.

    A text that is JSON is read as JSON, as kubectl reads it: the JSON decoder is a hundred
    times faster than PyYAML on it, and JSON's numbers are JSON's (PyYAML reads ``1e3`` as a
    string)."""
    _check_text(text)
    if text.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(text, object_pairs_hook=_unique_pairs)
        except json.JSONDecodeError as exc:
            # YAML's flow style (``{a: 1}``) stops the JSON decoder at once; a text that was
            # JSON for its first 64 KB is broken JSON, and PyYAML would take minutes to say so
            # on a large one.
            if exc.pos > _JSON_FOR_SURE:
                raise _json_problem(exc) from None
        except DocumentError:
            pass  # a repeated key: PyYAML names its line
        else:
            return [value]
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        raise DocumentError(yaml_error_message(exc, text)) from None


def load_one_yaml(text: str) -> Any:
    """A single YAML document (a configuration); an empty text is None."""
    documents = load_yaml(text)
    if len(documents) > 1:
        raise DocumentError(f"expected one YAML document (got {len(documents)})")
    return documents[0] if documents else None


#: Files larger than this are not looked at by ``is_empty_file``: nothing that size is empty
#: but a file of comments, which its reader refuses in its own words.
_EMPTY_AT_MOST = 65_536


def is_empty_file(path: str | Path) -> bool:
    """Whether the file at ``path`` holds nothing: no text, only comments and ``---``, or one
    empty mapping (False when it cannot be read or parsed: its reader says why)."""
    try:
        if Path(path).stat().st_size > _EMPTY_AT_MOST:
            return False
        documents = load_yaml(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, DocumentError):
        return False
    return all(document is None or document == {} for document in documents)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DocumentError(f"duplicate key {json.dumps(key)}")
        result[key] = value
    return result


def load_json(text: str, one_line: bool = False) -> Any:
    """One JSON value. ``one_line``: the text is a line of a JSON Lines file, whose caller names
    the line, so positions are columns only."""
    _check_text(text)
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except json.JSONDecodeError as exc:
        raise _json_problem(exc, one_line) from None
    except DocumentError as exc:
        raise DocumentError(f"invalid JSON: {exc}") from None


def _json_problem(exc: json.JSONDecodeError, one_line: bool = False) -> DocumentError:
    at = f"column {exc.colno}" if one_line else f"line {exc.lineno}, column {exc.colno}"
    return DocumentError(f"invalid JSON at {at}: {exc.msg}")
