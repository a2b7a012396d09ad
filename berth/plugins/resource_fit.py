"""resource-fit: a node fits when its free capacity covers the pod's request in every resource.

``ignoredResources`` and ``ignoredResourceGroups`` (kube-scheduler's NodeResourcesFitArgs)
leave extended resources unchecked, by name or by the group before the '/'
(``example.com`` ignores ``example.com/foo``): they are accounted by something else.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows
from berth.framework.podclass import PodClass


class ResourceFit(Plugin):
    name = "resource-fit"
    reason = "insufficient resources"
    checks_free_capacity = True

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.ignored = self._names("ignoredResources")
        self.ignored_groups = self._names("ignoredResourceGroups")

    def _names(self, key: str) -> frozenset[str]:
        value = self.arguments.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PluginArgumentError(
                f"plugin {self.name}: argument {key}: expected a list of names (got {value!r})"
            )
        return frozenset(value)

    def _checked(self, cls: PodClass, state: ClusterState) -> np.ndarray:
        """The resource columns the pod requests that this plugin checks."""
        if not self.ignored and not self.ignored_groups:
            return cls.nonzero
        names = state.axis.names
        return np.array(
            [col for col in cls.nonzero if not self._is_ignored(names[col])], dtype=np.intp
        )

    def _is_ignored(self, name: str) -> bool:
        # Only extended resources can be ignored: named under a domain of their own.
        if "/" not in name or "kubernetes.io/" in name:
            return False
        return name in self.ignored or name.partition("/")[0] in self.ignored_groups

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        free = state.free
        request = cls.request
        cols = self._checked(cls, state)
        if not len(cols):
            return np.ones(len(state.schedulable[rows]), dtype=bool)
        mask = free[:, cols[0]][rows] >= request[cols[0]]
        for col in cols[1:]:
            mask &= free[:, col][rows] >= request[col]
        return mask

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        return [
            (f"insufficient {state.axis.names[col]}", state.free[:, col][rows] < cls.request[col])
            for col in self._checked(cls, state)
        ]
