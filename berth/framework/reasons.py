"""The kinds of reason a waiting job is given that something reads back: whether it waits for
its queue, for a node, or for nodes held for another job, changes what is reported (and
whether the job may itself starve), not only the text."""

from __future__ import annotations

from collections.abc import Sequence

from berth.framework.plugin import Refusal

#: Node names listed in a message before the rest are only counted.
_LISTED_NODES = 5


def node_list(names: Sequence[str]) -> str:
    """Held nodes named in a reason: a few by name, the rest counted, so that a hold over
    hundreds of nodes still reads as one line."""
    if len(names) == 1:
        return f"node {names[0]}"
    listed = ", ".join(names[:_LISTED_NODES])
    rest = len(names) - _LISTED_NODES
    return f"nodes {listed}" + (f" and {rest} more" if rest > 0 else "")


class Overused(Refusal):
    """Its queue holds its deserved share. When the job's pods would fit no node anyway (a
    resource no node has, say, in which the queue deserves nothing), the node shortage is the
    better reason, and the pending reason says that instead."""

    __slots__ = ()

    def __init__(self, queue: str) -> None:
        super().__init__(lambda: f"queue {queue} is overused")


class NoNode(Refusal):
    """No node could take the job's pods: the explanation, worked out when the job started
    waiting for nodes (it is not worked out again while the job keeps waiting for them)."""

    __slots__ = ()


class HeldBack(Refusal):
    """A job refused only because the nodes that would take it are held for another job; it
    is not kept back by its queue, so it may itself be starving."""

    __slots__ = ()
