"""The ``simulation.preemption`` section: what a job the scheduler preempts keeps of its work
when it comes back (``berth.sim.requeue``). Present, it brings preempted plain pods back."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from berth.api.objects import Pod
from berth.durations import non_negative
from berth.sections import section

_WORK = ("keep", "restart")


class PreemptionConfigError(ValueError):
    """A bad ``simulation.preemption`` section."""


@dataclass(slots=True, frozen=True)
class PreemptionConfig:
    work: str = "keep"  # keep: resume from the last checkpoint; restart: from the start
    checkpoint_interval: float = 0.0  # seconds; 0: the work up to the eviction is kept
    restart_cost: float = 0.0  # seconds added to every resumed run

    @classmethod
    def from_raw(cls, raw: Any, source: str) -> PreemptionConfig:
        where = f"{source}: simulation.preemption"
        keys = {"work": "work", "checkpointInterval": "checkpoint_interval"}
        keys["restartCost"] = "restart_cost"
        raw = section(raw, where, keys, PreemptionConfigError)
        work = raw.get("work", "keep")
        if work not in _WORK:
            raise PreemptionConfigError(f"{where}.work: expected keep or restart (got {work!r})")
        values: dict[str, Any] = {"work": work}
        for key in ("checkpointInterval", "restartCost"):
            if key in raw:
                if not non_negative(raw[key]):
                    raise PreemptionConfigError(
                        f"{where}.{key}: expected seconds >= 0 (got {raw[key]!r})"
                    )
                values[keys[key]] = float(raw[key])
        return cls(**values)

    def remaining(self, pod: Pod, now: float) -> float:
        """What an evicted pod has left to run when it comes back."""
        duration = pod.duration or 0.0
        if pod.start_time is None:
            return duration
        ran = max(min(now - pod.start_time, duration), 0.0)
        if self.work == "restart":
            kept = 0.0
        elif self.checkpoint_interval > 0:
            kept = math.floor(ran / self.checkpoint_interval) * self.checkpoint_interval
        else:
            kept = ran
        return duration - kept + self.restart_cost
