"""The multiple-choice knapsack: one choice from each group, weights within a capacity, the
largest total value. Solved by dynamic programming over the capacity, one numpy pass per
choice, so a few dozen jobs over hundreds of GPUs cost milliseconds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def solve(groups: Sequence[Sequence[tuple[int, float]]], capacity: int) -> list[int]:
    """The index of the choice taken from each group: (weight, value) pairs, weights whole
    numbers >= 0. Every group must offer a choice of weight 0 within the capacity so that
    a solution exists. Among equal totals the earlier choices win (deterministic)."""
    if capacity < 0:
        raise ValueError(f"capacity {capacity} is below 0")
    best = np.zeros(capacity + 1)  # best[c]: the best value within weight c
    picks = []
    for group in groups:
        if not any(weight == 0 for weight, _ in group):
            raise ValueError("every group needs a choice of weight 0")
        new = np.full(capacity + 1, -np.inf)
        pick = np.zeros(capacity + 1, dtype=np.int64)
        for index, (weight, value) in enumerate(group):
            if weight < 0:
                raise ValueError(f"weight {weight} is below 0")
            if weight > capacity:
                continue
            candidate = np.full(capacity + 1, -np.inf)
            candidate[weight:] = best[: capacity + 1 - weight] + value
            better = candidate > new
            new[better] = candidate[better]
            pick[better] = index
        best = new
        picks.append(pick)
    chosen = [0] * len(groups)
    room = capacity
    for index in range(len(groups) - 1, -1, -1):
        choice = int(picks[index][room])
        chosen[index] = choice
        room -= groups[index][choice][0]
    return chosen


def value(groups: Sequence[Sequence[tuple[int, float]]], chosen: Sequence[int]) -> float:
    return float(sum(groups[g][c][1] for g, c in enumerate(chosen)))
