"""The queue hierarchy of one session, and resource vectors shared by the queue plugins.

Queues name their parent; a parent that is not a known queue (Volcano's implicit ``root``)
makes a queue top-level. Links are resolved once per session. Manifests are checked for missing
parents and cycles when loaded, but queues can also come from code, so walking up stops at the
first repeat instead of looping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from berth.api.objects import Queue
from berth.cluster.state import ClusterState

#: Slack for comparisons of fractional shares against integer requests.
EPSILON = 1e-6


def padded(vector: np.ndarray, width: int) -> np.ndarray:
    """``vector`` with zeros appended up to ``width`` (vectors built before an extended
    resource was first seen are shorter than the axis)."""
    if len(vector) >= width:
        return vector[:width]
    return np.pad(vector, (0, width - len(vector)))


def stacked(vectors: list[np.ndarray], width: int) -> np.ndarray:
    """``vectors`` as the rows of one matrix ``width`` wide, each ``padded``; the padding is
    skipped when every vector is already that wide, as nearly all are: asked of every
    queue's and every asked job's vector at each session's start."""
    if set(map(len, vectors)) != {width}:
        vectors = [padded(vector, width) for vector in vectors]
    return np.array(vectors).reshape(len(vectors), width)


class QueueTree:
    def __init__(self, queues: Mapping[str, Queue]) -> None:
        self.queues = queues
        self.children: dict[str, list[str]] = {}
        for queue in queues.values():
            parent = self.parent(queue.name)
            if parent is not None:
                self.children.setdefault(parent, []).append(queue.name)

    def parent(self, name: str) -> str | None:
        queue = self.queues.get(name)
        if queue is None or queue.parent == name or queue.parent not in self.queues:
            return None
        return queue.parent

    def ancestors(self, name: str) -> list[str]:
        """Parent first, top-level queue last."""
        chain: list[str] = []
        parent = self.parent(name)
        while parent is not None and parent != name and parent not in chain:
            chain.append(parent)
            parent = self.parent(parent)
        return chain

    def lineage(self, name: str) -> list[str]:
        """The queue and its ancestors, nearest first: every queue a placement counts against."""
        return [name, *self.ancestors(name)]

    def is_leaf(self, name: str) -> bool:
        return name not in self.children

    def top_down(self) -> list[str]:
        """Every queue, each after its parent."""
        return sorted(self.queues, key=lambda name: (len(self.ancestors(name)), name))

    def path_key(self, name: str, value: Callable[[str], Any]) -> tuple:
        """Sort key comparing two queues where their paths from the top part: at the first
        level where the ancestors differ, the one with the smaller ``value`` goes first."""
        return tuple((value(q), q) for q in reversed(self.lineage(name)))


class PathKey:
    """A queue's values along its path from the top of a tree, compared the way Volcano's
    hierarchical DRF compares queues: level by level from the top, and at the first level
    where the values differ the smaller goes first. Where one path ends before any difference,
    the two are equal (the next ordering decides)."""

    __slots__ = ("values",)

    def __init__(self, values: tuple[float, ...]) -> None:
        self.values = values

    def _prefixes(self, other: PathKey) -> tuple[tuple[float, ...], tuple[float, ...]]:
        depth = min(len(self.values), len(other.values))
        return self.values[:depth], other.values[:depth]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PathKey):
            return NotImplemented
        mine, theirs = self._prefixes(other)
        return mine == theirs

    def __lt__(self, other: PathKey) -> bool:
        mine, theirs = self._prefixes(other)
        return mine < theirs

    def __hash__(self) -> int:
        raise TypeError("PathKey is an ordering, not a hashable value")

    def __repr__(self) -> str:
        return f"PathKey{self.values}"


