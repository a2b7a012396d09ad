"""The node rows that binds, unbinds and node changes touched, in order.

Caches over the nodes (a pod class's scores, the sums of ``berth.cluster.totals``, spread
counts per domain) remember a position in the log and patch only the rows touched since it,
instead of going over the whole cluster again.
"""

from __future__ import annotations

import numpy as np

#: Past this fraction of the nodes touched since a position (distinct rows), a cache is
#: rebuilt, not patched; past this many changes per node, the touched rows are not even
#: counted. Scoring a row costs about as much in a patch as in a rebuild, so patching half
#: the rows still pays (one fgd fill run on openb: 0.83x the time of a limit of a quarter of
#: the nodes in changes).
PATCH_LIMIT_FRACTION = 0.5
LOG_LIMIT_FRACTION = 2.0
#: No row touched (read-only, like every answer).
_NONE = np.empty(0, dtype=np.intp)
_NONE.flags.writeable = False


class ChangeLog:
    def __init__(self) -> None:
        #: Touched rows since ``base`` (append to it directly: it is never replaced).
        self.rows: list[int] = []
        self.base = 0
        #: The last answer of ``since`` and what it was asked: several caches catch up to the
        #: same position between two binds.
        self._asked: tuple[int, int, int] | None = None
        self._answer: np.ndarray | None = None

    @property
    def position(self) -> int:
        return self.base + len(self.rows)

    def since(self, position: int, nodes: int) -> np.ndarray | None:
        """Rows touched since ``position``, sorted and distinct (read-only); None when the log
        no longer reaches back to it, or when so many of the ``nodes`` changed that a rebuild
        is cheaper than a patch."""
        start = position - self.base
        if start < 0:
            return None
        count = len(self.rows) - start
        if count == 0:
            return _NONE
        if count > max(64, nodes * LOG_LIMIT_FRACTION):
            return None
        asked = (position, count, nodes)
        if asked != self._asked:
            touched = set(self.rows[start:])
            if len(touched) > max(64, nodes * PATCH_LIMIT_FRACTION):
                answer = None
            else:
                answer = np.fromiter(sorted(touched), dtype=np.intp)
                answer.flags.writeable = False
            self._asked, self._answer = asked, answer
        return self._answer

    def trim(self, nodes: int) -> None:
        """Forget old changes once the log is long for ``nodes`` nodes; caches older than the
        new base rebuild on their next use."""
        if len(self.rows) > 4 * max(nodes, 1024):
            self.base += len(self.rows)
            self.rows.clear()
