"""The built-in daily load shapes (``berth.api.load_curves.BUILTIN_SHAPES``) from the request
trace they come from.

The Azure LLM inference files cover one hour each. Their request arrivals are counted in
``bins`` equal bins over the span from the first request (time 0) to the last, the last
request falling in the last bin, and each bin's count divided by its width gives its mean rate
in requests per second; bin i becomes hour i of the built-in day.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from berth.traces.loader import iter_load


def daily_shape(path: str | Path, bins: int = 24) -> tuple[float, ...]:
    """Mean requests per second of each of ``bins`` equal slices of the trace's span, rounded
    to three decimals as the built-in table keeps them."""
    times = np.fromiter((request.time for request in iter_load(path)), dtype=np.float64)
    span = float(times.max())
    counts, _ = np.histogram(times, bins=bins, range=(0.0, span))
    return tuple(round(float(rate), 3) for rate in counts / (span / bins))