class ShareColumns:
    """The resource columns shares are computed over: every resource but the pod count, which
    Volcano leaves out of queue and job shares too.

    A plugin keeps one across sessions (``bind`` it to the state each session): converting
    queue quotas and requests from mappings is memoised, and the memo stays valid until the
    resource axis grows. Memoised vectors are read-only. A resource first seen during a session
    is left out of shares until the next one.
    """

    _MEMO_LIMIT = 4096

    def __init__(self) -> None:
        self.state: ClusterState | None = None
        self.width = -1
        self.columns = np.zeros(0, dtype=np.intp)
        self.names: list[str] = []
        self._memo: dict[tuple, np.ndarray] = {}
        #: ``amounts`` by the mapping's identity, with a copy to tell a mapping changed in
        #: place: enqueue asks for the same jobs' minResources every session.
        self._seen: dict[int, tuple[Mapping[str, int], dict[str, int], np.ndarray]] = {}
        #: ``of`` of read-only vectors by identity (each kept with its vector).
        self._of: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def bind(self, state: ClusterState) -> None:
        if state is self.state and state.width == self.width:
            return
        self.state, self.width = state, state.width
        pods = state.pods_column()
        self.columns = np.array([c for c in range(state.width) if c != pods], dtype=np.intp)
        self.names = [state.axis.names[c] for c in self.columns]
        self._memo.clear()
        self._seen.clear()
        self._of.clear()

    def of(self, vector: np.ndarray) -> np.ndarray:
        """A resource-axis vector (possibly short) as a float vector over the share columns.
        A read-only vector (a memoised request) is converted once, read-only too: a queue's
        room is asked, and its use charged, with the same request for every pod placed."""
        kept = None if vector.flags.writeable else self._of.get(id(vector))
        if kept is not None and kept[0] is vector:
            return kept[1]
        converted = padded(vector, self.width)[self.columns].astype(np.float64)
        if vector.flags.writeable:
            return converted
        converted.flags.writeable = False
        if len(self._of) >= self._MEMO_LIMIT:
            self._of.clear()
        self._of[id(vector)] = (vector, converted)
        return converted

    def amounts(self, resources: Mapping[str, int]) -> np.ndarray:
        """A resource mapping (canonical units) over the share columns; unlisted ones are 0."""
        seen = self._seen.get(id(resources))
        if seen is not None and seen[0] is resources and seen[1] == resources:
            return seen[2]
        key = ("amounts", *sorted(resources.items()))
        vector = self._memoised(key, lambda: self.of(self._vector(resources)))
        if len(self._seen) >= self._MEMO_LIMIT:
            self._seen.clear()
        self._seen[id(resources)] = (resources, dict(resources), vector)
        return vector

    def limits(self, resources: Mapping[str, int]) -> np.ndarray:
        """Like ``amounts``, but a resource the mapping does not list is unlimited."""

        def limits() -> np.ndarray:
            listed = self.of(self._vector(dict.fromkeys(resources, 1))) > 0
            return np.where(listed, self.amounts(resources), np.inf)

        return self._memoised(("limits", *sorted(resources.items())), limits)

    def _vector(self, resources: Mapping[str, int]) -> np.ndarray:
        assert self.state is not None, "bind the columns to a state first"
        return self.state.request_vector(dict(resources))

    def _memoised(self, key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        vector = self._memo.get(key)
        if vector is None:
            vector = compute()
            vector.flags.writeable = False
            if len(self._memo) >= self._MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = vector
        return vector

    def listed(self, mask: np.ndarray) -> str:
        """Names of the columns set in ``mask``, for messages."""
        return ", ".join(name for name, hit in zip(self.names, mask, strict=True) if hit)


def dominant_share(amount: np.ndarray, total: np.ndarray) -> float:
    """The largest fraction of a resource's total that ``amount`` holds; holding some of a
    resource that has no total counts as all of it (Volcano's share helper)."""
    positive = total > 0
    share = float((amount[positive] / total[positive]).max(initial=0.0))
    if share < 1.0 and (amount[~positive] > 0).any():
        return 1.0
    return share
