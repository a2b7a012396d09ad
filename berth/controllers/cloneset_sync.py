"""OpenKruise's CloneSet arithmetic, free of any store: how many pods to create or delete and
on which revision, how many to update and how many of them may be unavailable at once.

``calculate_diffs`` follows OpenKruise's ``calculateDiffsWithExpectation`` and is tested against
its table. In short: ``partition`` pods stay on the current revision; updating may make at most
``maxUnavailable`` of the desired pods unavailable (``maxUnavailable`` plus the surge pods,
counted over all pods); ``maxSurge`` extra pods may be created first, for an update or to stand
in for pods being deleted; scaling out stops while ``scaleStrategy.maxUnavailable`` pods are
unavailable. Scaling and updating never happen in one pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from berth.api.objects import Pod
from berth.api.workloads import IntOrPercent, scaled

DEFAULT_MAX_UNAVAILABLE = "20%"
_UNLIMITED = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PodView:
    """What the calculation needs to know of a pod."""

    updated: bool  # on the update revision
    available: bool
    to_delete: bool  # in podsToDelete, or marked for deletion (a recreate)


@dataclass(slots=True)
class Diffs:
    scale_up: int = 0
    scale_up_old: int = 0  # of scale_up, how many on the current (old) revision
    scale_down: int = 0
    scale_down_old: int = 0
    scale_up_limit: int = 0  # creations allowed now (scaleStrategy.maxUnavailable)
    delete_ready_limit: int = 0  # ready pods that may be deleted now
    surge: int = 0
    surge_old: int = 0
    update: int = 0  # > 0: pods to move to the update revision (< 0: back to the current one)
    update_max_unavailable: int = 0


def partition_count(partition: IntOrPercent | None, replicas: int) -> int:
    """Pods kept on the old revision: a percentage rounds up (one old pod kept for any
    partition above 0%), but below 100% at least one pod is updated."""
    if partition is None:
        return 0
    value = scaled(partition, replicas, True)
    if replicas > 1 and value == replicas and isinstance(partition, str) and partition != "100%":
        value = replicas - 1
    return max(min(value, replicas), 0)


def _plus_and_minus(a: int, b: int) -> bool:
    return (a > 0 > b) or (a < 0 < b)


def calculate_diffs(
    replicas: int,
    partition: IntOrPercent | None,
    max_unavailable: IntOrPercent | None,
    max_surge: IntOrPercent | None,
    pods: Sequence[PodView],
    *,
    same_revision: bool = False,
    scale_max_unavailable: IntOrPercent | None = None,
    paused: bool = False,
    partition_rollback: bool = False,
) -> Diffs:
    """``same_revision``: the current revision is the update revision. ``partition_rollback``
    (OpenKruise's CloneSetPartitionRollback gate, off by default) lets a raised partition move
    updated pods back."""
    result = Diffs()
    kept = partition_count(partition, replicas)
    surge_max = 0
    if max_surge is not None and not paused:
        surge_max = scaled(max_surge, replicas, True)
    unavailable_max = scaled(
        DEFAULT_MAX_UNAVAILABLE if max_unavailable is None else max_unavailable,
        replicas,
        surge_max == 0,
    )
    scale_max = scaled(
        _UNLIMITED if scale_max_unavailable is None else scale_max_unavailable, replicas, True
    )
    new = old = new_unavailable = old_unavailable = new_to_delete = old_to_delete = 0
    for pod in pods:
        if pod.updated:
            new += 1
            if pod.to_delete:
                new_to_delete += 1
            elif not pod.available:
                new_unavailable += 1
        else:
            old += 1
            if pod.to_delete:
                old_to_delete += 1
            elif not pod.available:
                old_unavailable += 1
    old_diff = old - kept
    new_diff = new - (replicas - kept)
    unavailable = new_unavailable + old_unavailable
    if same_revision or not partition_rollback:
        old_diff, new_diff = max(old_diff, 0), min(new_diff, 0)

    if surge_max > 0:
        scale_surge = scale_surge_old = 0
        to_delete = new_to_delete + old_to_delete
        if to_delete > 0:
            scale_surge = min(max(unavailable + to_delete - unavailable_max, 0), to_delete)
            if scale_surge > new_to_delete:
                scale_surge_old = scale_surge - new_to_delete
        update_surge = update_surge_old = 0
        if _plus_and_minus(old_diff, new_diff):
            if abs(old_diff) <= abs(new_diff):
                update_surge = abs(old_diff)
                if old_diff < 0:
                    update_surge_old = update_surge
            else:
                update_surge = abs(new_diff)
                if new_diff > 0:
                    update_surge_old = update_surge
        # A pass either scales or updates: the larger need sets the surge.
        if scale_surge >= update_surge:
            result.surge = min(surge_max, scale_surge)
            result.surge_old = min(result.surge, scale_surge_old)
        else:
            result.surge = min(surge_max, update_surge)
            result.surge_old = min(result.surge, update_surge_old)

    expected = replicas + result.surge
    expected_old = kept + result.surge_old
    if expected > len(pods):
        result.scale_up = expected - len(pods)
        result.scale_up_old = max(expected_old - old, 0)
        result.scale_up_limit = min(result.scale_up, max(scale_max - unavailable, 0))
    surplus = len(pods) - old_to_delete - new_to_delete - expected
    if surplus > 0:
        result.scale_down = surplus
        result.scale_down_old = max(old - old_to_delete - expected_old, 0)
    if new_to_delete or old_to_delete or result.scale_down:
        result.delete_ready_limit = max(unavailable_max + len(pods) - replicas - unavailable, 0)
    result.update = old_diff if abs(old_diff) <= abs(new_diff) else -new_diff
    if result.update:
        result.update_max_unavailable = unavailable_max + len(pods) - replicas
    return result


def limit_updates(
    candidates: Sequence[Pod],
    diffs: Diffs,
    pods: Sequence[Pod],
    available: Callable[[Pod], bool],
    on_target: Callable[[Pod], bool],
) -> list[Pod]:
    """The candidates (in update order) that may be updated now: at most ``|update|`` of
    them, and only while unavailable pods stay within ``update_max_unavailable``."""
    chosen = list(candidates[: abs(diffs.update)])
    unavailable = target_unavailable = 0
    for pod in pods:
        if not available(pod):
            unavailable += 1
            if on_target(pod):
                target_unavailable += 1
    allowed = 0
    for pod in chosen:
        if target_unavailable + allowed >= diffs.update_max_unavailable:
            break
        if available(pod):
            if unavailable >= diffs.update_max_unavailable:
                break
            unavailable += 1
        allowed += 1
    return chosen[:allowed]
