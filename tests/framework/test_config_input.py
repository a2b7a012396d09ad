"""Scheduler configuration files that are hostile or malformed: refused in one line, never a
traceback, a hang or a silent default."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.framework.config import ConfigError
from berth.framework.config_files import load_config

CASES = {
    "not UTF-8": (b"actions: \xff\xfe enqueue\n", "is not a UTF-8 text file (expected YAML)"),
    "duplicate key": (
        b"actions: enqueue\nactions: allocate\n",
        'invalid YAML at line 2, column 1: duplicate key "actions" (first at line 1)',
    ),
    "deep nesting": (b"tiers: " + b"[" * 50_000, "nested 50000 levels deep (at most 200 are read)"),
    "NaN period": (b"period: .nan\n", "period: expected seconds > 0 (got nan)"),
    "infinite period": (b"period: .inf\n", "period: expected seconds > 0 (got inf)"),
    "zero period": (b"period: 0\n", "period: expected seconds > 0 (got 0)"),
    "huge search number": (
        b"search: {minFeasibleNodes: " + b"9" * 400 + b"}\n",
        "search.minFeasibleNodes: expected a number (got 9999999999999999999999999999999999999...)",
    ),
    "NaN search percentage": (
        b"search: {percentageOfNodesToScore: .nan}\n",
        "search.percentageOfNodesToScore: expected a number (got nan)",
    ),
    "absurd minimum of feasible nodes": (
        b"search: {minFeasibleNodes: 1000000000000}\n",
        "search.minFeasibleNodes: expected 1 to 10^9",
    ),
    "two documents": (b"actions: enqueue\n---\nactions: allocate\n", "expected one YAML document"),
}


@pytest.mark.parametrize("text,message", CASES.values(), ids=CASES.keys())
def test_bad_configuration_files(tmp_path: Path, text: bytes, message: str) -> None:
    path = tmp_path / "conf.yaml"
    path.write_bytes(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)
