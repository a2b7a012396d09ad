"""The ``cluster`` fixture: a fresh API emulator per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.k8s.emulator import EmulatorThread
from tests.k8s.harness import Cluster


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    emulator = EmulatorThread()
    try:
        yield Cluster(emulator)
    finally:
        emulator.close()
