"""Deadlines drawn for trace jobs (``simulate --deadlines LOW:HIGH``): traces record no
deadlines, so deadline-aware policies are studied on deadlines drawn the way the ElasticFlow
artifact draws them for the ITP traces (``trace_generator/generate_trace_from_itp.py``):
submission + int(U(LOW, HIGH) × duration), LOW:HIGH 0.5:1.5 there.

The artifact draws from Python's unseeded module-level generator; berth draws from a
``random.Random`` seeded with the run's ``--seed``, one draw per job in trace order, so the
same trace, range and seed give the same deadlines on every run and machine.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from berth.api.deadline import DEADLINE_ANNOTATION
from berth.api.objects import BatchJob, PodGroup

#: The artifact's ``--min_ddl`` and ``--max_ddl`` defaults.
ARTIFACT_RANGE = (0.5, 1.5)


@dataclass(frozen=True, slots=True)
class DeadlineRange:
    """A deadline's distance from submission as multiples of the job's duration."""

    low: float = ARTIFACT_RANGE[0]
    high: float = ARTIFACT_RANGE[1]

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError(f"{self.low:g}:{self.high:g}: expected finite multiples")
        if not 0 <= self.low <= self.high:
            raise ValueError(f"{self.low:g}:{self.high:g}: expected 0 <= LOW <= HIGH")


def parse_range(text: str) -> DeadlineRange:
    """``LOW:HIGH``; ValueError says what is wrong."""
    low, colon, high = text.partition(":")
    try:
        values = float(low), float(high)
    except ValueError:
        values = None
    if not colon or values is None:
        raise ValueError(f"{text!r} is not LOW:HIGH (two numbers, e.g. 0.5:1.5)")
    return DeadlineRange(*values)


class DeadlineDraw:
    """Draws one deadline per job, in the order the jobs are given."""

    def __init__(self, span: DeadlineRange, seed: int) -> None:
        self.span = span
        self.rng = random.Random(seed)

    def deadline(self, submit: float, duration: float) -> int:
        factor = self.rng.uniform(self.span.low, self.span.high)
        return int(submit) + int(factor * duration)

    def annotate(self, group: PodGroup, duration: float | None, job: BatchJob | None) -> None:
        """Gives ``group`` (and the elastic Job made of it, if any) its deadline; a job without
        a duration gets none (and takes no draw, so the others' do not depend on it)."""
        if duration is None:
            return
        text = str(self.deadline(group.submit_time, duration))
        group.annotations[DEADLINE_ANNOTATION] = text
        if job is not None:
            job.annotations[DEADLINE_ANNOTATION] = text
