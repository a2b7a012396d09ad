"""Tests assemble schedulers directly, as the simulator and the Kubernetes backend do: the
built-in plugins and actions are registered first.

Tests marked ``from_source`` switch shortcuts of the compiled group off, count its calls or
audit its binds, by patching its modules and classes, or hand its classes stand-ins;
compiled, those call each other directly and take no patch, and check the types they are
given. Where the group runs compiled these tests leave the run, and ``tests/test_native.py``
runs them from source."""

import pytest

import berth.actions  # noqa: F401
import berth.plugins  # noqa: F401
from berth import native


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "from_source: patches the compiled group; runs with its modules from source"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if native.MODE != "compiled":
        return
    moved = [item for item in items if item.get_closest_marker("from_source")]
    if moved:
        items[:] = [item for item in items if not item.get_closest_marker("from_source")]
        config.hook.pytest_deselected(items=moved)
