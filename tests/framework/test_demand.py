"""The scheduler's per-queue demand, kept as jobs change, equals summing its waiting jobs'
demand afresh, whatever mix of arrivals, withdrawals, pods bound at once and sessions came
before the read."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.objects import PodGroup
from berth.framework.demand import queue_demand
from tests.builders import node, pod, scheduler

# (what, group of the pod, its cpu)
steps = st.lists(
    st.tuples(
        st.sampled_from(("submit", "submit", "bound", "withdraw", "session", "read")),
        st.integers(0, 3),
        st.sampled_from((500, 1000, 3000)),
    ),
    max_size=25,
)


def _same(kept: dict[str, np.ndarray], fresh: dict[str, np.ndarray]) -> bool:
    queues = {q for q, v in kept.items() if v.any()} | {q for q, v in fresh.items() if v.any()}
    for queue in queues:
        a, b = kept.get(queue, np.zeros(0)), fresh.get(queue, np.zeros(0))
        width = max(len(a), len(b))
        if not np.array_equal(np.pad(a, (0, width - len(a))), np.pad(b, (0, width - len(b)))):
            return False
    return True


@settings(max_examples=120, deadline=None)
@given(steps=steps)
def test_kept_demand_equals_summing_afresh(steps) -> None:
    groups = [PodGroup(f"g{i}", min_member=1) for i in range(3)]
    s = scheduler([node("a", cpu=4000), node("b", cpu=4000)], groups=groups)
    pending = []
    for i, (what, group, cpu) in enumerate(steps):
        named = {"group": f"g{group}"} if group < 3 else {}  # 3: a pod of its own
        if what == "submit":
            p = pod(f"p{i}", cpu=cpu, **named)
            s.submit(p)
            pending.append(p)
        elif what == "bound":
            s.place_bound(pod(f"p{i}", cpu=cpu, **named), "a")
        elif what == "withdraw" and pending:
            p = pending.pop(group % len(pending))
            if p.bound_node is None:
                s.withdraw(p)
        elif what == "session":
            s.run_session(float(i))
        else:
            kept = s.demand.current(s.waiting, s.state)
            assert _same(kept, queue_demand(s.waiting, s.state))
    kept = s.demand.current(s.waiting, s.state)
    assert _same(kept, queue_demand(s.waiting, s.state))
