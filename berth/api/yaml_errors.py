"""One-line YAML error messages with a line and column, for manifests and configurations."""

from __future__ import annotations

import yaml


def yaml_error_message(exc: yaml.YAMLError, text: str) -> str:
    """ "invalid YAML at line L, column C: what" for every kind of PyYAML error.

    Syntax errors carry a mark; a bad character (ReaderError) only carries an offset into the
    text, which is turned into a line here. PyYAML's own rendering spans several lines.
    """
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "syntax error"
        if mark is not None:
            return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {what}"
        return f"invalid YAML: {what}"
    if isinstance(exc, yaml.reader.ReaderError):
        before = text[: exc.position]
        line = before.count("\n") + 1
        column = exc.position - (before.rfind("\n") + 1) + 1
        char = exc.character
        shown = f"#x{char:04x}" if isinstance(char, int) else repr(char)
        return f"invalid YAML at line {line}, column {column}: character {shown} is not allowed"
    return "invalid YAML: " + " ".join(str(exc).split())
