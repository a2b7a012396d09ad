"""Object stores: where controllers read and write objects (see ``memory``)."""

from berth.store.memory import AlreadyExists, MemoryStore, NotFound, ObjectStore, WatchEvent

__all__ = ["AlreadyExists", "MemoryStore", "NotFound", "ObjectStore", "WatchEvent"]
