"""The ``simulation.loaning`` section: capacity loaning between an inference pool and
training (``berth.sim.loaning``, docs/loaning.md). Present, it turns loaning on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from berth.api.keys import INFERENCE_POOL, LENT_POOL, POOL_LABEL
from berth.durations import non_negative
from berth.sections import section


class LoaningConfigError(ValueError):
    """A bad ``simulation.loaning`` section."""


@dataclass(slots=True, frozen=True)
class LoaningConfig:
    pool_label: str = POOL_LABEL  # the label (and taint key) that names a node's pool
    inference_pool: str = INFERENCE_POOL  # its value on inference nodes
    lent_pool: str = LENT_POOL  # its value on an inference node while lent to training
    idle_before_lend: float = 600.0  # seconds without inference pods before a node is lent
    check_interval: float = 30.0  # seconds between idle checks
    #: Seconds an inference pod may wait for a server taken back from training: stated, then
    #: measured (summary.json's loaning.inference_wait).
    wait_bound: float = 60.0
    #: Which training pods may run on lent nodes: ``all``, or ``elastic`` (only an elastic
    #: job's, which keeps its progress when a reclaim takes a worker: a rigid job restarts).
    lend_to: str = "all"
    #: How lent nodes are ranked when inference needs some back, cheapest first: ``jobs``
    #: (Aryl's: the share of each job stopped) or ``work`` (the GPU-seconds of work lost).
    reclaim_cost: str = "jobs"
    #: Whether a rigid job that a reclaim restarted may run on lent nodes again (``true``) or
    #: runs on the training pool's own nodes from then on (``false``, docs/loaning.md).
    relend_restarted: bool = True

    @classmethod
    def from_raw(cls, raw: Any, source: str) -> LoaningConfig:
        raw = section(raw, f"{source}: simulation.loaning", _KEYS, LoaningConfigError)
        values: dict[str, Any] = {}
        for key, attr in _KEYS.items():
            if key not in raw:
                continue
            value, where = raw[key], f"{source}: simulation.loaning.{key}"
            choices = _CHOICES.get(attr)
            if choices is not None:
                if value not in choices:
                    raise LoaningConfigError(
                        f"{where}: expected one of {', '.join(choices)} (got {value!r})"
                    )
                values[attr] = value
                continue
            if attr in _FLAGS:
                if not isinstance(value, bool):
                    raise LoaningConfigError(f"{where}: expected true or false (got {value!r})")
                values[attr] = value
                continue
            if attr in _NAMES:
                if not isinstance(value, str) or not value:
                    raise LoaningConfigError(f"{where}: expected a non-empty string")
            elif not non_negative(value):
                raise LoaningConfigError(f"{where}: expected seconds >= 0 (got {value!r})")
            values[attr] = value if attr in _NAMES else float(value)
        config = cls(**values)
        if config.check_interval <= 0:
            raise LoaningConfigError(
                f"{source}: simulation.loaning.checkInterval: expected seconds > 0"
            )
        if config.lent_pool == config.inference_pool:
            raise LoaningConfigError(
                f"{source}: simulation.loaning.lentPool: must differ from inferencePool "
                f"({config.inference_pool!r})"
            )
        return config


_KEYS = {
    "poolLabel": "pool_label",
    "inferencePool": "inference_pool",
    "lentPool": "lent_pool",
    "idleBeforeLend": "idle_before_lend",
    "checkInterval": "check_interval",
    "waitBound": "wait_bound",
    "lendTo": "lend_to",
    "reclaimCost": "reclaim_cost",
    "relendRestarted": "relend_restarted",
}
LEND_TO = ("all", "elastic")
RECLAIM_COSTS = ("jobs", "work")
_CHOICES = {"lend_to": LEND_TO, "reclaim_cost": RECLAIM_COSTS}
_NAMES = ("pool_label", "inference_pool", "lent_pool")
_FLAGS = ("relend_restarted",)
