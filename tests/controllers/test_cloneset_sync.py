"""OpenKruise's CloneSet arithmetic (``calculateDiffsWithExpectation``), table ported from
OpenKruise's ``pkg/controller/cloneset/sync/cloneset_sync_utils_test.go``.

Each case: replicas, partition, maxUnavailable, maxSurge, the pods (``o``/``n``: old or new
revision, ``+``/``-``: available or not, ``d``: specified for deletion; ``3*n+`` is three of
them) and the expected counts. OpenKruise runs the table with its CloneSetPartitionRollback gate
on, so these cases do too unless they say otherwise. The cases about lifecycle hooks
(PreparingDelete, PreparingUpdate) are left out: berth does not model lifecycle hooks.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from berth.controllers.cloneset_sync import (
    Diffs,
    PodView,
    calculate_diffs,
    limit_updates,
    partition_count,
)
from tests.builders import pod


@dataclass
class Case:
    name: str
    replicas: int
    partition: int | str
    max_unavailable: int | str
    max_surge: int | str
    pods: str
    expected: dict[str, int]
    scale_max_unavailable: int | str | None = None
    paused: bool = False
    same_revision: bool = False
    partition_rollback: bool = True


def views(text: str) -> list[PodView]:
    result = []
    for item in text.split():
        count, _, code = item.rpartition("*")
        for _ in range(int(count or 1)):
            result.append(PodView(code[0] == "n", code[1] == "+", code.endswith("d")))
    return result


CASES = [
    Case("an empty cloneset", 0, 0, 1, 0, "", dict()),
    Case("increase replicas to 5 (step 1/2)", 5, 0, 1, 0, "", dict(scale_up=5, scale_up_limit=5)),
    Case("increase replicas to 5 (step 2/2)", 5, 0, 1, 0, "5*n+", dict()),
    Case(
        "specified delete 1 pod (all ready) (step 1/3)",
        5,
        0,
        1,
        0,
        "n+d 4*n+",
        dict(delete_ready_limit=1),
    ),
    Case(
        "specified delete 1 pod (all ready) (step 2/3)",
        5,
        0,
        1,
        0,
        "4*n+",
        dict(scale_up=1, scale_up_limit=1),
    ),
    Case("specified delete 1 pod (all ready) (step 3/3)", 5, 0, 1, 0, "5*n+", dict()),
    Case(
        "specified delete 2 pod (all ready) (step 1/6)",
        5,
        0,
        1,
        0,
        "2*n+d 3*n+",
        dict(delete_ready_limit=1),
    ),
    Case(
        "specified delete 2 pod (all ready) (step 2/6)",
        5,
        0,
        1,
        0,
        "n+d 3*n+",
        dict(scale_up=1, scale_up_limit=1),
    ),
    Case("specified delete 2 pod (all ready) (step 3/6)", 5, 0, 1, 0, "n+d 3*n+ n-", dict()),
    Case(
        "specified delete 2 pod (all ready) (step 4/6)",
        5,
        0,
        1,
        0,
        "n+d 4*n+",
        dict(delete_ready_limit=1),
    ),
    Case(
        "specified delete 2 pod (all ready) (step 5/6)",
        5,
        0,
        1,
        0,
        "4*n+",
        dict(scale_up=1, scale_up_limit=1),
    ),
    Case("specified delete 2 pod (all ready) (step 6/6)", 5, 0, 1, 0, "5*n+", dict()),
    Case(
        "specified delete 2 pod and replicas to 4 (step 1/3)",
        4,
        0,
        1,
        0,
        "2*n-d 3*n+",
        dict(delete_ready_limit=2),
    ),
    Case(
        "specified delete 2 pod and replicas to 4 (step 2/3)",
        4,
        0,
        1,
        0,
        "3*n+",
        dict(scale_up=1, scale_up_limit=1),
    ),
    Case("specified delete 2 pod and replicas to 4 (step 3/3)", 4, 0, 1, 0, "4*n+", dict()),
    Case(
        "update partition=3 (step 1/3)",
        5,
        3,
        1,
        0,
        "5*o+",
        dict(update=2, update_max_unavailable=1),
    ),
    Case(
        "update partition=3 (step 2/3)",
        5,
        3,
        1,
        0,
        "n+ 4*o+",
        dict(update=1, update_max_unavailable=1),
    ),
    Case("update partition=3 (step 3/3)", 5, 3, 1, 0, "2*n+ 3*o+", dict()),
    Case(
        "rollback partition=4 (step 1/3)",
        5,
        4,
        2,
        0,
        "4*n+ o+",
        dict(update=-3, update_max_unavailable=2),
    ),
    Case(
        "rollback partition=4 (step 2/3)",
        5,
        4,
        2,
        0,
        "2*n+ 3*o+",
        dict(update=-1, update_max_unavailable=2),
    ),
    Case("rollback partition=4 (step 3/3)", 5, 4, 2, 0, "n+ 4*o+", dict()),
    Case(
        "specified delete with maxSurge (step 1/4)",
        5,
        0,
        0,
        1,
        "n+d 4*n+",
        dict(scale_up=1, surge=1, scale_up_limit=1),
    ),
    Case("specified delete with maxSurge (step 2/4)", 5, 0, 0, 1, "n+d 4*n+ n-", dict(surge=1)),
    Case(
        "specified delete with maxSurge (step 3/4)",
        5,
        0,
        0,
        1,
        "n+d 5*n+",
        dict(delete_ready_limit=1, surge=1),
    ),
    Case("specified delete with maxSurge (step 4/4)", 5, 0, 0, 1, "5*n+", dict()),
    Case(
        "update in-place partition=3 with maxSurge (step 1/4)",
        5,
        3,
        1,
        1,
        "5*o+",
        dict(scale_up=1, surge=1, update=2, update_max_unavailable=1, scale_up_limit=1),
    ),
    Case(
        "update in-place partition=3 with maxSurge (step 2/4)",
        5,
        3,
        1,
        1,
        "5*o+ n-",
        dict(surge=1, update=1, update_max_unavailable=2),
    ),
    Case(
        "update in-place partition=3 with maxSurge (step 3/4)",
        5,
        3,
        1,
        1,
        "4*o+ 2*n-",
        dict(scale_down=1, scale_down_old=1, delete_ready_limit=0),
    ),
    Case(
        "update in-place partition=3 with maxSurge (step 4/4)",
        5,
        3,
        1,
        1,
        "4*o+ n+ n-",
        dict(scale_down=1, scale_down_old=1, delete_ready_limit=1),
    ),
    Case(
        "update recreate partition=3 with maxSurge (step 1/7)",
        5,
        3,
        1,
        1,
        "5*o+",
        dict(scale_up=1, surge=1, update=2, update_max_unavailable=1, scale_up_limit=1),
    ),
    Case(
        "update recreate partition=3 with maxSurge (step 2/7)",
        5,
        3,
        1,
        1,
        "5*o+ n-",
        dict(surge=1, update=1, update_max_unavailable=2),
    ),
    Case(
        "update recreate partition=3 with maxSurge (step 3/7)",
        5,
        3,
        1,
        1,
        "4*o+ o+d n-",
        dict(surge=1, surge_old=1, delete_ready_limit=1, update=1, update_max_unavailable=2),
    ),
    Case(
        "update recreate partition=3 with maxSurge (step 4/7)",
        5,
        3,
        1,
        1,
        "4*o+ n-",
        dict(surge=1, scale_up=1, update=1, update_max_unavailable=1, scale_up_limit=1),
    ),
    Case(
        "update recreate partition=3 with maxSurge (step 5/7)",
        5,
        3,
        1,
        1,
        "4*o+ 2*n-",
        dict(scale_down=1, scale_down_old=1, delete_ready_limit=0),
    ),
    Case(
        "update recreate partition=3 with maxSurge (step 6/7)",
        5,
        3,
        1,
        1,
        "4*o+ n+ n-",
        dict(scale_down=1, scale_down_old=1, delete_ready_limit=1),
    ),
    Case("update recreate partition=3 with maxSurge (step 7/7)", 5, 3, 1, 1, "3*o+ 2*n+", dict()),
    Case(
        "update recreate partition=99% with maxUnavailable=3, maxSurge=2 (step 1/3)",
        5,
        "99%",
        3,
        2,
        "5*o+",
        dict(scale_up=1, surge=1, update=1, update_max_unavailable=3, scale_up_limit=1),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=3, maxSurge=2 (step 2/3)",
        5,
        "99%",
        3,
        2,
        "5*o+ n-",
        dict(scale_down=1, scale_down_old=1, delete_ready_limit=3),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=3, maxSurge=2 (step 3/3)",
        5,
        "99%",
        3,
        2,
        "4*o+ n-",
        dict(),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=40%, maxSurge=30% (step 1/3)",
        5,
        "99%",
        "40%",
        "30%",
        "5*o+",
        dict(scale_up=1, surge=1, update=1, update_max_unavailable=2, scale_up_limit=1),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=40%, maxSurge=30% (step 2/3)",
        5,
        "99%",
        "40%",
        "30%",
        "5*o+ n-",
        dict(scale_down=1, scale_down_old=1, delete_ready_limit=2),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=40%, maxSurge=30% (step 3/3)",
        5,
        "99%",
        "40%",
        "30%",
        "4*o+ n-",
        dict(),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=30%, maxSurge=30% (step 1/3)",
        5,
        "99%",
        "30%",
        "30%",
        "5*o+",
        dict(scale_up=1, surge=1, update=1, update_max_unavailable=1, scale_up_limit=1),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=30%, maxSurge=30% (step 2/3)",
        5,
        "99%",
        "30%",
        "30%",
        "5*o+ n-",
        dict(scale_down=1, scale_down_old=1, delete_ready_limit=1),
    ),
    Case(
        "update recreate partition=99% with maxUnavailable=30%, maxSurge=30% (step 3/3)",
        5,
        "99%",
        "30%",
        "30%",
        "4*o+ n-",
        dict(),
    ),
    Case("revision consistent 1", 5, 0, 1, 0, "5*n+", dict(), same_revision=True),
    Case("revision consistent 2", 5, 3, 1, 0, "5*n+", dict(), same_revision=True),
    Case("revision consistent 3", 5, 3, 1, 0, "2*o+ 3*n+", dict(), same_revision=True),
    Case(
        "revision consistent 4",
        5,
        1,
        1,
        0,
        "3*o+ 2*n+",
        dict(update=2, update_max_unavailable=1),
        same_revision=True,
    ),
    Case(
        "allow to update when fail to scale out normally",
        5,
        1,
        2,
        0,
        "2*o+ 2*n+",
        dict(scale_up=1, update=1, update_max_unavailable=1, scale_up_limit=1),
        same_revision=True,
    ),
    Case(
        "allow to update when fail to scale in normally",
        5,
        1,
        1,
        0,
        "3*o+ 3*n+",
        dict(
            scale_down=1, scale_down_old=2, delete_ready_limit=2, update=1, update_max_unavailable=2
        ),
        same_revision=True,
    ),
    Case("disable rollback feature-gate", 5, 4, 1, 0, "o+ 4*n+", dict(), partition_rollback=False),
    Case(
        "increase replicas 0 to 5 with scale maxUnavailable = 2",
        5,
        0,
        1,
        0,
        "",
        dict(scale_up=5, scale_up_limit=2),
        scale_max_unavailable=2,
    ),
    Case(
        "increase replicas 3 to 6 with scale maxUnavailable = 2, not ready pod = 1",
        6,
        0,
        1,
        0,
        "2*n+ n-",
        dict(scale_up=3, scale_up_limit=1),
        scale_max_unavailable=2,
    ),
    Case(
        "increase replicas 3 to 6 with scale maxUnavailable = 2, not ready pod = 2",
        6,
        0,
        1,
        0,
        "n+ 2*n-",
        dict(scale_up=3, scale_up_limit=0),
        scale_max_unavailable=2,
    ),
    Case(
        "[UpdateStrategyPaused=true] scale up pods with maxSurge=3,maxUnavailable=0",
        5,
        0,
        0,
        3,
        "3*o+",
        dict(scale_up=2, scale_up_limit=2, update=3, update_max_unavailable=-2),
        paused=True,
    ),
    Case(
        "[UpdateStrategyPaused=true] scale down pods with maxSurge=3,maxUnavailable=0",
        3,
        0,
        0,
        3,
        "5*o+",
        dict(
            scale_down=2, scale_down_old=5, delete_ready_limit=2, update=3, update_max_unavailable=2
        ),
        paused=True,
    ),
    Case(
        "[UpdateStrategyPaused=true] create 0 newRevision pods with maxSurge=3,maxUnavailable=0",
        5,
        0,
        0,
        3,
        "5*o+ 3*n-",
        dict(scale_down=3, scale_down_old=5, update=2, update_max_unavailable=3),
        paused=True,
    ),
    Case(
        "[UpdateStrategyPaused=true] create 0 newRevision pods with maxSurge=3,maxUnavailable=0",
        5,
        2,
        0,
        3,
        "5*o+ 3*n-",
        dict(scale_down=3, scale_down_old=3),
        paused=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_calculate_diffs(case: Case) -> None:
    got = calculate_diffs(
        case.replicas,
        case.partition,
        case.max_unavailable,
        case.max_surge,
        views(case.pods),
        same_revision=case.same_revision,
        scale_max_unavailable=case.scale_max_unavailable,
        paused=case.paused,
        partition_rollback=case.partition_rollback,
    )
    assert got == Diffs(**case.expected)


# OpenKruise's CalculatePartitionReplicas, as its SidecarSet tests exercise it: a percentage
# rounds up, but below 100% at least one pod is updated.
@pytest.mark.parametrize(
    "partition,replicas,expected",
    [
        (None, 5, 0),
        (3, 5, 3),
        (9, 5, 5),
        ("99%", 5, 4),
        ("1%", 5, 1),
        ("100%", 5, 5),
        ("18%", 1000, 180),
        ("10%", 1000, 100),
        ("50%", 1, 1),
    ],
)
def test_partition_count(partition, replicas, expected) -> None:
    assert partition_count(partition, replicas) == expected


def test_limit_updates_counts_unavailable_pods_against_the_budget() -> None:
    # Three candidates, budget 2, one pod already unavailable: only one more may go.
    pods = [pod(f"p{i}") for i in range(4)]
    unavailable = {"p3"}
    chosen = limit_updates(
        pods[:3],
        Diffs(update=3, update_max_unavailable=2),
        pods,
        lambda p: p.name not in unavailable,
        lambda p: False,
    )
    assert [p.name for p in chosen] == ["p0"]


def test_limit_updates_lets_unavailable_candidates_through() -> None:
    # An unavailable candidate costs nothing more; an unavailable pod already on the target
    # revision counts against the budget.
    pods = [pod(f"p{i}") for i in range(4)]
    down = {"p0", "p1", "p3"}
    chosen = limit_updates(
        pods[:3],
        Diffs(update=3, update_max_unavailable=3),
        pods,
        lambda p: p.name not in down,
        lambda p: p.name == "p3",
    )
    assert [p.name for p in chosen] == ["p0", "p1"]
