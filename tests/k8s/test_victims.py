"""VictimHold on its own: which binds wait, and when they go."""

from __future__ import annotations

from berth.k8s.victims import VictimHold
from tests.builders import pod


def test_a_bind_waits_for_every_victim_of_its_node():
    hold = VictimHold()
    hold.evicted("default/v1", "n1")
    hold.evicted("default/v2", "n1")
    urgent, other = pod("urgent"), pod("other")
    assert hold.hold(urgent, "n1")
    assert not hold.hold(other, "n2")  # no victim there: bound at once
    assert hold.left("default/v1") == []  # v2 is still on n1
    assert hold.left("default/unrelated") == []
    assert hold.left("default/v2") == [(urgent, "n1")]
    assert hold.left("default/v2") == []  # released once
    assert not hold.hold(pod("later"), "n1")  # n1 has no victim left


def test_victims_of_different_nodes_release_their_own_binds():
    hold = VictimHold()
    hold.evicted("default/a", "n1")
    hold.evicted("default/b", "n2")
    first, second = pod("first"), pod("second")
    assert hold.hold(first, "n1") and hold.hold(second, "n2")
    assert hold.left("default/b") == [(second, "n2")]
    assert hold.left("default/a") == [(first, "n1")]
