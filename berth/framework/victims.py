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
