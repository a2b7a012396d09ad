"""Victims decided tier by tier: when every plugin judges each candidate alone, the victims
among any part of the candidates are among those some tier allows of the whole; with a plugin
that keeps a running total there is no such bound."""

from __future__ import annotations

from typing import ClassVar

from hypothesis import given
from hypothesis import strategies as st

from berth.api.objects import Pod
from berth.framework.plugin import Plugin
from berth.framework.victims import allowed, allowed_anywhere
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
