"""The ``simulation`` section of the scheduler configuration: latencies of the node agent
model, time-series sampling and node failures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from berth.api.objects import Node, Pod


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
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise SimConfigError(f"{source}: {where}: expected seconds >= 0 (got {value!r})")
    return float(value)


_KEYS = ("startLatency", "restartLatency", "sampleInterval", "nodeFailures", "loaning")


@dataclass(slots=True, frozen=True)
class LoaningConfig:
    """Capacity loaning between an inference pool and training (``berth.sim.loaning``)."""

    pool_label: str = "berth.io/pool"  # the label (and taint key) that names a node's pool
    inference_pool: str = "inference"  # its value on inference nodes
    lent_pool: str = "lent"  # its value on an inference node while lent to training
    idle_before_lend: float = 600.0  # seconds without inference pods before a node is lent
    check_interval: float = 30.0  # seconds between idle checks
    #: Seconds an inference pod may wait for a server taken back from training: stated, then
    #: measured (summary.json's loaning.inference_wait).
    wait_bound: float = 60.0


_LOANING_KEYS = {
    "poolLabel": "pool_label",
    "inferencePool": "inference_pool",
    "lentPool": "lent_pool",
    "idleBeforeLend": "idle_before_lend",
    "checkInterval": "check_interval",
    "waitBound": "wait_bound",
}


def _loaning(raw: Any, source: str) -> LoaningConfig | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SimConfigError(f"{source}: simulation.loaning: expected a mapping")
    unknown = sorted(set(raw) - set(_LOANING_KEYS))
    if unknown:
        raise SimConfigError(
            f"{source}: simulation.loaning.{unknown[0]}: unknown field "
            f"(expected {', '.join(_LOANING_KEYS)})"
        )
    values: dict[str, Any] = {}
    for key, attr in _LOANING_KEYS.items():
        if key not in raw:
            continue
        where = f"simulation.loaning.{key}"
        if attr.endswith("pool") or attr == "pool_label":
            if not isinstance(raw[key], str) or not raw[key]:
                raise SimConfigError(f"{source}: {where}: expected a non-empty string")
            values[attr] = raw[key]
        else:
            values[attr] = _seconds(raw[key], where, source)
    config = LoaningConfig(**values)
    if config.check_interval <= 0:
        raise SimConfigError(f"{source}: simulation.loaning.checkInterval: expected seconds > 0")
    if config.lent_pool == config.inference_pool:
        raise SimConfigError(
            f"{source}: simulation.loaning.lentPool: must differ from inferencePool "
            f"({config.inference_pool!r})"
        )
    return config


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
    loaning: LoaningConfig | None = None  # None: no capacity loaning
    source: str = "-"  # the configuration file, for errors found once the cluster is known

    @classmethod
    def from_raw(cls, raw: dict[str, Any], source: str) -> SimConfig:
        unknown = sorted(set(raw) - set(_KEYS))
        if unknown:
            raise SimConfigError(
                f"{source}: simulation.{unknown[0]}: unknown field (expected {', '.join(_KEYS)})"
            )
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
        config.loaning = _loaning(raw.get("loaning"), source)
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
        if not isinstance(item, dict):
            raise SimConfigError(f"{source}: {where}: expected a mapping with node and at")
        unknown = set(item) - {"node", "at", "recoverAfter"}
        if unknown:
            raise SimConfigError(
                f"{source}: {where}.{sorted(unknown)[0]}: unknown field "
                "(expected node, at, recoverAfter)"
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
