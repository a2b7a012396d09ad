"""ChangeLog: which rows a cache patches, and when it rebuilds instead."""

import pytest

from berth.cluster.change_log import ChangeLog


def logged(rows: list[int]) -> ChangeLog:
    log = ChangeLog()
    log.rows.extend(rows)
    return log


@pytest.mark.parametrize(
    "rows,since,nodes,expected",
    [
        ([], 0, 10, []),
        ([3, 1, 3], 0, 10, [1, 3]),  # sorted, each row once
        ([3, 1, 3, 7], 2, 10, [3, 7]),  # only what came after the position
        ([3, 1, 3, 7], 4, 10, []),
        (list(range(64)) * 2, 0, 100, list(range(64))),  # at least 64 rows are patched
        (list(range(65)), 0, 100, None),  # 65 of 100 rows: over half, rebuilt
        (list(range(65)), 0, 130, list(range(65))),  # half of 130: patched
        (list(range(130)), 0, 256, None),
        ([5] * 200, 0, 100, [5]),  # twice as many changes as nodes: still counted
        ([5] * 201, 0, 100, None),  # more: not counted
    ],
)
def test_rows_since(rows, since, nodes, expected):
    answer = logged(rows).since(since, nodes)
    assert (None if answer is None else answer.tolist()) == expected


def test_trimmed_past_a_position():
    log = logged([1] * 5000)
    log.trim(10)  # more than 4 × 1024 changes: forgotten
    assert log.position == 5000 and log.rows == []
    assert log.since(4999, 10) is None  # from before the trim: rebuild
    log.rows.append(2)
    assert log.since(5000, 10).tolist() == [2]


def test_kept_answer_is_shared_and_read_only():
    log = logged([4, 2])
    first = log.since(0, 10)
    assert log.since(0, 10) is first
    assert not first.flags.writeable
    log.rows.append(9)  # the range grew: a new answer
    assert log.since(0, 10).tolist() == [2, 4, 9]
    assert first.tolist() == [2, 4]
