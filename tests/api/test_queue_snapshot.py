"""``Queue.snapshot`` tells whether a queue changed between sessions (enqueue re-asks every
waiting job then; proportion and capacity make their queue rows again): a change to any field,
in place or not, must change it, and a snapshot taken before must not follow later changes."""

from __future__ import annotations

import dataclasses

import pytest

from berth.api.objects import Queue

CHANGES = {
    "name": "other",
    "weight": 3,
    "state": "Closed",
    "reclaimable": False,
    "parent": "root2",
    "priority": 5,
    "capability": {"cpu": 1000},
    "guarantee": {"cpu": 500},
    "deserved": {"cpu": 700},
    "annotations": {"a": "b"},
}


def test_every_field_is_covered():
    assert {f.name for f in dataclasses.fields(Queue)} == set(CHANGES)


@pytest.mark.parametrize(("field", "value"), CHANGES.items(), ids=CHANGES.keys())
def test_a_change_to_a_field_changes_the_snapshot(field, value):
    queue = Queue("q", capability={"cpu": 4000})
    before = queue.snapshot()
    setattr(queue, field, value)
    assert queue.snapshot() != before


def test_a_change_in_place_leaves_an_earlier_snapshot_as_it_was():
    queue = Queue("q", capability={"cpu": 4000})
    before = queue.snapshot()
    queue.capability["cpu"] = 2000
    queue.annotations["x"] = "y"
    assert queue.snapshot() != before
    assert before == Queue("q", capability={"cpu": 4000}).snapshot()
