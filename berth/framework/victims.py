"""How the preemptable and reclaimable plugins decide victims together, tier by tier as
Volcano decides them: within a tier every plugin must allow a victim, and the first tier that
allows some decides; a tier in which some plugin allows none passes the question to the next.
No tier deciding means no victim. Each plugin sees only what the ones before it in its tier
allowed, so running totals (drf, gang) count only real victims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Literal

import numpy as np

from berth.framework.plugin import RankingPlugin

if TYPE_CHECKING:
    from berth.api.objects import Pod
    from berth.framework.job_info import JobInfo
    from berth.framework.plugin import Plugin

#: Session.preemptable or Session.reclaimable: the victims allowed among some candidates.
Judge = Callable[["JobInfo", "Pod", list["Pod"]], list["Pod"]]
#: The extension points that choose victims.
VictimPoint = Literal["preemptable", "reclaimable"]


def allowed(
    plugins: Sequence[Plugin], point: str, job: JobInfo, pod: Pod, candidates: list[Pod]
) -> list[Pod]:
    """The victims among ``candidates``."""
    for verdict in _tiers(plugins, point, job, pod, candidates):
        if verdict:
            return verdict
    return []


def allowed_anywhere(
    plugins: Sequence[Plugin], point: str, job: JobInfo, pod: Pod, candidates: list[Pod]
) -> set[int] | None:
    """The candidates (ids) some tier allows, when every plugin judges each candidate alone
    (``Plugin.judges_each_alone``); else None. The victims among any part of the candidates
    are then among these: a plugin's verdict on a part is its verdict on the whole,
    restricted, and the part's deciding tier is one of the tiers."""
    if not all(p.judges_each_alone for p in plugins):
        return None
    return {id(p) for verdict in _tiers(plugins, point, job, pod, candidates) for p in verdict}


class RankedJobs:
    """Running jobs, each with some candidate pods, ranked once by every ranking plugin
    (``RankingPlugin``). When every plugin that judges victims ranks them, the candidates any
    tier allows a preemptor are an array comparison (``allowed``) rather than a question per
    candidate; a preempt with a long line of waiting jobs asks it for each one's every task.
    Kept while the jobs' ranks are (a session at most)."""

    def __init__(self, jobs: list[JobInfo], sizes: list[int]) -> None:
        self.jobs = jobs
        #: Each candidate's job (the candidates come job by job, ``sizes`` of each).
        self.owner = np.repeat(np.arange(len(jobs)), sizes)
        self._ranks: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._allowed: dict[tuple, np.ndarray] = {}
        #: Per class key, the signatures for which no node could be freed, none at most another.
        self._unfreeable: dict[object, list[tuple]] = {}

    @staticmethod
    def rankers(plugins: Sequence[Plugin]) -> list[RankingPlugin] | None:
        """``plugins`` when every one of them ranks jobs (else None): then they are served."""
        ranking = [p for p in plugins if isinstance(p, RankingPlugin)]
        return ranking if len(ranking) == len(plugins) else None

    def _ranked(self, plugin: RankingPlugin) -> tuple[np.ndarray, np.ndarray]:
        """Per job, its rank and whether it gives way, by ``plugin``."""
        kept = self._ranks.get(id(plugin))
        if kept is None:
            ranks = np.array([plugin.victim_rank(j) for j in self.jobs], dtype=np.float64)
            gives = np.array([plugin.gives_way(j) for j in self.jobs], dtype=bool)
            kept = self._ranks[id(plugin)] = (ranks, gives)
        return kept

    def allowed(
        self, plugins: Sequence[RankingPlugin], preemptor: JobInfo
    ) -> tuple[np.ndarray, tuple]:
        """Per candidate, whether some tier allows it to ``preemptor`` (``allowed_anywhere``
        of ranking plugins, as a mask), and what that depends on: the preemptor's ranks (a
        job never ranks after itself, so its own pods are never allowed). Preemptors of the
        same ranks get the same mask."""
        signature = tuple(p.victim_rank(preemptor) for p in plugins)
        kept = self._allowed.get(signature)
        if kept is not None:
            return kept, signature
        anywhere = np.zeros(len(self.jobs), dtype=bool)
        rank = iter(signature)
        for _, tier in groupby(plugins, key=lambda p: p.tier):
            verdict = np.ones(len(self.jobs), dtype=bool)
            for plugin in tier:
                ranks, gives = self._ranked(plugin)
                verdict &= gives & (ranks > next(rank))
            anywhere |= verdict
        kept = self._allowed[signature] = anywhere[self.owner]
        kept.flags.writeable = False
        return kept, signature

    def unfreeable(self, signature: tuple, cls_key: object) -> bool:
        """Whether a preemptor of ``signature`` is known to free no node for a task of class
        ``cls_key``: one ranked at most as it is, in every plugin, found none. Its victims are
        among that one's (each plugin allows fewer to a larger rank), and fewer victims free
        no more room on any node."""
        return any(_at_most(known, signature) for known in self._unfreeable.get(cls_key, ()))

    def found_unfreeable(self, signature: tuple, cls_key: object) -> None:
        known = self._unfreeable.setdefault(cls_key, [])
        known[:] = [k for k in known if not _at_most(signature, k)]
        known.append(signature)


def _at_most(left: tuple, right: tuple) -> bool:
    return all(a <= b for a, b in zip(left, right, strict=True))


def _tiers(
    plugins: Sequence[Plugin], point: str, job: JobInfo, pod: Pod, candidates: list[Pod]
) -> Iterator[list[Pod]]:
    """Each tier's verdict on ``candidates``, in tier order, asked only as far as needed."""
    for _, tier in groupby(plugins, key=lambda p: p.tier):
        verdict = candidates
        for plugin in tier:
            keep = {id(p) for p in getattr(plugin, point)(job, pod, verdict)}
            verdict = [p for p in verdict if id(p) in keep]
            if not verdict:
                break
        yield verdict
