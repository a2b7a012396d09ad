"""How controllers plug into a backend: what they may ask of it, and the registry a backend
starts them from.

A backend (the simulator, or the Kubernetes backend) implements ``Runtime`` and calls
``start_controllers`` once; every registered controller then watches the store and writes to
it. Controllers register themselves at import (``berth.controllers`` imports them all), so a
backend never names them one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from berth.store import ObjectStore


class Runtime(Protocol):
    """What a controller may ask of the backend it runs in."""

    store: ObjectStore

    def now(self) -> float:
        """The time, in seconds (simulated, or since the backend started)."""
        ...

    def at(self, time: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` at ``time`` (a requeue-after)."""
        ...

    def soon(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once everything that happens at this instant has been handled (a
        work queue's next pass)."""
        ...

    def admit(self, kind: str, hook: Callable[[Any], None]) -> None:
        """Let ``hook`` change each new object of ``kind`` before it is stored (a mutating
        admission webhook)."""
        ...


class Controller(Protocol):
    #: Pod ref (``Pod.ref``) → why this controller deleted the pod, for the outputs.
    deleted: dict[str, str]


ControllerFactory = Callable[[Runtime], Controller]

_REGISTRY: dict[str, ControllerFactory] = {}


def register(name: str) -> Callable[[ControllerFactory], ControllerFactory]:
    """Register a controller factory under ``name`` (decorator)."""

    def add(factory: ControllerFactory) -> ControllerFactory:
        if name in _REGISTRY:
            raise ValueError(f"controller {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory

    return add


def registered() -> list[str]:
    return sorted(_REGISTRY)


def start_controllers(runtime: Runtime) -> list[Controller]:
    """Every registered controller, started against ``runtime``, in name order (which fixes
    the order their watches are called in, so a run stays deterministic)."""
    return [_REGISTRY[name](runtime) for name in registered()]
