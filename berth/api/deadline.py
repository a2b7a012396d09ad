"""A job's deadline: the ``berth.io/deadline`` annotation (on a Volcano Job, a PodGroup, or a
pod without a group), the simulated second by which it should complete, counted from the
start of the run as ``berth.io/submit-time`` is. Deadline-aware policies (``edf``,
``elasticflow``) order and admit by it; jobs.csv and the summary say which jobs met it."""

from __future__ import annotations

import math
from collections.abc import Mapping

DEADLINE_ANNOTATION = "berth.io/deadline"
#: How a job refused by a deadline-aware admission test is told apart in jobs.csv.
DROPPED_REASON = "dropped: its deadline cannot be met"


def deadline_of(annotations: Mapping[str, str]) -> float | None:
    """The deadline in seconds, or None without one (or with one that is not a finite number
    >= 0: manifest validation reports those)."""
    text = annotations.get(DEADLINE_ANNOTATION)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


class Deadlines:
    """Jobs' deadlines by job key, read once each (a job's annotations do not change);
    infinity for a job without one, so that it orders after every job with one."""

    def __init__(self) -> None:
        self._by_key: dict[str, float] = {}

    def of(self, key: str, annotations: Mapping[str, str]) -> float:
        value = self._by_key.get(key)
        if value is None:
            found = deadline_of(annotations)
            value = self._by_key[key] = math.inf if found is None else found
        return value


def deadline_problem(annotations: Mapping[str, str]) -> str | None:
    """Why the annotation is not a deadline, or None (absent or valid)."""
    text = annotations.get(DEADLINE_ANNOTATION)
    if text is None or deadline_of(annotations) is not None:
        return None
    return f"{text!r} is not a deadline (expected seconds >= 0 from the start of the run)"
