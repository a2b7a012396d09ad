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

As in Volcano, a queue's share is what it holds over what it deserves in the resources it
deserves some of (a queue that deserves nothing has share 1, after every queue below its
deserved share), a queue of higher ``priority`` goes first, and a queue may reclaim while the
task keeps it within its deserved share in at least one requested resource (and within its
capability in all). Victims come from queues holding more than they deserve in a resource the
victim uses, or from a queue that deserves none of what the victim uses; never one that shares
no resource with the task, never below a guarantee; and first from the queues nearest the
reclaimer in the tree.
"""

from __future__ import annotations

import numpy as np

from berth.api.objects import Pod, Queue
from berth.framework.job_info import JobInfo
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
        listed = np.zeros(guarantee.shape, dtype=bool)
        for name in tree.top_down():
            queue, row = session.queues[name], self.index[name]
            parent = tree.parent(name)
            above = total if parent is None else capability[self.index[parent]]
            capability[row] = np.minimum(
                above - reserved[parent] + guarantee[row], columns.limits(queue.capability)
            )
            wanted = np.minimum(columns.amounts(queue.deserved), capability[row])
            deserved[row] = np.maximum(wanted, guarantee[row])
            listed[row] = ~np.isinf(columns.limits({**queue.deserved, **queue.guarantee}))
        # Volcano weighs cpu and memory where the queue deserves some, and any other resource
        # its deserved lists, even at zero.
        named = np.isin(columns.names, ("cpu", "memory"))
        self.weighed = (deserved > EPSILON) | (listed & ~named)
        self.queue_order_shared = any(tree.parent(name) for name in self.index)
        return capability, deserved

    def share(self, row: int) -> float:
        """Held over deserved in the resources the queue deserves some of; 1 when it
        deserves nothing (Volcano's share for a queue without ``deserved``)."""
        share = self._shares.get(row)
        if share is None:
            deserved = self.deserved[row]
            some = deserved > EPSILON
            if not some.any():
                share = 1.0
            else:
                share = float((self.used[row][some] / deserved[some]).max())
            self._shares[row] = share
        return share

    def lineage(self, queue: str) -> list[int]:
        return [self.index[name] for name in self.session.tree.lineage(queue)]

    def queue_order(self, queue: Queue) -> tuple:
        def value(name: str) -> tuple[float, bool]:
            row = self.index[name]
            # At equal shares a queue that deserves something goes before one that does not.
            return (self.share(row), not (self.deserved[row] > EPSILON).any())

        return (-queue.priority, self.session.tree.path_key(queue.name, value))

    def victim_queue_order(self, queue: Queue, preemptor: Queue) -> int:
        """Victims from the queues sharing the deepest ancestor with the reclaimer first."""
        tree = self.session.tree
        mine = list(reversed(tree.lineage(preemptor.name)))
        theirs = list(reversed(tree.lineage(queue.name)))
        common = 0
        for a, b in zip(mine, theirs, strict=False):
            if a != b:
                break
            common += 1
        return -common

    def preemptive(self, queue: Queue, request: np.ndarray) -> bool:
        """A queue reclaims while the task keeps it within its capability in every requested
        resource and within its deserved share in at least one."""
        row = self.index[queue.name]
        need = self.columns.of(request)
        asked = need > 0
        if not asked.any():
            return True
        future = self.used[row] + need
        if (future > self.capability[row] + EPSILON)[asked].any():
            return False
        return bool((future <= self.deserved[row] + EPSILON)[asked].any())

    def reclaimable(self, reclaimer: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        asked = self.columns.amounts(pod.requests) > 0
        held: dict[int, np.ndarray] = {}
        victims = []
        for candidate in candidates:
            job = self.session.job_of(candidate)
            if job is None or job.queue not in self.index:
                continue
            row = self.index[job.queue]
            freed = self.columns.amounts(candidate.requests)
            uses = freed > 0
            if not (uses & asked).any():
                continue  # frees nothing the task asks for
            amount = held.setdefault(row, self.used[row].copy())
            if not (self.guarantee[row] <= amount - freed + EPSILON).all():
                continue
            deserves = uses & (self.deserved[row] > EPSILON)
            relevant = uses & self.weighed[row]
            if deserves.any() and not (amount > self.deserved[row] + EPSILON)[relevant].any():
                continue
            amount -= freed
            victims.append(candidate)
        return victims
