"""Finding a node for a pod: filters as masks, scores as vectors, over all rows or a sample.

Full mode keeps, per equivalence class, the score of every node (-inf where infeasible) and
patches only the rows the change log says were touched since; a class whose plugins look beyond
a node's own row (spread skew, zone-level affinity) is rebuilt when anything changed and reused
when nothing did. Sampled mode follows kube-scheduler and Sigma: scan from a rotating (or
shuffled) start until enough feasible nodes are found, then score only those.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass

import numpy as np

from berth.api.objects import Pod
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass, class_key

#: Classes kept with their cached evaluation; older ones are recompiled on demand.
_CLASS_CACHE_SIZE = 512


@dataclass(slots=True)
class SearchConfig:
    mode: str = "full"  # full | sampled
    percentage: float = 0.0  # sampled: percent of nodes to find; 0 = adaptive formula
    min_feasible: int = 100
    shuffle: bool = True
    shuffle_max_allocation: float = 0.9  # above this cluster allocation the start only rotates


def sample_target(n: int, config: SearchConfig) -> int:
    """How many feasible nodes sampled mode looks for: max(100, n·max(50 − n/125, 5)/100)."""
    if config.percentage > 0:
        percent = config.percentage
    else:
        percent = max(50.0 - n / 125.0, 5.0)
    return min(n, max(1, config.min_feasible, int(n * percent / 100)))


def nodes_message(n: int, counts: Counter[str]) -> str:
    """ "0/N nodes available: 80 insufficient cpu, 3 node selector mismatch", most first."""
    parts = ", ".join(
        f"{count} {reason}"
        for reason, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )
    return f"0/{n} nodes available" + (f": {parts}" if parts else "")


class NodeSearch:
    def __init__(
        self,
        state: ClusterState,
        filters: list[Plugin],
        scorers: list[Plugin],
        config: SearchConfig | None = None,
        seed: int = 0,
    ) -> None:
        self.state = state
        self.filters = filters
        self.scorers = scorers
        self.config = config or SearchConfig()
        self.classes: OrderedDict[tuple, PodClass] = OrderedDict()
        self.next_start = 0
        self._rng = np.random.default_rng(seed)
        self._order: np.ndarray | None = None
        #: Whether a plugin's answers depend on what owns the pod (default spreading).
        self.owners_matter = any(p.classes_by_owner for p in filters + scorers)
        self.jobs_matter = any(p.classes_by_job for p in filters + scorers)

    # ------------------------------------------------------------------ classes

    def key(self, pod: Pod) -> tuple:
        """The pod's class key as ``compile`` works it out (valid while ``key_flags`` is)."""
        return class_key(pod, bool(self.state.carried), self.owners_matter, self.jobs_matter)

    def key_flags(self) -> bool:
        """What class keys depend on besides the pods: whether bound pods carry affinity terms
        (then pods' labels matter)."""
        return bool(self.state.carried)

    def compile(self, pod: Pod, key: tuple | None = None) -> PodClass:
        """The pod's class, compiled on first use; ``key``: its class key when the caller
        already has it."""
        state = self.state
        if key is None:
            key = class_key(pod, bool(state.carried), self.owners_matter, self.jobs_matter)
        cls = self.classes.get(key)
        if cls is not None and cls.epoch == state.structure_epoch:
            self.classes.move_to_end(key)
            return cls
        request = state.request_vector(pod.requests)
        cls = PodClass(
            key=key,
            pod=pod,
            request=request,
            nonzero=np.flatnonzero(request),
            scored_cpu_memory=pod.nonzero_requests or (int(request[0]), int(request[1])),
            gpu=state.gpu_ask(pod, request),
        )
        for plugin in dict.fromkeys(self.filters + self.scorers):
            plugin.prepare(cls, state)
        for plugin in self.filters:
            if plugin.relevant(cls, "filter"):
                (cls.local_filters if plugin.is_local(cls) else cls.global_filters).append(plugin)
        for plugin in self.scorers:
            if plugin.weight and plugin.relevant(cls, "score"):
                (cls.local_scorers if plugin.is_local(cls) else cls.global_scorers).append(plugin)
        cls.epoch = state.structure_epoch
        self.classes[key] = cls
        if len(self.classes) > _CLASS_CACHE_SIZE:
            self.classes.popitem(last=False)
        return cls

    # ------------------------------------------------------------------ evaluation

    def feasible(self, cls: PodClass, rows: Rows, filters: list[Plugin]) -> np.ndarray:
        """Indices (into the node rows) of the nodes in ``rows`` that pass ``filters``."""
        state = self.state
        mask = state.schedulable[rows]
        if isinstance(rows, slice):
            idx = np.flatnonzero(mask)
        else:
            idx = rows[mask]
        return self.narrow(cls, idx, filters)

    def narrow(self, cls: PodClass, idx: np.ndarray, filters: list[Plugin]) -> np.ndarray:
        state = self.state
        for plugin in filters:
            if not len(idx):
                break
            idx = idx[plugin.filter(cls, state, idx)]
        return idx

    def scores(
        self, cls: PodClass, idx: np.ndarray, scorers: list[Plugin], base: np.ndarray
    ) -> np.ndarray:
        """``base`` plus the weighted scores of ``scorers`` over the rows ``idx``."""
        state = self.state
        total = base
        cls.scratch.clear()
        for plugin in scorers:
            score = plugin.score(cls, state, idx)
            total = total + (score if plugin.weight == 1 else plugin.weight * score)
        return total

    def _rebuild(self, cls: PodClass) -> None:
        state = self.state
        total = np.full(state.n, -np.inf)
        idx = self.feasible(cls, slice(0, state.n), cls.local_filters)
        if len(idx):
            total[idx] = self.scores(cls, idx, cls.local_scorers, state.tiebreak[idx])
        cls.total = total
        cls.rows = state.n

    def _patch(self, cls: PodClass, rows: np.ndarray) -> None:
        assert cls.total is not None
        state = self.state
        cls.total[rows] = -np.inf
        idx = self.feasible(cls, rows, cls.local_filters)
        if len(idx):
            cls.total[idx] = self.scores(cls, idx, cls.local_scorers, state.tiebreak[idx])

    def evaluate(self, cls: PodClass) -> np.ndarray:
        """Local score per node for this class (-inf = infeasible), cached and patched."""
        state = self.state
        if not cls.cached_for(state):
            self._rebuild(cls)
        else:
            changed = state.changed_rows(cls.log_position)
            if changed is None:
                self._rebuild(cls)
            elif len(changed):
                self._patch(cls, changed)
        cls.log_position = state.log_position
        assert cls.total is not None
        return cls.total

    def fits_nowhere(self, cls: PodClass, ceiling: np.ndarray) -> bool:
        """Whether a filter of ``cls`` refuses it on every node, told from ``ceiling``, the
        most any node has free per resource (``Plugin.exceeds``), without a search."""
        state = self.state
        return any(p.exceeds(cls, state, ceiling) for p in cls.local_filters)

    def room(self, cls: PodClass) -> int | None:
        """The filters' tightest bound on how many pods of ``cls`` fit at once (None: none
        gives one)."""
        bounds = [b for p in cls.local_filters if (b := p.room(cls, self.state)) is not None]
        return min(bounds) if bounds else None

    def room_exact(self, cls: PodClass) -> bool:
        """Whether ``room`` is exactly how many pods of ``cls`` fit placed one by one: every
        filter the class has says its room is exact, and none looks beyond a node's row."""
        state = self.state
        return not cls.global_filters and all(p.room_exact(cls, state) for p in cls.local_filters)

    # ------------------------------------------------------------------ placement

    def place(self, cls: PodClass) -> int | None:
        """Best node row for one pod of ``cls``, or None if none is feasible."""
        if self.config.mode == "sampled" and self.state.n > self.config.min_feasible:
            return self._place_sampled(cls)
        base = self.evaluate(cls)
        if not len(base):
            return None
        if not cls.global_scorers and all(p.filters_in_one_pass for p in cls.global_filters):
            # Their verdicts on every row, views rather than gathers of the feasible ones,
            # allow the same best row (the lowest of the best) as narrowing those would.
            every = slice(0, len(base))
            for plugin in cls.global_filters:
                base = np.where(plugin.filter(cls, self.state, every), base, -np.inf)
            best = int(np.argmax(base))
            return best if base[best] > -np.inf else None
        # Plugins that look beyond a node's row run fresh, but only on the locally feasible.
        idx = self.narrow(cls, np.flatnonzero(base > -np.inf), cls.global_filters)
        if not len(idx):
            return None
        total = self.scores(cls, idx, cls.global_scorers, base[idx])
        return int(idx[int(np.argmax(total))])

    def _search_order(self, cls: PodClass) -> np.ndarray | None:
        """The shuffled node order, or None to walk rows in index order."""
        state = self.state
        pod = cls.pod
        if not self.config.shuffle or pod.node_name or pod.affinity.has_pod_terms:
            return None
        if pod.node_selector or pod.affinity.node_required:
            return None
        capacity = state.total_allocatable(cordoned=True)
        requested = state.requested[: state.n].sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(capacity > 0, requested / np.maximum(capacity, 1), 0.0)
        if fraction.max(initial=0.0) > self.config.shuffle_max_allocation:
            return None
        if self._order is None or len(self._order) != state.n:
            self._order = self._rng.permutation(state.n)
        return self._order

    def _place_sampled(self, cls: PodClass) -> int | None:
        state = self.state
        n = state.n
        target = sample_target(n, self.config)
        order = self._search_order(cls)
        start = self.next_start % n
        found: list[np.ndarray] = []
        have = examined = 0
        window = max(2 * target, 256)
        while examined < n and have < target:
            size = min(window, n - examined)
            positions = (start + examined + np.arange(size)) % n
            rows = positions if order is None else order[positions]
            idx = self.feasible(cls, rows, cls.filters)
            found.append(idx)
            have += len(idx)
            examined += size
        self.next_start = (start + examined) % n
        if not have:
            return None
        idx = np.concatenate(found)[:target]
        scores = self.scores(cls, idx, cls.scorers, self.state.tiebreak[idx])
        return int(idx[int(np.argmax(scores))])

    # ------------------------------------------------------------------ explanations

    def tally(self, cls: PodClass, remaining: np.ndarray) -> list[tuple[str, Counter[str], int]]:
        """Per filter of ``cls``, in order, the nodes it rejects among those still
        ``remaining`` (a mask over rows, cleared in place as nodes are rejected), by reason,
        and how many remain after it. A node counts under the first filter that rejects it,
        and there under each reason that filter gives (a node short of both cpu and memory
        counts for both, as kube-scheduler reports it)."""
        state = self.state
        tallies = []
        for plugin in cls.filters:
            counts: Counter[str] = Counter()
            rows = np.flatnonzero(remaining)
            if len(rows):
                refused = np.zeros(len(rows), dtype=bool)
                for reason, rejected in plugin.explain(cls, state, rows):
                    hits = int(np.count_nonzero(rejected))
                    if hits:
                        counts[reason] += hits
                        refused |= rejected
                remaining[rows[refused]] = False
            tallies.append((plugin.name, counts, int(np.count_nonzero(remaining))))
        return tallies

    def explain(self, cls: PodClass) -> str:
        """Why no node fits: "0/N nodes: 80 insufficient nvidia.com/gpu, 40 node selector
        mismatch". A node counts under the first filter that rejects it, and there under each
        reason that filter gives (a node short of both cpu and memory counts for both, as
        kube-scheduler reports it), so a memory shortfall is never hidden behind cpu."""
        state = self.state
        n = state.n
        if cls.reason and cls.reason_position == state.log_position:
            return cls.reason
        remaining = state.schedulable[:n].copy()
        counts: Counter[str] = Counter()
        if not remaining.all():
            counts["node unschedulable"] = int(n - remaining.sum())
        for _, tally, _ in self.tally(cls, remaining):
            counts.update(tally)
        cls.reason = nodes_message(n, counts)
        cls.reason_position = state.log_position
        return cls.reason
