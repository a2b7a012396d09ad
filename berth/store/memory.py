"""The object store protocol controllers are written against, and the in-process store the
simulator uses.

Controllers never touch ClusterState or the simulator: they watch the store and write to it, so
the same controller can later run against the Kubernetes API. MemoryStore delivers watch events
synchronously, in the order handlers registered and in the order changes were made, which keeps
a simulation deterministic; a handler may itself write to the store (the nested events are
delivered before the outer write returns, as a reconcile loop running to completion would see
them).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Protocol


class WatchEvent(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


Handler = Callable[[WatchEvent, Any], None]


class NotFound(KeyError):
    """No object of that kind and key."""


class AlreadyExists(KeyError):
    """An object of that kind and key is already stored."""


class ObjectStore(Protocol):
    def get(self, kind: str, key: str) -> Any | None: ...
    def list(self, kind: str) -> list[Any]: ...
    def create(self, kind: str, obj: Any) -> None: ...
    def update(self, kind: str, obj: Any) -> None: ...
    def delete(self, kind: str, key: str) -> Any: ...
    def watch(self, kind: str, handler: Handler) -> None: ...


class MemoryStore:
    """Objects by kind and ``namespace/name`` key; objects are the berth dataclasses
    themselves (an update is a notification that the object changed in place).

    As an API server does, it gives each new object that has an empty ``uid`` one (counted,
    so runs repeat) and lets admission hooks change new objects before they are stored.
    """

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, Any]] = {}
        self._watchers: dict[str, list[Handler]] = {}
        self._admission: dict[str, list[Callable[[Any], None]]] = {}
        self._uids = 0

    def get(self, kind: str, key: str) -> Any | None:
        return self._objects.get(kind, {}).get(key)

    def list(self, kind: str) -> list[Any]:
        return list(self._objects.get(kind, {}).values())

    def create(self, kind: str, obj: Any) -> None:
        objects = self._objects.setdefault(kind, {})
        if obj.key in objects:
            raise AlreadyExists(f"{kind} {obj.key} already exists")
        self.admit_object(kind, obj)
        if getattr(obj, "uid", None) == "":
            self._uids += 1
            obj.uid = str(uuid.UUID(int=self._uids))
        objects[obj.key] = obj
        self._notify(kind, WatchEvent.ADDED, obj)

    def update(self, kind: str, obj: Any) -> None:
        if obj.key not in self._objects.get(kind, {}):
            raise NotFound(f"{kind} {obj.key} not found")
        self._objects[kind][obj.key] = obj
        self._notify(kind, WatchEvent.MODIFIED, obj)

    def delete(self, kind: str, key: str) -> Any:
        obj = self._objects.get(kind, {}).pop(key, None)
        if obj is None:
            raise NotFound(f"{kind} {key} not found")
        self._notify(kind, WatchEvent.DELETED, obj)
        return obj

    def watch(self, kind: str, handler: Handler) -> None:
        self._watchers.setdefault(kind, []).append(handler)

    def admit(self, kind: str, hook: Callable[[Any], None]) -> None:
        """Run ``hook`` on every new object of ``kind`` before it is stored."""
        self._admission.setdefault(kind, []).append(hook)

    def admit_object(self, kind: str, obj: Any) -> None:
        """Run the admission hooks on an object that reaches the scheduler without being
        stored (the simulator's plain pods)."""
        for hook in self._admission.get(kind, ()):
            hook(obj)

    def watched(self, kind: str) -> bool:
        """Whether anyone listens to ``kind`` (lets a busy writer skip needless updates)."""
        return bool(self._watchers.get(kind))

    def _notify(self, kind: str, event: WatchEvent, obj: Any) -> None:
        for handler in self._watchers.get(kind, ()):
            handler(event, obj)
