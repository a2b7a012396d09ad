"""Running berth on hostile input, and what it must do with it whatever the input.

Every call goes through ``berth.cli.main`` in this process, under a deadline (a run that does
not finish is a hang, not a slow test), with its output captured. What is checked on every
outcome is the project's rule for bad input: exit 0 or the bad-input status, never a
traceback, never an exception out of ``main``, every message line short, and a failure that
says something.
"""

from __future__ import annotations

import io
import signal
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings

from berth.cli import main
from berth.input_failures import EXIT_INPUT

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

#: argparse's status for arguments it cannot parse (a usage error, also bad input).
EXIT_USAGE = 2
#: Longest message line accepted: a file, an object, a field and what was expected fit in it.
MAX_LINE = 500
#: Seconds a single command may take on these small inputs before it counts as a hang.
DEADLINE = 30.0


def hostile(examples: int) -> settings:
    """The settings of every generator here: ``examples`` cases, the same ones on every run (CI
    is deterministic), no per-example time limit (a whole simulation runs in one; hangs are
    caught by ``DEADLINE``), and function-scoped fixtures allowed (tmp_path only hands out
    fresh file names)."""
    return settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


class Hang(Exception):
    """A command still running at its deadline."""


@dataclass(frozen=True)
class Outcome:
    argv: tuple[str, ...]
    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def __str__(self) -> str:
        return f"berth {' '.join(self.argv)[:300]} -> {self.rc}\n{self.text[:2000]}"


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def berth(*argv: str | Path, deadline: float = DEADLINE) -> Outcome:
    """``berth ARGV`` in this process; fails the test on anything bad input must never cause."""
    words = tuple(str(word) for word in argv)
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with redirect_stdout(out), redirect_stderr(err), _deadline(deadline):
            try:
                rc = main(list(words))
            except SystemExit as exc:  # argparse refusing an argument
                rc = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    outcome = Outcome(words, rc, out.getvalue(), err.getvalue())
    check(outcome)
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not runtime, f"{outcome}\nwarned: {runtime[0].message}"
    return outcome


def check(outcome: Outcome) -> None:
    """What holds for every command on every input."""
    assert outcome.rc in (0, EXIT_INPUT, EXIT_USAGE), str(outcome)
    assert "Traceback" not in outcome.text, str(outcome)
    long = [line for line in outcome.text.splitlines() if len(line) > MAX_LINE]
    assert not long, f"{outcome}\nline of {len(long[0]):,} characters: {long[0][:200]}..."
    if outcome.rc != 0:
        assert outcome.text.strip(), f"{outcome}\nfailed without a word"


def refused(outcome: Outcome) -> bool:
    return outcome.rc in (EXIT_INPUT, EXIT_USAGE)
