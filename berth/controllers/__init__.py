"""Reconcile loops that turn workload objects into pods, through the object store.

Importing the package registers every controller (``runtime.register``); a backend starts them
all with ``start_controllers``.
"""

from berth.controllers import (  # noqa: F401  (each registers its controller)
    broadcastjob,
    cloneset,
    deployment,
    job,
    jobset,
    kube_job,
    leaderworkerset,
    replicaset,
    sidecarset,
    statefulset,
)
from berth.controllers.runtime import Controller, Runtime, register, start_controllers

__all__ = ["Controller", "Runtime", "register", "start_controllers"]
