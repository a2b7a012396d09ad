"""capacity: per-resource queue quotas taken from the Queue itself (Volcano's capacity).

``deserved`` is what a queue can always get back by reclaiming, ``capability`` the most it may
ever hold and ``guarantee`` what stays reserved for it; there is no weighting. A queue may
borrow idle capacity past its deserved share up to its real capability, and another queue under
its own deserved share reclaims the excess.

Queues form a hierarchy through ``parent``: a child's real capability is its parent's, less the
guarantees of the child's siblings (its own guarantee added back), capped by its own capability
— so a resource the child leaves unlisted is inherited from the parent. Use rolls up, so a
placement must fit every ancestor too, and queues are ordered level by level from the top (at
the level where two queues' ancestors differ, the ancestor with the smaller share goes first).

A resource ``deserved`` does not list counts as zero: using it is borrowing.
"""

from __future__ import annotations

import numpy as np

from berth.api.objects import Queue
from berth.framework.queues import EPSILON
from berth.framework.session import Session
from berth.plugins.queue_share import QueueShare


class Capacity(QueueShare):
    name = "capacity"

    def divide(self, session: Session) -> tuple[np.ndarray, np.ndarray]:
        tree, columns, total, guarantee = session.tree, self.columns, self.total, self.guarantee
        reserved: dict[str | None, np.ndarray] = {}
        for name, row in self.index.items():
            parent = tree.parent(name)
            reserved[parent] = reserved.get(parent, np.zeros_like(total)) + guarantee[row]
        capability = np.zeros_like(guarantee)
        deserved = np.zeros_like(guarantee)
        for name in tree.top_down():
            queue, row = session.queues[name], self.index[name]
            parent = tree.parent(name)
            above = total if parent is None else capability[self.index[parent]]
            capability[row] = np.minimum(
                above - reserved[parent] + guarantee[row], columns.limits(queue.capability)
            )
            wanted = np.minimum(columns.amounts(queue.deserved), capability[row])
            deserved[row] = np.maximum(wanted, guarantee[row])
        return capability, deserved

    def lineage(self, queue: str) -> list[int]:
        return [self.index[name] for name in self.session.tree.lineage(queue)]

    def queue_order(self, queue: Queue) -> tuple:
        return self.session.tree.path_key(queue.name, lambda name: self.share(self.index[name]))

    def preemptive(self, queue: Queue, request: np.ndarray) -> bool:
        """A queue reclaims only while the task keeps it within its deserved share."""
        row = self.index[queue.name]
        need = self.columns.of(request)
        within = self.used[row] + need <= self.deserved[row] + EPSILON
        return bool((within | (need == 0)).all())
