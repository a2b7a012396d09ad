"""examples/policies/compare-cluster04.sh's comparison, through the CLI, on a small ITP-form
trace: paper.html has one row per policy of the script, and each row's numbers are those of
the policy's own ``berth simulate`` summary on the same inputs."""

from __future__ import annotations

import json
import random
import shlex
from html.parser import HTMLParser
from pathlib import Path

from berth.cli import main
from berth.compare import config_names
from berth.report.paper import COLUMNS, cell
from berth.resources import GPU

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "policies" / "compare-cluster04.sh"
#: Page column: where the same figure is in a run's summary.json.
SUMMARY = {
    "jobs completed": ("jobs", "completed"),
    "mean JCT (h)": ("jct", "mean"),
    "p95 JCT (h)": ("jct", "p95"),
    "mean queueing (s)": ("queueing_delay", "mean"),
    "pods preempted": ("evictions", "preempted"),
    "deadlines met": ("deadlines", "met"),
    "met, share": ("deadlines", "met_share"),
    "deadlines missed": ("deadlines", "missed"),
    "jobs dropped": ("deadlines", "dropped"),
    "GPU utilization": ("utilization", GPU),
}
FORMS = {heading: form for heading, _, form in COLUMNS}


def script_configs() -> list[str]:
    """The --config values of the shipped script, as paths from the project root."""
    words = shlex.split(SCRIPT.read_text().replace("\\\n", " "), comments=True)
    return [words[k + 1] for k, word in enumerate(words) if word == "--config"]


def small_trace(path: Path) -> Path:
    """40 jobs in the ITP columns, a few hours apart, of 1 to 16 GPUs: enough contention for
    the policies to differ (preemptions, missed and dropped deadlines)."""
    draw = random.Random(24)
    lines = ["job_id,submission_time,duration,num_gpu"]
    for k in range(40):
        gpus = draw.choice([1, 1, 2, 4, 8, 16])
        lines.append(f"j{k},{k * 600},{draw.randint(300, 30000)},{gpus}")
    path.write_text("\n".join(lines) + "\n")
    return path


class _Rows(HTMLParser):
    """The cells of every table row of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _value(summary: dict, path: tuple[str, ...]) -> float:
    for key in path:
        summary = summary[key]
    return float(summary)


def test_script_names_every_policy_and_its_files_exist():
    configs = script_configs()
    assert config_names(configs) == [
        "default",
        "tiresias",
        "sjf",
        "srtf",
        "edf",
        "elasticflow",
        "themis",
        "gandiva",
        "gang-drf",
    ]
    for config in configs[1:]:
        assert (ROOT / config).is_file(), config


def test_paper_page_matches_each_policys_own_simulate(tmp_path, capsys):
    trace = small_trace(tmp_path / "trace.csv")
    inputs = ["--trace", str(trace), "--cluster-from-trace", "--deadlines", "0.5:1.5"]
    configs = [c if c == "default" else str(ROOT / c) for c in script_configs()]
    argv = ["compare", *inputs, "--seed", "0", "--jobs", "1", "--out", str(tmp_path / "cmp")]
    assert main([*argv, *(w for c in configs for w in ("--config", c))]) == 0
    parser = _Rows()
    parser.feed((tmp_path / "cmp" / "paper.html").read_text())
    header, *rows = parser.rows
    assert header == ["policy", *SUMMARY]
    names = config_names(configs)
    assert [row[0] for row in rows] == names
    assert (tmp_path / "cmp" / "paper_cdf.png").stat().st_size > 0
    preempted = dropped = 0
    for name, config, row in zip(names, configs, rows, strict=True):
        out = tmp_path / f"sim-{name}"
        simulate = ["simulate", *inputs, "--seed", "0", "--config", config, "--out", str(out)]
        assert main([*simulate, "--quiet"]) == 0
        summary = json.loads((out / "summary.json").read_text())
        expected = [cell(FORMS[h], _value(summary, path)) for h, path in SUMMARY.items()]
        assert row[1:] == expected, name
        preempted += summary["evictions"]["preempted"]
        dropped += summary["deadlines"]["dropped"]
    # The slice makes the policies differ where the page has columns for it.
    assert preempted > 0 and dropped > 0
    assert len({tuple(row[1:4]) for row in rows}) > 3
