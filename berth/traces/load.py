"""A load curve from a request trace: requests and tokens per second over fixed time bins.

Inference services are sized by their load, not by a list of jobs: the curve is what an
autoscaler reads (replicas = ceil(requests per second / capacity per replica)). Built in one
streaming pass, so an arbitrarily long request log costs one array per bin.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from berth.traces.errors import TraceError, TraceLog
from berth.traces.loader import iter_load
from berth.traces.model import TraceOptions


@dataclass(frozen=True)
class LoadCurve:
    """Per bin of ``bin_seconds`` starting at ``start + i × bin_seconds``: mean requests and
    tokens (context + generated) per second."""

    bin_seconds: float
    requests: np.ndarray
    tokens: np.ndarray
    total_requests: int

    @property
    def span(self) -> float:
        return len(self.requests) * self.bin_seconds

    def at(self, seconds: float) -> float:
        """Requests per second at ``seconds`` after the start, the curve repeating after its
        span (a one-hour trace stands for every hour)."""
        index = int((seconds % self.span) // self.bin_seconds)
        return float(self.requests[index])


def load_curve(
    path: str | Path,
    fmt: str | None = None,
    bin_seconds: float = 60.0,
    options: TraceOptions | None = None,
) -> tuple[LoadCurve, TraceLog]:
    """The curve of a load trace, and the log of its rows."""
    if not bin_seconds > 0:
        raise TraceError(f"bin width must be > 0 seconds (got {bin_seconds:g})")
    times: list[float] = []
    tokens: list[int] = []
    stream = iter_load(path, fmt, options)
    for request in stream:
        times.append(request.time)
        tokens.append(request.context_tokens + request.generated_tokens)
    at = np.asarray(times)
    bins = (at // bin_seconds).astype(np.int64)
    bins -= bins.min()
    count = int(bins.max()) + 1
    requests = np.bincount(bins, minlength=count) / bin_seconds
    weights = np.bincount(bins, weights=np.asarray(tokens, dtype=np.float64), minlength=count)
    return LoadCurve(bin_seconds, requests, weights / bin_seconds, len(times)), stream.log


def write_curve(path: str | Path, curve: LoadCurve) -> None:
    """The curve as CSV ``time,requests_per_second,tokens_per_second`` (time = bin start)."""
    with open(path, "w", encoding="utf-8") as out:
        out.write("time,requests_per_second,tokens_per_second\n")
        for index, (requests, tokens) in enumerate(zip(curve.requests, curve.tokens, strict=True)):
            out.write(f"{index * curve.bin_seconds:g},{requests:g},{tokens:g}\n")
