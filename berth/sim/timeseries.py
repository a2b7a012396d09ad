"""Cluster state sampled at fixed simulated intervals, as the simulator runs
(``berth.metrics`` summarises it and writes it out).

A 60-day trace sampled every minute is ~86k samples; keeping them as numpy rows grown by doubling
costs a few MB where a list of dicts would cost hundreds, and the summary and the plots need
column arrays anyway.
"""

from __future__ import annotations

import numpy as np

from berth.resources import GPU, PODS

_INITIAL_CAPACITY = 256


def column_name(resource: str) -> str:
    """A CSV-header-safe resource name: ``gpu`` for the GPU, ``/`` and ``.`` folded to ``_``."""
    if resource == GPU:
        return "gpu"
    return resource.replace("/", "_").replace(".", "_")


def _readonly(array: np.ndarray) -> np.ndarray:
    """Callers get views of the live buffers; freezing them keeps history from being edited."""
    view = array.view()
    view.flags.writeable = False
    return view


class TimeSeries:
    """Samples of cluster state at fixed simulated intervals."""

    def __init__(
        self,
        resources: list[str],
        queues: list[str] | None = None,
        queue_weights: dict[str, float] | None = None,
    ) -> None:
        self.resources: list[str] = list(resources)
        #: Queue weights for the fairness index (a queue not listed weighs 1).
        self.queue_weights = dict(queue_weights or {})
        columns = [column_name(r) for r in self.resources]
        if len(set(columns)) != len(columns):
            raise ValueError(f"resources {self.resources} collide as CSV columns {columns}")
        self._queue_index: dict[str, int] = {q: i for i, q in enumerate(queues or [])}
        self._size = 0
        n_res = len(self.resources)
        self._times = np.zeros(_INITIAL_CAPACITY, dtype=np.float64)
        self._pending = np.zeros(_INITIAL_CAPACITY, dtype=np.int64)
        self._running = np.zeros(_INITIAL_CAPACITY, dtype=np.int64)
        self._allocated = np.zeros((_INITIAL_CAPACITY, n_res), dtype=np.float64)
        self._used = np.zeros((_INITIAL_CAPACITY, n_res), dtype=np.float64)
        self._capacity = np.zeros((_INITIAL_CAPACITY, n_res), dtype=np.float64)
        self._stranded = np.zeros((_INITIAL_CAPACITY, n_res), dtype=np.float64)
        self._gpu_fragmented = np.zeros(_INITIAL_CAPACITY, dtype=np.float64)
        self._queue_allocated = np.zeros(
            (_INITIAL_CAPACITY, len(self._queue_index), n_res), dtype=np.float64
        )
        #: Named columns a simulation feature adds (capacity loaning's pools), in first-seen
        #: order, zero before their first sample.
        self._extras: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self._size

    def sample(
        self,
        time: float,
        pending: int,
        running: int,
        allocated: np.ndarray,
        used: np.ndarray,
        capacity: np.ndarray,
        queue_allocated: dict[str, np.ndarray] | None = None,
        stranded: np.ndarray | None = None,
        gpu_fragmented: float = 0.0,
        extras: dict[str, float] | None = None,
    ) -> None:
        """Record one sample; it stands for the cluster until the next one (or the run's end).

        ``stranded`` is the free capacity sitting on partly allocated nodes (fragmentation);
        ``gpu_fragmented`` the idle milli-GPU the workload's typical pods cannot use
        (``berth.cluster.fragmentation``).

        Vectors follow the engine's resource axis, which may have grown past ``resources`` (extra
        entries are dropped) or, for vectors built before it grew, be shorter (zero-padded).
        Queues not named at construction are added on first sight, zero before that; so are
        ``extras`` columns.
        """
        if self._size and time < self._times[self._size - 1]:
            raise ValueError(
                f"sample at t={time} is earlier than the previous one "
                f"(t={self._times[self._size - 1]})"
            )
        if self._size == len(self._times):
            self._grow()
        row = self._size
        self._times[row] = time
        self._pending[row] = pending
        self._running[row] = running
        self._allocated[row] = self._fit(allocated)
        self._used[row] = self._fit(used)
        self._capacity[row] = self._fit(capacity)
        self._stranded[row] = 0.0 if stranded is None else self._fit(stranded)
        self._gpu_fragmented[row] = gpu_fragmented
        for queue, vector in (queue_allocated or {}).items():
            column = self._queue_column(queue)  # may replace the array: look it up afterwards
            self._queue_allocated[row, column] = self._fit(vector)
        for name, value in (extras or {}).items():
            if name not in self._extras:
                self._extras[name] = np.zeros(len(self._times), dtype=np.float64)
            self._extras[name][row] = value
        self._size += 1

    def _fit(self, vector: np.ndarray) -> np.ndarray:
        n_res = len(self.resources)
        values = np.asarray(vector, dtype=np.float64)[:n_res]
        if len(values) < n_res:
            values = np.pad(values, (0, n_res - len(values)))
        return values

    def _queue_column(self, queue: str) -> int:
        column = self._queue_index.get(queue)
        if column is None:
            column = len(self._queue_index)
            self._queue_index[queue] = column
            extra = np.zeros((len(self._times), 1, len(self.resources)), dtype=np.float64)
            self._queue_allocated = np.concatenate([self._queue_allocated, extra], axis=1)
        return column

    def _grow(self) -> None:
        capacity = 2 * len(self._times)

        def grown(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
            bigger[: len(array)] = array
            return bigger

        self._times = grown(self._times)
        self._pending = grown(self._pending)
        self._running = grown(self._running)
        self._allocated = grown(self._allocated)
        self._used = grown(self._used)
        self._capacity = grown(self._capacity)
        self._stranded = grown(self._stranded)
        self._gpu_fragmented = grown(self._gpu_fragmented)
        self._queue_allocated = grown(self._queue_allocated)
        self._extras = {name: grown(column) for name, column in self._extras.items()}

    @property
    def times(self) -> np.ndarray:
        """Sample times in simulated seconds, shape (T,)."""
        return _readonly(self._times[: self._size])

    @property
    def pending(self) -> np.ndarray:
        """Pending pod count per sample, shape (T,)."""
        return _readonly(self._pending[: self._size])

    @property
    def running(self) -> np.ndarray:
        """Running pod count per sample, shape (T,)."""
        return _readonly(self._running[: self._size])

    @property
    def allocated(self) -> np.ndarray:
        """Requests of placed pods, shape (T, R), canonical units."""
        return _readonly(self._allocated[: self._size])

    @property
    def used(self) -> np.ndarray:
        """Simulated usage, shape (T, R), canonical units (may be fractional)."""
        return _readonly(self._used[: self._size])

    @property
    def capacity(self) -> np.ndarray:
        """Allocatable of schedulable nodes, shape (T, R), canonical units."""
        return _readonly(self._capacity[: self._size])

    @property
    def stranded(self) -> np.ndarray:
        """Free capacity on partly allocated nodes per sample and resource, shape (T, R)."""
        return _readonly(self._stranded[: self._size])

    @property
    def gpu_fragmented(self) -> np.ndarray:
        """Idle milli-GPU the workload's typical pods cannot use, per sample, shape (T,)."""
        return _readonly(self._gpu_fragmented[: self._size])

    @property
    def extras(self) -> list[str]:
        """Names of the extra columns, in first-seen order."""
        return list(self._extras)

    def extra(self, name: str) -> np.ndarray:
        """One extra column, shape (T,); zeros for a name never sampled."""
        column = self._extras.get(name)
        if column is None:
            return np.zeros(self._size, dtype=np.float64)
        return _readonly(column[: self._size])

    @property
    def queues(self) -> list[str]:
        """Queues with a per-queue allocation column, in first-seen order."""
        return list(self._queue_index)

    def queue_allocated(self, queue: str) -> np.ndarray:
        """Allocation of one queue, shape (T, R); zeros for a queue never sampled."""
        column = self._queue_index.get(queue)
        if column is None:
            return np.zeros((self._size, len(self.resources)), dtype=np.float64)
        return _readonly(self._queue_allocated[: self._size, column])

    def queue_shares(self) -> np.ndarray:
        """Each queue's dominant share per sample, shape (T, Q) in ``queues`` order: the largest
        fraction of cluster capacity it holds in any resource (the pod count left out)."""
        capacity = self._capacity[: self._size]
        held = self._queue_allocated[: self._size]
        counted = np.array([r != PODS for r in self.resources], dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            fractions = np.where(capacity[:, None, :] > 0, held / capacity[:, None, :], 0.0)
        if not counted.any() or not fractions.shape[1]:
            return np.zeros((self._size, fractions.shape[1]))
        return fractions[:, :, counted].max(axis=2)

    def fairness(self) -> np.ndarray:
        """Jain's index per sample over the queues holding resources, of their dominant shares
        divided by their weights: 1 when every active queue has its weighted share, 1/n when
        one of n queues has everything. 1 when fewer than two queues hold anything."""
        shares = self.queue_shares()
        weights = np.array([self.queue_weights.get(q, 1.0) for q in self.queues], dtype=float)
        x = shares / np.maximum(weights, 1e-12) if len(weights) else shares
        active = shares > 0
        n = active.sum(axis=1)
        total = np.where(active, x, 0.0).sum(axis=1)
        squares = np.where(active, x * x, 0.0).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            index = np.where(n >= 2, total * total / (n * squares), 1.0)
        return np.nan_to_num(index, nan=1.0)
