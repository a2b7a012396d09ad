"""kube-scheduler's DefaultNormalizeScore: a plugin's raw scores over the nodes being compared,
scaled so the best is 100 (or, reversed, so the worst is 0 and a node with nothing against it
100), in whole points as kube-scheduler's integer arithmetic leaves them.

The scale depends on every node compared, so a plugin that normalises this way is global: it
runs on the nodes that passed every filter, never from a per-node cache."""

from __future__ import annotations

import numpy as np


def default_normalize(raw: np.ndarray, reverse: bool = False) -> np.ndarray:
    """100 × raw ÷ the largest raw value, truncated (100 − that when ``reverse``); all 0 (all
    100 reversed) when no node has anything."""
    most = raw.max(initial=0.0)
    if most <= 0:
        return np.full(len(raw), 100.0 if reverse else 0.0)
    scaled = np.floor(100.0 * raw / most)
    return 100.0 - scaled if reverse else scaled
