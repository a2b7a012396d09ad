"""The ``cluster`` fixture: one real control plane for the test session (etcd,
kube-apiserver and kube-controller-manager built by ``make controlplane``), the fault proxy in
front of it, and a clean slate for every test.

Without the built binaries the tests that need them skip, saying why; in CI (``CI`` set) they
fail instead, so a missing build can never pass for a green run."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.k8s.controlplane import ControlPlane, missing_binaries
from tests.k8s.harness import Cluster
from tests.k8s.proxy import FaultProxy


def _unavailable() -> str:
    absent = missing_binaries()
    if not absent:
        return ""
    why = f"the control plane is not built ({', '.join(absent)} missing: run `make controlplane`)"
    if shutil.which("go") is None:
        why += "; no Go toolchain on this machine"
    return why


@contextmanager
def _running(**options: Any) -> Iterator[tuple[ControlPlane, FaultProxy]]:
    why = _unavailable()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="berth-controlplane-"))
    plane = ControlPlane(folder, **options)
    plane.start()
    proxy = FaultProxy(plane.url, plane.pki)
    try:
        yield plane, proxy
    finally:
        proxy.close()
        plane.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _clean(plane: ControlPlane, proxy: FaultProxy) -> Iterator[Cluster]:
    cluster = Cluster(plane, proxy)
    cluster.clean()
    try:
        yield cluster
    finally:
        cluster.clean()


@pytest.fixture(scope="session")
def control_plane() -> Iterator[tuple[ControlPlane, FaultProxy]]:
    with _running() as running:
        yield running


@pytest.fixture
def cluster(control_plane: tuple[ControlPlane, FaultProxy]) -> Iterator[Cluster]:
    with _clean(*control_plane) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def uncached_plane() -> Iterator[tuple[ControlPlane, FaultProxy]]:
    """A second control plane whose API server serves watches from etcd itself (no watch
    cache) and never compacts on its own, so a test's compaction decides what is too old."""
    with _running(apiserver_args=["--watch-cache=false", "--etcd-compaction-interval=0"]) as r:
        yield r


@pytest.fixture
def uncached(uncached_plane: tuple[ControlPlane, FaultProxy]) -> Iterator[Cluster]:
    with _clean(*uncached_plane) as cluster:
        yield cluster
