"""The plugin contract.

A plugin overrides only the extension points it serves; the framework finds them by checking
which methods a plugin class overrides, so an unused point costs nothing per pod.

Node-level points work on *rows*: either ``slice(0, n)`` (every node) or an integer array of
node rows. Both index numpy arrays the same way, so one expression serves a full scan, a sampled
window and a patch of the rows that changed since a cached evaluation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from berth.api.objects import Pod
    from berth.cluster.state import ClusterState
    from berth.framework.podclass import PodClass
    from berth.framework.session import JobInfo, Session

Rows = slice | np.ndarray


class PluginArgumentError(ValueError):
    """A plugin argument with the wrong type or value."""


class Plugin:
    #: The name used in configuration files.
    name: ClassVar[str] = ""
    #: Short reason shown in "0/N nodes: ..." explanations when this filter rejects a node.
    reason: ClassVar[str] = ""
    #: Default weight of the score, overridable with the ``weight`` argument.
    default_weight: ClassVar[float] = 1.0

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        self.arguments = dict(arguments or {})
        self.weight = self.float_arg("weight", self.default_weight)

    # -- argument helpers -------------------------------------------------------

    def float_arg(self, key: str, default: float) -> float:
        value = self.arguments.get(key, default)
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise PluginArgumentError(
                f"plugin {self.name}: argument {key}: {value!r} is not a number"
            ) from exc

    # -- node filtering and scoring ---------------------------------------------

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        """Compile what depends only on the pod class and node labels (cached per class)."""

    def relevant(self, cls: PodClass, point: str) -> bool:
        """Whether this plugin has anything to say about pods of this class at ``point``
        ("filter" or "score"); asked once per class, after ``prepare``."""
        return True

    def is_local(self, cls: PodClass) -> bool:
        """True when a node's result depends on that node's row alone, so a cached evaluation
        can be patched on the rows that changed."""
        return True

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        raise NotImplementedError

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        """A 0..100 score per row (higher is better)."""
        raise NotImplementedError

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        """(reason, rejected mask) pairs for the "0/N nodes" message."""
        return [(self.reason or self.name, ~self.filter(cls, state, rows))]

    # -- job and task level -----------------------------------------------------

    def job_order(self, job: JobInfo) -> Any:
        """Sort key; smaller goes first."""
        raise NotImplementedError

    def task_order(self, pod: Pod) -> Any:
        raise NotImplementedError

    def job_valid(self, job: JobInfo) -> str | None:
        """None when the job may be scheduled, else why not."""
        raise NotImplementedError

    def job_ready(self, job: JobInfo) -> bool:
        raise NotImplementedError

    def on_session_open(self, session: Session) -> None:
        """Per-cycle setup (e.g. computing shares)."""


def overrides(plugin: Plugin, method: str) -> bool:
    return getattr(type(plugin), method) is not getattr(Plugin, method)
