"""The Kubernetes backend: berth's Scheduler and controllers against a live API server.

Informers list and watch the API into a local cache (``cache.KubeStore``), which converts API
objects with the same manifest converters the simulator's files go through and implements the
object-store protocol the controllers are written against. The serve loop feeds the cache's
changes to the Scheduler, runs sessions, and hands binds and evictions to the binder, which
writes them through the ``pods/binding`` and ``policy/v1`` Eviction subresources. Only the
leader of a ``coordination.k8s.io`` Lease schedules and writes.
"""

import berth.actions  # noqa: F401  (registers the built-in actions and plugins)
import berth.plugins  # noqa: F401
