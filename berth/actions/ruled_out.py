"""Turns told beforehand to find no node: a waiting job every class of which asks more of some
resource than any node has free, and the most free per resource such a finding was told from.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import ClassVar

import numpy as np

from berth.framework.job_info import JobInfo, PendingPods, TaskOrder
from berth.framework.session import Session


class BeyondEveryNode:
    """Turns that would find no node, told before they are taken: every class a job has left
    to try asks more of some resource than any node has free (``NodeSearch.fits_nowhere``).
    On a full cluster most admitted jobs are such in most sessions, and their turns were
    most of a session's cost.

    Such a turn places nothing and leaves no reason but the class that found no node
    (``Session.unplaced``), which is read only for a job whose wait for nodes is not yet
    explained: only explained jobs are ruled out, so that the skipped turn changes nothing.
    Between turns the nodes change only by committed placements, so the most free per
    resource only falls while allocate runs; it is taken again when the nodes changed, to
    stay tight, and only when an explained job asks (where none waits, nothing is paid).
    Not under a hold, in sampled search (each search moves the sample on) or while
    decisions are explained."""

    __slots__ = ("session", "ceiling", "position", "nowhere", "somewhere")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ceiling = Ceiling(np.zeros(0, dtype=np.int64))
        self.position = -1  # the state's log position the ceiling was taken at
        # Class keys found to fit nowhere (so they stay, the ceiling only falling) and to
        # maybe fit somewhere (until the nodes change).
        self.nowhere: set[tuple] = set()
        self.somewhere: set[tuple] = set()

    @classmethod
    def of(cls, session: Session) -> BeyondEveryNode | None:
        if (
            not session.explained
            or not session.state.n
            or session.explainer is not None
            or session.search.config.mode != "full"
        ):
            return None
        return cls(session)

    def rules_out(self, job: JobInfo) -> bool:
        """Whether ``job``'s first turn this cycle would find no node for any of its pods (all
        of them weighed, best-effort ones too, whether or not the turn reaches them), told
        from its kept task order.

        A job found so keeps the finding with its kept order (made again when a pod joins the
        job; one that leaves takes no class with it that the others lack), and it holds while
        the nodes' structure stays and no node has more free than then in any resource. Once
        the pod whose end opened a session is replaced, the most free is usually back at most
        where it was, and the backlog is not walked class by class again."""
        session = self.session
        if job.key not in session.explained or session.hold is not None:
            return False
        state, search = session.state, session.search
        kept = job.kept_order(search.key_flags())
        if kept is None or job.group.network_topology is not None:
            return False
        ceiling = self.current()
        epoch = state.structure_epoch
        found = kept.ruled_out
        if found is not None and found[0] == epoch and ceiling.at_most(found[1]):
            return True
        if not self._walk(kept, job.pending):
            return False
        kept.ruled_out = (epoch, ceiling)
        return True

    def current(self) -> Ceiling:
        """The most free per resource as the nodes stand. Where a change left it as it was
        (a placement on a node other than the freest, about half of those in a long replay),
        the same ``Ceiling``: findings under it hold without a comparison, the parked jobs
        need not be asked again, and the classes found to maybe fit stay so."""
        state = self.session.state
        if state.log_position != self.position:
            n = state.n
            free, schedulable = state.free[:n], state.schedulable[:n]
            if not schedulable.all():  # (one that is not schedulable passes no filter)
                free = free[schedulable]  # (a copy by mask: 20 times the max itself)
            most = free.max(axis=0, initial=_NONE_FREE)
            self.position = state.log_position
            if not np.array_equal(most, self.ceiling.free):
                self.ceiling = Ceiling(most)
                self.somewhere.clear()
        return self.ceiling

    def _walk(self, kept: TaskOrder, pending: PendingPods) -> bool:
        """Whether each class of the kept order's runs left fits nowhere, judged by a pod of
        the run still waiting (the class compiled from it, as a turn would)."""
        search, ceiling = self.session.search, self.ceiling.free
        kept.advance(pending)
        pods, keys, run_end = kept.pods, kept.keys, kept.run_end
        nowhere, somewhere = self.nowhere, self.somewhere
        at = kept.head
        while at < len(pods):  # each run of a class
            key, end = keys[at], run_end[at]
            if key not in nowhere:
                if key in somewhere:
                    return False
                waiting = at
                while waiting < end and pods[waiting] not in pending:
                    waiting += 1
                if waiting < end:
                    if not search.fits_nowhere(search.compile(pods[waiting], key), ceiling):
                        somewhere.add(key)
                        return False
                    nowhere.add(key)
            at = end
        return at > kept.head


class Ceiling:
    """The most any schedulable node has free per resource, at one point of a run; and which
    earlier ceilings it is at most, asked once each (a class found to fit nowhere under one
    fits nowhere under any ceiling at most it)."""

    __slots__ = ("free", "serial", "below")

    _serials: ClassVar[Iterator[int]] = itertools.count()

    def __init__(self, free: np.ndarray) -> None:
        self.free = free
        self.serial = next(Ceiling._serials)
        self.below: dict[int, bool] = {}

    def at_most(self, other: Ceiling) -> bool:
        if other is self:
            return True
        known = self.below.get(other.serial)
        if known is None:
            free = other.free
            known = len(free) == len(self.free) and bool((self.free <= free).all())
            self.below[other.serial] = known
        return known


#: The most free where no node is schedulable: every ask is above it.
_NONE_FREE = np.iinfo(np.int64).min
