"""A scaling policy's settings: the simulator's ``simulation.scaling`` section
(``berth.sim.scaling``) and ``berth serve --scaling`` (``berth.k8s.scaling``); docs/elastic.md.
Present, it turns the policy on; without it elastic jobs take workers as the scheduler finds
room, first come first served."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from berth.controllers.scaling import POLICIES
from berth.defaults import EDL_MAX_LOAD, SCALING_INTERVAL, STARVATION_WAIT
from berth.sections import section


class ScalingConfigError(ValueError):
    """A bad ``simulation.scaling`` section."""


@dataclass(slots=True, frozen=True)
class ScalingConfig:
    policy: str
    interval: float = SCALING_INTERVAL  # seconds between the policy's rounds
    max_load_desired: float = EDL_MAX_LOAD  # edl: the load growth stays within
    #: Seconds a gang waits before elastic workers above their minimum are taken off to free
    #: whole servers for it (``berth.controllers.scaling.starvation``); inf: never. None (not
    #: set): ``STARVATION_WAIT`` with capacity loaning, where lent servers make the policies
    #: refill every gap, and never without it, as before the guard (``wait_with``).
    starvation_wait: float | None = None

    @classmethod
    def from_raw(cls, raw: Any, source: str) -> ScalingConfig:
        where = f"{source}: simulation.scaling"
        known = ("policy", "interval", "maxLoadDesired", "starvationWait")
        raw = section(raw, where, known, ScalingConfigError, "a mapping with a policy")
        policy = raw.get("policy")
        if policy not in POLICIES:
            raise ScalingConfigError(
                f"{where}.policy: {policy!r} is not a scaling policy (expected "
                f"{' or '.join(POLICIES)})"
            )
        interval = raw.get("interval", SCALING_INTERVAL)
        if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
            raise ScalingConfigError(f"{where}.interval: expected seconds > 0 (got {interval!r})")
        load = raw.get("maxLoadDesired", EDL_MAX_LOAD)
        if isinstance(load, bool) or not isinstance(load, int | float) or not 0 < load <= 1:
            raise ScalingConfigError(
                f"{where}.maxLoadDesired: expected a share in (0, 1] (got {load!r})"
            )
        wait = raw.get("starvationWait")
        if wait == "off" or wait is False:  # YAML reads a bare off as false
            wait = math.inf
        elif wait is not None and (
            isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0
        ):
            raise ScalingConfigError(
                f"{where}.starvationWait: expected seconds >= 0 or off (got {wait!r})"
            )
        return cls(policy, float(interval), float(load), None if wait is None else float(wait))

    def wait_with(self, loaning: bool) -> float:
        """Seconds a gang waits before the starvation guard frees servers for it (inf: never)."""
        if self.starvation_wait is not None:
            return self.starvation_wait
        return STARVATION_WAIT if loaning else math.inf
