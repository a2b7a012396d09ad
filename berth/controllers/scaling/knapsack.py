"""The multiple-choice knapsack: one choice from each group, weights within a capacity, the
largest total value. Solved by dynamic programming over the capacity, one numpy pass per
choice, so a few dozen jobs over hundreds of GPUs cost under a millisecond."""

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
    bests = [best]  # before each group, for the way back
    for group in groups:
        if not any(weight == 0 for weight, _ in group):
            raise ValueError("every group needs a choice of weight 0")
        new = np.full(capacity + 1, -np.inf)
        for weight, value in group:
            if weight < 0:
                raise ValueError(f"weight {weight} is below 0")
            if weight <= capacity:
                held = new[weight:]  # a view: what this choice competes with
                np.maximum(held, best[: capacity + 1 - weight] + value, out=held)
        best = new
        bests.append(best)
    # Back from the last group: the first choice that reaches the best total (the same sums
    # as on the way forward, so equal to the float).
    chosen = [0] * len(groups)
    free = capacity
    for index in range(len(groups) - 1, -1, -1):
        before = bests[index]
        totals = [
            before[free - weight] + value if weight <= free else -np.inf
            for weight, value in groups[index]
        ]
        choice = max(range(len(totals)), key=totals.__getitem__)
        chosen[index] = choice
        free -= groups[index][choice][0]
    return chosen
