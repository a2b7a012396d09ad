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
from pathlib import Path

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


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    why = _unavailable()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="berth-controlplane-"))
    plane = ControlPlane(folder)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def fault_proxy(control_plane: ControlPlane) -> Iterator[FaultProxy]:
    proxy = FaultProxy(control_plane.url, control_plane.pki)
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture
def cluster(control_plane: ControlPlane, fault_proxy: FaultProxy) -> Iterator[Cluster]:
    cluster = Cluster(control_plane, fault_proxy)
    cluster.clean()
    try:
        yield cluster
    finally:
        cluster.clean()
