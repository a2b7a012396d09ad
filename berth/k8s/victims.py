"""Binds that wait for preemption victims to leave their node.

A kubelet admits a pod only beside running pods that leave it room, and a victim keeps running
through its grace period. So, like kube-scheduler (which nominates the node and binds later)
and Volcano (which pipelines the task), ``berth serve`` holds a preemptor's bind until every
victim evicted from that node is gone. The session has counted their room as free already, so
nothing else is placed there meanwhile.
"""

from __future__ import annotations

from berth.api.objects import Pod


class VictimHold:
    def __init__(self) -> None:
        self._victims: dict[str, set[str]] = {}  # node → keys of victims still there
        self._held: dict[str, list[tuple[Pod, str]]] = {}  # node → binds waiting for them

    def evicted(self, key: str, node: str) -> None:
        """A victim was evicted from ``node``; its deletion is still to come."""
        self._victims.setdefault(node, set()).add(key)

    def hold(self, pod: Pod, node: str) -> bool:
        """Keep the bind of ``pod`` to ``node`` while victims are still there (True: held)."""
        if not self._victims.get(node):
            return False
        self._held.setdefault(node, []).append((pod, node))
        return True

    def left(self, key: str) -> list[tuple[Pod, str]]:
        """A pod has gone or stopped: the binds to send now (those of its node, when it was
        the last victim there)."""
        for node, keys in self._victims.items():
            if key in keys:
                keys.discard(key)
                if keys:
                    return []
                del self._victims[node]
                return self._held.pop(node, [])
        return []
