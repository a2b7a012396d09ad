"""The ``simulation`` section of the scheduler configuration: latencies of the node agent
model, time-series sampling, node failures, colocation, capacity loaning, the scaling
policy of elastic jobs and what preempted jobs keep."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from berth.api.objects import Node, Pod
from berth.controllers.colocation_config import ColocationConfig, ColocationConfigError
from berth.controllers.loaning_config import LoaningConfig, LoaningConfigError
from berth.controllers.scaling.config import ScalingConfig, ScalingConfigError
from berth.durations import non_negative
from berth.sections import section
from berth.sim.preemption_config import PreemptionConfig, PreemptionConfigError


class SimConfigError(ValueError):
    """A bad ``simulation`` section in the configuration."""


@dataclass(slots=True, frozen=True)
class NodeFailure:
    """A node lost at ``at``: its pods are evicted and it takes no pods until it recovers
    ``recover_after`` seconds later (never, if None)."""

    node: str
    at: float
    recover_after: float | None = None


def _seconds(value: Any, where: str, source: str) -> float:
    if not non_negative(value):
        raise SimConfigError(f"{source}: {where}: expected seconds >= 0 (got {value!r})")
    return float(value)


_KEYS = (
    "startLatency",
    "restartLatency",
    "sampleInterval",
    "nodeFailures",
    "colocation",
    "loaning",
    "scaling",
    "preemption",
)


@dataclass(slots=True)
class SimConfig:
    start_latency: float = 1.0  # seconds from bind to container start
    #: Seconds an in-place update keeps a pod unavailable: pulling the new image and starting
    #: the containers again. None: the start latency.
    restart_latency: float | None = None
    #: Seconds between time-series samples; None: 60 s, stretched so a long trace yields
    #: about MAX_SAMPLES samples rather than one a minute for months.
    sample_interval: float | None = None
    node_failures: tuple[NodeFailure, ...] = ()
    #: Usage reports, batch resources and BE protection (None: requests-only accounting).
    colocation: ColocationConfig | None = None
    loaning: LoaningConfig | None = None  # None: no capacity loaning
    scaling: ScalingConfig | None = None  # None: elastic jobs grow first come first served
    #: Evicted plain pods come back with the work they keep (None: evictions are final).
    preemption: PreemptionConfig | None = None
    source: str = "-"  # the configuration file, for errors found once the cluster is known

    @classmethod
    def from_raw(cls, raw: dict[str, Any], source: str) -> SimConfig:
        section(raw, f"{source}: simulation", _KEYS, SimConfigError)
        config = cls(source=source)
        for key, attr in (
            ("startLatency", "start_latency"),
            ("restartLatency", "restart_latency"),
            ("sampleInterval", "sample_interval"),
        ):
            if key in raw:
                setattr(config, attr, _seconds(raw[key], f"simulation.{key}", source))
        if config.sample_interval is not None and config.sample_interval <= 0:
            raise SimConfigError(f"{source}: simulation.sampleInterval: expected seconds > 0")
        config.node_failures = _node_failures(raw.get("nodeFailures", []), source)
        if "colocation" in raw:
            try:
                config.colocation = ColocationConfig.from_raw(raw["colocation"], source)
            except ColocationConfigError as exc:
                raise SimConfigError(str(exc)) from None
        if "loaning" in raw:
            try:
                config.loaning = LoaningConfig.from_raw(raw["loaning"], source)
            except LoaningConfigError as exc:
                raise SimConfigError(str(exc)) from None
        if "scaling" in raw:
            try:
                config.scaling = ScalingConfig.from_raw(raw["scaling"], source)
            except ScalingConfigError as exc:
                raise SimConfigError(str(exc)) from None
        if "preemption" in raw:
            try:
                config.preemption = PreemptionConfig.from_raw(raw["preemption"], source)
            except PreemptionConfigError as exc:
                raise SimConfigError(str(exc)) from None
        return config

    @property
    def restart(self) -> float:
        """Seconds an in-place restart takes."""
        return self.start_latency if self.restart_latency is None else self.restart_latency

    def check_loaning(self, nodes: list[Node], period: float) -> None:
        """Loaning needs inference nodes, and a wait bound the scheduler can keep: a pod
        waits up to one period for the session that finds no room, then one more for the
        session after the reclaim."""
        loaning = self.loaning
        if loaning is None:
            return
        where = f"{self.source}: simulation.loaning"
        if not any(n.labels.get(loaning.pool_label) == loaning.inference_pool for n in nodes):
            raise SimConfigError(
                f"{where}: no node labelled {loaning.pool_label}={loaning.inference_pool} "
                "(expected the inference pool's nodes to carry it)"
            )
        if loaning.wait_bound < 2 * period:
            raise SimConfigError(
                f"{where}.waitBound: {loaning.wait_bound:g}s cannot be kept with a scheduling "
                f"period of {period:g}s (expected at least two periods, {2 * period:g}s)"
            )

    def check_nodes(self, names: set[str]) -> None:
        for index, failure in enumerate(self.node_failures):
            if failure.node not in names:
                raise SimConfigError(
                    f"{self.source}: simulation.nodeFailures[{index}].node: no node named "
                    f"{failure.node!r} in the cluster"
                )


def _node_failures(raw: Any, source: str) -> tuple[NodeFailure, ...]:
    if not isinstance(raw, list):
        raise SimConfigError(f"{source}: simulation.nodeFailures: expected a list")
    failures = []
    for index, item in enumerate(raw):
        where = f"simulation.nodeFailures[{index}]"
        known = ("node", "at", "recoverAfter")
        item = section(
            item, f"{source}: {where}", known, SimConfigError, "a mapping with node and at"
        )
        node = item.get("node")
        if not isinstance(node, str) or not node:
            raise SimConfigError(f"{source}: {where}.node: expected a node name")
        if "at" not in item:
            raise SimConfigError(f"{source}: {where}.at: field required (seconds)")
        at = _seconds(item["at"], f"{where}.at", source)
        recover = item.get("recoverAfter")
        if recover is not None:
            recover = _seconds(recover, f"{where}.recoverAfter", source)
        failures.append(NodeFailure(node, at, recover))
    return tuple(failures)


MIN_SAMPLE_INTERVAL = 60.0
MAX_SAMPLES = 5000


def expected_end(pods: list[Pod], until: float | None) -> float:
    """When a run should end: ``until``, else the latest submit time plus duration (a guess
    that waiting and controllers' pods made later can only push back)."""
    if until is not None:
        return until
    return max((p.submit_time + (p.duration or 0.0) for p in pods), default=0.0)


def sample_interval(pods: list[Pod], until: float | None) -> float:
    """60 s, or longer when the run's expected horizon would otherwise give more than
    MAX_SAMPLES samples."""
    return max(MIN_SAMPLE_INTERVAL, expected_end(pods, until) / MAX_SAMPLES)
