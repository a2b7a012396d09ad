"""The ``simulation.colocation`` section: Koordinator's colocation strategy and node SLO
thresholds, under their Koordinator names (camelCase), with Koordinator's defaults.

Present (even empty), it turns on usage reports, batch resources, BE suppression and
eviction; absent, the simulation keeps requests-only accounting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from berth.cluster.batch import CPU_POLICIES, MEMORY_POLICIES, ReclaimPolicy
from berth.durations import non_negative
from berth.sections import section

#: key → (attribute, default); None defaults are switched off unless given.
_PERCENTS: dict[str, tuple[str, float | None]] = {
    "cpuReclaimThresholdPercent": ("cpu_reclaim_percent", 60.0),
    "memoryReclaimThresholdPercent": ("memory_reclaim_percent", 65.0),
    "batchCPUThresholdPercent": ("batch_cpu_threshold_percent", None),
    "batchMemoryThresholdPercent": ("batch_memory_threshold_percent", None),
}
_KEYS = (
    *_PERCENTS,
    "metricReportIntervalSeconds",
    "cpuCalculatePolicy",
    "memoryCalculatePolicy",
    "cpuSuppressThresholdPercent",
    "memoryEvictThresholdPercent",
    "memoryEvictLowerPercent",
    "cpuEvictBESatisfactionLowerPercent",
    "cpuEvictBESatisfactionUpperPercent",
    "sloCPUThresholdPercent",
)


class ColocationConfigError(ValueError):
    """A bad ``simulation.colocation`` section."""


@dataclass(slots=True, frozen=True)
class ColocationConfig:
    report_interval: float = 60.0
    reclaim: ReclaimPolicy = field(default_factory=ReclaimPolicy)
    #: BE pods together get at most capacity × this − what the others use (cpusuppress).
    cpu_suppress_percent: float = 65.0
    #: Node memory usage at which BE pods are evicted (memoryevict), and the level eviction
    #: brings it down to (default: 2 points below).
    memory_evict_percent: float = 70.0
    memory_evict_lower_percent: float = 68.0
    #: BE cpu satisfaction (suppressed limit ÷ BE cpu requests) below which BE pods are
    #: evicted until it reaches the upper mark (cpuevict); None: off, as in Koordinator.
    cpu_evict_lower_percent: float | None = None
    cpu_evict_upper_percent: float | None = None
    #: The online-SLO proxy counts online pod-time on nodes whose cpu usage is above this.
    slo_cpu_percent: float = 65.0

    @classmethod
    def from_raw(cls, raw: Any, source: str) -> ColocationConfig:
        where = "simulation.colocation"
        raw = section(
            {} if raw is None else raw, f"{source}: {where}", _KEYS, ColocationConfigError
        )

        def optional(key: str, top: float | None = None) -> float | None:
            return None if raw.get(key) is None else number(key, 0.0, top)

        def number(key: str, default: float, top: float | None = None) -> float:
            value = raw.get(key, default)
            if not non_negative(value):
                raise ColocationConfigError(f"{source}: {where}.{key}: expected a number >= 0")
            if top is not None and value > top:
                raise ColocationConfigError(f"{source}: {where}.{key}: expected at most {top:g}")
            return float(value)

        def policy(key: str, allowed: tuple[str, ...]) -> str:
            value = raw.get(key, allowed[0])
            if value not in allowed:
                raise ColocationConfigError(
                    f"{source}: {where}.{key}: {value!r} is not one of {', '.join(allowed)}"
                )
            return value

        reclaim = ReclaimPolicy(
            cpu_policy=policy("cpuCalculatePolicy", CPU_POLICIES),
            memory_policy=policy("memoryCalculatePolicy", MEMORY_POLICIES),
            **{
                attr: optional(key) if default is None else number(key, default)
                for key, (attr, default) in _PERCENTS.items()
            },
        )
        interval = number("metricReportIntervalSeconds", 60.0)
        if not interval:
            raise ColocationConfigError(
                f"{source}: {where}.metricReportIntervalSeconds: expected seconds > 0"
            )
        evict = number("memoryEvictThresholdPercent", 70.0, 100.0)
        lower = number("memoryEvictLowerPercent", evict - 2, 100.0)
        if lower >= evict:
            raise ColocationConfigError(
                f"{source}: {where}.memoryEvictLowerPercent: must be below "
                f"memoryEvictThresholdPercent ({evict:g})"
            )
        cpu_lower = optional("cpuEvictBESatisfactionLowerPercent", 100.0)
        cpu_upper = optional("cpuEvictBESatisfactionUpperPercent", 100.0)
        if cpu_lower is not None and (cpu_upper is None or cpu_lower >= cpu_upper):
            raise ColocationConfigError(
                f"{source}: {where}.cpuEvictBESatisfactionLowerPercent: needs "
                "cpuEvictBESatisfactionUpperPercent, and must be below it"
            )
        return cls(
            report_interval=interval,
            reclaim=reclaim,
            cpu_suppress_percent=number("cpuSuppressThresholdPercent", 65.0, 100.0),
            memory_evict_percent=evict,
            memory_evict_lower_percent=lower,
            cpu_evict_lower_percent=cpu_lower,
            cpu_evict_upper_percent=cpu_upper,
            slo_cpu_percent=number("sloCPUThresholdPercent", 65.0, 100.0),
        )
