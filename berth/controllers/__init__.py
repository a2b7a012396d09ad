"""Reconcile loops that turn workload objects into pods, through the object store.

Importing the package registers every controller (``runtime.register``); a backend starts them
all with ``start_controllers``.
"""

from berth.controllers import job, replicaset  # noqa: F401  (each registers its controller)
from berth.controllers.runtime import Controller, Runtime, register, start_controllers

__all__ = ["Controller", "Runtime", "register", "start_controllers"]
