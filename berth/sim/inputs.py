"""What a simulation run is asked to run on: where its cluster and workload come from, as plain
paths and settings that a worker process can be handed and load itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from berth.defaults import DEFAULT_MAX_PODS
from berth.traces import Selection, TraceOptions
from berth.traces.deadlines import DeadlineRange
from berth.traces.elastic import ElasticRange


class InputError(ValueError):
    """Inputs that are individually valid but cannot make a run (e.g. no nodes)."""


@dataclass(frozen=True, slots=True)
class InputSpec:
    """Where a run's cluster and workload come from. Paths and settings only, so it is cheap to
    hand to a worker process, which loads the inputs itself."""

    cluster: str | None = None
    workloads: tuple[str, ...] = ()
    trace: str | None = None
    trace_format: str | None = None
    cluster_from_trace: bool = False
    trace_options: TraceOptions = field(default_factory=TraceOptions)
    selection: Selection | None = None  # which trace jobs to keep (None: all)
    elastic_fraction: float = 0.0  # share of multi-worker trace jobs made elastic
    elastic_range: ElasticRange = field(default_factory=ElasticRange)  # their workers
    deadlines: DeadlineRange | None = None  # deadlines drawn for trace jobs (None: none)
    max_pods: int = DEFAULT_MAX_PODS
    seed: int = 0
    until: float | None = None
    lenient: bool = False  # unknown fields in manifests are warnings (--unknown-fields warn)

    @property
    def builtin(self) -> bool:
        return self.cluster is None and not self.workloads and self.trace is None
