"""Which jobs of a trace to keep, and when they arrive: a time window, a sample, a speed-up.

These work on ``JobSpec``s, before any Pod exists, so cutting an hour out of a trace with
millions of pods costs a read of the file and nothing more.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from berth.traces.errors import TraceLog
from berth.traces.model import JobSpec


@dataclass(frozen=True)
class Selection:
    """Jobs submitted in ``[start, end)`` (trace seconds), at most ``sample`` of them chosen at
    random with ``seed``, submit times shifted so ``start`` is 0 and divided by ``speedup``.

    Jobs outside the window or the sample are counted in the log, never dropped silently.
    Traces with times before 0 (alibaba2017) need a negative ``start`` to keep those jobs.
    """

    start: float = 0.0
    end: float | None = None
    sample: int | None = None
    seed: int = 0
    speedup: float = 1.0

    def __post_init__(self) -> None:
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"the window end {self.end:g} must be after its start {self.start:g}")
        if self.sample is not None and self.sample < 1:
            raise ValueError("sample must be >= 1")
        if not self.speedup > 0:
            raise ValueError("speedup must be > 0")


def select(specs: Iterable[JobSpec], selection: Selection, log: TraceLog) -> Iterator[JobSpec]:
    chosen = _window(specs, selection, log)
    if selection.sample is not None:
        chosen = _sample(chosen, selection.sample, selection.seed, log)
    for spec in chosen:
        yield replace(spec, submit=(spec.submit - selection.start) / selection.speedup)


def _window(specs: Iterable[JobSpec], selection: Selection, log: TraceLog) -> Iterator[JobSpec]:
    for spec in specs:
        if spec.submit < selection.start:
            log.excluded[f"jobs submitted before the window start ({selection.start:g}s)"] += 1
        elif selection.end is not None and spec.submit >= selection.end:
            log.excluded[f"jobs submitted at or after the window end ({selection.end:g}s)"] += 1
        else:
            yield spec


def _sample(specs: Iterable[JobSpec], size: int, seed: int, log: TraceLog) -> Iterator[JobSpec]:
    """A uniform sample in one pass (reservoir sampling), in trace order; only ``size`` jobs are
    held, and the same input and seed always give the same sample."""
    rng = random.Random(seed)
    kept: list[tuple[int, JobSpec]] = []
    seen = 0
    for index, spec in enumerate(specs):
        seen = index + 1
        if index < size:
            kept.append((index, spec))
            continue
        slot = rng.randrange(seen)
        if slot < size:
            kept[slot] = (index, spec)
    if seen > size:
        log.excluded["jobs not in the sample"] += seen - size
    kept.sort(key=lambda pair: pair[0])
    return (spec for _, spec in kept)
