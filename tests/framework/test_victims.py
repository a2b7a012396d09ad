"""Victims decided tier by tier: when every plugin judges each candidate alone, the victims
among any part of the candidates are among those some tier allows of the whole; with a plugin
that keeps a running total there is no such bound. Ranking plugins answer the same from ranks
kept per job."""

from __future__ import annotations

from typing import ClassVar

from hypothesis import given
from hypothesis import strategies as st

from berth.api.objects import Pod, PodGroup
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin, RankingPlugin
from berth.framework.victims import RankedJobs, allowed, allowed_anywhere
from tests.builders import pod

CANDIDATES = [pod(f"p{i}", priority=i % 5) for i in range(12)]
TASK = CANDIDATES[0]


class _Below(Plugin):
    """Allows candidates whose priority is below a bound, each on its own."""

    name = "below"
    judges_each_alone: ClassVar[bool] = True

    def __init__(self, bound: int, tier: int) -> None:
        super().__init__()
        self.bound = bound
        self.tier = tier

    def preemptable(self, preemptor: object, task: Pod, candidates: list[Pod]) -> list[Pod]:
        return [c for c in candidates if c.priority < self.bound]


class _FirstTwo(_Below):
    """Allows the first two candidates it is shown: a running total."""

    name = "first-two"
    judges_each_alone: ClassVar[bool] = False

    def preemptable(self, preemptor: object, task: Pod, candidates: list[Pod]) -> list[Pod]:
        return candidates[:2]


def _victims(plugins: list[Plugin], part: list[Pod]) -> list[Pod]:
    return allowed(plugins, "preemptable", None, TASK, part)  # type: ignore[arg-type]


def _anywhere(plugins: list[Plugin]) -> set[int] | None:
    return allowed_anywhere(plugins, "preemptable", None, TASK, CANDIDATES)  # type: ignore[arg-type]


#: (name, plugins in tier order, the priorities allowed anywhere)
TIERS = [
    ("one plugin", [_Below(3, 0)], {0, 1, 2}),
    ("two plugins in a tier", [_Below(4, 0), _Below(2, 0)], {0, 1}),
    ("a tier that allows none falls through", [_Below(0, 0), _Below(3, 1)], {0, 1, 2}),
    # the first tier decides for the whole, the second for a part without priority 0
    ("two tiers", [_Below(1, 0), _Below(5, 1)], {0, 1, 2, 3, 4}),
    ("no tier allows any", [_Below(0, 0), _Below(0, 1)], set()),
]


@given(st.sampled_from(TIERS), st.lists(st.sampled_from(CANDIDATES), unique_by=id))
def test_the_victims_among_a_part_are_among_those_allowed_anywhere(
    case: tuple[str, list[Plugin], set[int]], part: list[Pod]
) -> None:
    _, plugins, priorities = case
    anywhere = _anywhere(plugins)
    assert anywhere == {id(c) for c in CANDIDATES if c.priority in priorities}
    assert {id(p) for p in _victims(plugins, part)} <= anywhere


def test_a_plugin_with_a_running_total_gives_no_bound() -> None:
    plugins = [_Below(3, 0), _FirstTwo(0, 0)]
    assert _anywhere(plugins) is None
    # (asked about a part, it allows that part's first two, not among the whole's first two)
    assert [c.name for c in _victims(plugins, CANDIDATES[5:])] == ["p5", "p6"]


#: Four running jobs of three pods each, and a waiting one; a job's rank is its index.
JOBS = [JobInfo(PodGroup(f"j{k}", "default")) for k in range(5)]
for k, job in enumerate(JOBS[:4]):
    for i in range(3):
        member = pod(f"j{k}-{i}", group=f"j{k}")
        job.bound[member.key] = member
RUNNING = [p for job in JOBS[:4] for p in job.bound.values()]


class _Session:
    def job_of(self, candidate: Pod) -> JobInfo | None:
        return next((j for j in JOBS if j.key == candidate.job_key), None)


class _Ranks(RankingPlugin):
    """Ranks jobs by a table; the jobs in ``holding`` do not give way."""

    name = "ranks"

    def __init__(self, ranks: list[float], holding: set[int], tier: int) -> None:
        super().__init__()
        self.ranks, self.holding, self.tier = ranks, holding, tier
        self.session = _Session()  # type: ignore[assignment]

    def victim_rank(self, job: JobInfo) -> float:
        return self.ranks[JOBS.index(job)]

    def gives_way(self, job: JobInfo) -> bool:
        return JOBS.index(job) not in self.holding


RANKS = st.lists(st.sampled_from([0.0, 1.0, 2.0, float("inf")]), min_size=5, max_size=5)
RANKERS = st.builds(_Ranks, RANKS, st.sets(st.integers(0, 4), max_size=2), st.integers(0, 1))


@given(st.lists(RANKERS, max_size=3), st.integers(0, 4))
def test_ranked_jobs_allow_what_the_ranking_plugins_allow(
    rankers: list[_Ranks], preemptor: int
) -> None:
    """Tiers as plugins are sorted into them; the preemptor may be one of the running jobs,
    whose own pods no tier allows."""
    plugins: list[Plugin] = sorted(rankers, key=lambda p: p.tier)
    table = RankedJobs(JOBS[:4], [3, 3, 3, 3])
    assert RankedJobs.rankers(plugins) == plugins
    job = JOBS[preemptor]
    mask, signature = table.allowed(plugins, job)  # type: ignore[arg-type]
    expected = allowed_anywhere(plugins, "preemptable", job, TASK, RUNNING)
    assert expected is not None
    assert {id(p) for p, kept in zip(RUNNING, mask, strict=True) if kept} == expected
    again, same = table.allowed(plugins, job)  # type: ignore[arg-type]
    assert same == signature and again is mask  # alike preemptors share the answer


def test_a_plugin_that_does_not_rank_is_not_served() -> None:
    assert RankedJobs.rankers([_Ranks([0.0] * 5, set(), 0), _Below(3, 0)]) is None
