"""Writing manifests as they are produced, so converting a large trace never holds it in memory.

The output format follows the file name: ``.yaml``/``.yml`` (documents separated by ``---``) or
``.jsonl`` (one object per line). The file appears only when everything is written: output goes
to a temporary file beside it that is renamed at the end, so a conversion that fails halfway (a
bad row) leaves no truncated workload behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import yaml

from berth.traces.errors import TraceError

_BASE_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SUFFIXES = (".yaml", ".yml", ".jsonl")


class _Dumper(_BASE_DUMPER):  # type: ignore[misc]
    """Plain documents: no ``&id001`` anchors even where two fields share one dict."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def write_manifests(path: str | Path, documents: Iterable[dict[str, Any]]) -> None:
    """Write ``documents`` to ``path``, pulling them one at a time."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in SUFFIXES:
        raise TraceError(f"{path}: unknown output type (expected a name ending in .yaml or .jsonl)")
    partial = target.with_name(f".{target.name}.partial")
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            if suffix == ".jsonl":
                _write_jsonl(handle, documents)
            else:
                yaml.dump_all(
                    documents,
                    handle,
                    Dumper=_Dumper,
                    sort_keys=False,
                    explicit_start=True,
                    allow_unicode=True,
                )
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _write_jsonl(handle: IO[str], documents: Iterable[dict[str, Any]]) -> None:
    for document in documents:
        handle.write(json.dumps(document, separators=(",", ":")))
        handle.write("\n")
