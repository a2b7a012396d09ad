"""Kueue's manager on the tests' control plane (the launcher of tests/k8s/test_kueue.py): its
CRDs applied, its namespace and certificate Secret made, the manager started on free loopback
ports and stopped, and every Kueue object emptied afterwards. Why it runs with its own
certificate management on is in test_kueue.py's docstring."""

from __future__ import annotations

import base64
import shutil
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from berth.k8s.client import ApiError, KubeClient
from tests.k8s.controlplane import BIN, Component, ControlPlane, free_port
from tests.k8s.harness import wait_for

KUEUE = BIN / "kueue"
CRDS = Path(__file__).resolve().parent / "data" / "kueue"
GROUP = "/apis/kueue.x-k8s.io/v1beta2"
KUEUE_NAMESPACE = "kueue-system"
#: Kueue's defaults for its Secret and webhook Service (internalCertManagement).
SECRET = "kueue-webhook-server-cert"
#: CRDs Kueue's certificate rotator injects a CA into (those present must have a conversion
#: webhook for it to call itself ready).
CONVERTED = {"clusterqueues", "localqueues", "workloads", "cohorts"}
#: Kueue's kinds by plural, emptied (finalizers dropped: the manager is gone by then) after.
KUEUE_KINDS = {
    "workloads": True,
    "localqueues": True,
    "clusterqueues": False,
    "resourceflavors": False,
    "workloadpriorityclasses": False,
    "cohorts": False,
    "admissionchecks": False,
}


def unavailable() -> str:
    if KUEUE.is_file():
        return ""
    why = f"Kueue's manager is not built ({KUEUE} missing: run `make controlplane`)"
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").is_file():
        why += "; no Go toolchain on this machine"
    return why


# ---------------------------------------------------------------------------- the manager


@dataclass
class Manager:
    plane: ControlPlane
    folder: Path
    health: int = 0
    webhook: int = 0
    process: Component | None = None
    namespaces: set[str] = field(default_factory=set)

    @property
    def log(self) -> Path:
        return self.folder / "kueue.log"

    def _exited(self) -> None:
        if self.process is not None and not self.process.alive():
            raise AssertionError(f"kueue exited:\n{self.process.tail(20)}")

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        certs = self.folder / "certs"
        certs.mkdir(exist_ok=True)
        self.health, self.webhook = free_port(), free_port()
        self._apply_crds()
        self.create_namespace(KUEUE_NAMESPACE)
        self.plane.request(
            "POST",
            f"/api/v1/namespaces/{KUEUE_NAMESPACE}/secrets",
            {"metadata": {"name": SECRET}},
        )
        settings = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": KUEUE_NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health}"},
            "metrics": {"bindAddress": f"127.0.0.1:{free_port()}"},
            "webhook": {"host": "127.0.0.1", "port": self.webhook, "certDir": str(certs)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": True},
            "clientConnection": {"qps": 500, "burst": 1000},
            # As Kueue's own manifests set them.
            "controller": {"groupKindConcurrency": {"Job.batch": 5, "Workload.kueue.x-k8s.io": 5}},
            "integrations": {"frameworks": ["batch/job"]},
            # Not needed for quota admission, and each wants more of the cluster (a server
            # port, more CRDs).
            "featureGates": {
                "VisibilityOnDemand": False,
                "MultiKueue": False,
                "TopologyAwareScheduling": False,
            },
        }
        path = self.folder / "config.yaml"
        path.write_text(yaml.safe_dump(settings))
        kubeconfig = self.plane.write_kubeconfig("admin")
        self.process = Component(
            "kueue", [f"--config={path}", f"--kubeconfig={kubeconfig}"], self.log
        )
        self.process.start()
        self._mount_certificate(certs)
        wait_for(self._ready, timeout=60)

    def _apply_crds(self) -> None:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        names = []
        for file in sorted(CRDS.glob("*.yaml")):
            crd = yaml.safe_load(file.read_text())
            if crd["spec"]["names"]["plural"] in CONVERTED:
                crd["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "conversionReviewVersions": ["v1"],
                        "clientConfig": {"url": f"https://127.0.0.1:{self.webhook}/convert"},
                    },
                }
            self.plane.request("POST", path, crd)
            names.append(crd["metadata"]["name"])

        def established() -> bool:
            for name in names:
                conditions = (self.plane.request("GET", f"{path}/{name}").get("status") or {}).get(
                    "conditions"
                ) or []
                if not any(
                    c["type"] == "Established" and c["status"] == "True" for c in conditions
                ):
                    return False
            return True

        wait_for(established, timeout=30)

    def create_namespace(self, name: str) -> None:
        try:
            self.plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        except urllib.error.HTTPError as exc:
            if exc.code != 409:
                raise
        self.namespaces.add(name)

    def _mount_certificate(self, certs: Path) -> None:
        """What a kubelet does for Kueue's Pod: the Secret its rotator fills, as files."""
        path = f"/api/v1/namespaces/{KUEUE_NAMESPACE}/secrets/{SECRET}"

        def filled() -> bool:
            self._exited()
            data = self.plane.request("GET", path).get("data") or {}
            if "tls.crt" not in data or "tls.key" not in data:
                return False
            for name in ("tls.crt", "tls.key"):
                (certs / name).write_bytes(base64.b64decode(data[name]))
            return True

        wait_for(filled, timeout=60)

    def _ready(self) -> bool:
        self._exited()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        self.process = None

    def remove_everything(self, admin: KubeClient) -> None:
        """Kueue's objects (their finalizers dropped: the manager is gone), its CRDs (which
        take the objects with them), the namespaces made here."""
        held = []
        for plural, namespaced in KUEUE_KINDS.items():
            try:
                items = admin.request("GET", f"{GROUP}/{plural}").get("items") or []
            except ApiError:
                continue
            for item in items:
                meta = item["metadata"]
                if meta.get("finalizers"):
                    where = f"namespaces/{meta['namespace']}/" if namespaced else ""
                    held.append(f"{GROUP}/{where}{plural}/{meta['name']}")
        release = {"metadata": {"finalizers": None}}
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda at: quietly(admin, "PATCH", at, release, merge=True), held))
        for file in sorted(CRDS.glob("*.yaml")):
            name = yaml.safe_load(file.read_text())["metadata"]["name"]
            quietly(
                admin, "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            )
        for namespace in sorted(self.namespaces):
            quietly(admin, "DELETE", f"/api/v1/namespaces/{namespace}")


def quietly(admin: KubeClient, method: str, path: str, body: Any = None, merge: bool = False):
    try:
        if merge:
            admin.request(method, path, body=body, content_type="application/merge-patch+json")
        else:
            admin.request(method, path, body=body)
    except ApiError as exc:
        if exc.status not in (404, 409):
            raise
