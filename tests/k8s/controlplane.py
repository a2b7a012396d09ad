"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, and optionally
kube-controller-manager and kube-scheduler, built from their Go modules by ``make
controlplane`` (controlplane/ pins the release) and started here with generated certificates.

The test fixtures start one per test session; ``make cluster`` (``python -m
tests.k8s.controlplane``) starts one for a person and prints how to reach it. Once the API
answers, deploy/ is applied (namespace, CRDs, RBAC) and a token is made for berth's own
service account, so berth runs with exactly the rights deploy/rbac.yaml grants it.

Settings that differ from a production cluster, each for a reason:

- etcd runs with ``--unsafe-no-fsync``: its data is thrown away after the run.
- the admission plugin TaintNodesByCondition is off: it taints every new node
  ``not-ready:NoSchedule`` until the node lifecycle controller sees it Ready, a wait of
  seconds per node that says nothing about berth. The node lifecycle controller is not run
  either (the fake kubelet keeps Leases and Ready conditions all the same).
- every API version is served (``api/all=true``) and the feature gates of the APIs later
  work needs (the Workload API) are on.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s_client

from tests.k8s.certs import make_certificates

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("BERTH_CONTROLPLANE_BIN", ROOT / "build" / "controlplane" / "bin"))
DEPLOY = ROOT / "deploy"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
FEATURE_GATES = "GenericWorkload=true"
#: The controllers the suite relies on: default service accounts (pods need one), PDB status
#: (disruption), owner-reference cascades (garbagecollector), namespace deletion, and the DRA
#: claims made from pods' ResourceClaimTemplates and freed when their pods go (resourceclaim).
CONTROLLERS = "serviceaccount,disruption,garbagecollector,namespace,resourceclaim-controller"
BERTH_ACCOUNT = ("berth-system", "berth")
PR_SET_PDEATHSIG = 1


def missing_binaries() -> list[str]:
    return [name for name in COMPONENTS if not (BIN / name).is_file()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child: be sent SIGTERM when the process that started it ends, however it ends
    (a test run killed mid-way must not leave a control plane behind)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # not Linux: stop() still ends it on an orderly exit


class StartError(RuntimeError):
    """A component did not come up; the message ends with the last lines of its log."""


@dataclass
class Component:
    name: str
    args: list[str]
    log: Path
    process: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(BIN / self.name), *self.args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, kill: bool = False) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


@dataclass
class ControlPlane:
    """etcd and kube-apiserver (and, when asked, the controller manager and the scheduler) in
    ``folder``: certificates in ``pki/``, logs in ``logs/``, kubeconfigs beside them."""

    folder: Path
    controllers: str = CONTROLLERS
    scheduler: bool = False
    apiserver_args: list[str] = field(default_factory=list)
    etcd_port: int = 0
    port: int = 0
    components: dict[str, Component] = field(default_factory=dict)
    berth_token: str = ""
    _admin_tls: ssl.SSLContext | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def pki(self) -> Path:
        return self.folder / "pki"

    # ------------------------------------------------------------------ start and stop

    def start(self, timeout: float = 120.0) -> None:
        absent = missing_binaries()
        if absent:
            raise StartError(f"not built: {', '.join(absent)} in {BIN} (run `make controlplane`)")
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        make_certificates(self.pki)
        self.etcd_port, self.port = free_port(), free_port()
        self._add_etcd()
        self._add_apiserver()
        try:
            for name in ("etcd", "kube-apiserver"):
                self.components[name].start()
                self._wait(name, timeout)
            self.write_kubeconfig("admin")
            if self.controllers:
                self._add_client_component("kube-controller-manager", self._kcm_args())
            if self.scheduler:
                self._add_client_component("kube-scheduler", self._scheduler_args())
            self.apply(sorted(DEPLOY.glob("namespace*.yaml")))
            self.apply(sorted((DEPLOY / "crds").glob("*.yaml")))
            self.apply([DEPLOY / "rbac.yaml"])
            self.apply(sorted((DEPLOY / "kruise").glob("*.yaml")))  # for serve --kruise
            self.apply(sorted((DEPLOY / "kubeflow").glob("*.yaml")))  # for serve --kubeflow
            self.apply(sorted((DEPLOY / "paddle").glob("*.yaml")))  # for serve --paddle
            self.apply(sorted((DEPLOY / "lws").glob("*.yaml")))  # for serve --lws
            self.apply(sorted((DEPLOY / "jobset").glob("*.yaml")))  # for serve --jobset
            self._wait_for_crds(timeout)
            self.berth_token = self._token(*BERTH_ACCOUNT)
            self.write_berth_kubeconfig(self.folder / "berth.kubeconfig")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for name in reversed(list(self.components)):
            self.components[name].stop()

    def restart(self, name: str, kill: bool = False, down: float = 0.0) -> None:
        """Stop one component (SIGKILL when ``kill``), wait ``down`` seconds, start it again
        and wait until it answers."""
        component = self.components[name]
        component.stop(kill=kill)
        time.sleep(down)
        component.start()
        if name in ("etcd", "kube-apiserver"):
            self._wait(name, 120)

    def compact(self) -> int:
        """Compact etcd's history up to its current revision (as the API server does every
        five minutes); the revision compacted to."""

        def call(endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
            request = urllib.request.Request(
                f"{self.etcd_url}/v3/kv/{endpoint}",
                data=json.dumps(body).encode(),
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())

        revision = int(call("range", {"key": "AA=="})["header"]["revision"])
        call("compaction", {"revision": str(revision), "physical": True})
        return revision

    # ------------------------------------------------------------------ the components

    def _add_etcd(self) -> None:
        peer = free_port()
        args = [
            "--name=berth-test",
            f"--data-dir={self.folder / 'etcd'}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=berth-test=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]
        self._component("etcd", args)

    def _add_apiserver(self) -> None:
        pki = self.pki
        args = [
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--tls-cert-file={pki / 'serving.crt'}",
            f"--tls-private-key-file={pki / 'serving.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=Node,RBAC",
            "--disable-admission-plugins=TaintNodesByCondition",
            "--runtime-config=api/all=true",
            f"--feature-gates={FEATURE_GATES}",
            "--allow-privileged=true",
            "--profiling=false",
            "--endpoint-reconciler-type=none",
            "--max-requests-inflight=3000",
            "--max-mutating-requests-inflight=1000",
            "--v=1",
            *self.apiserver_args,
        ]
        self._component("kube-apiserver", args)

    def _kcm_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.folder / 'controller-manager.kubeconfig'}",
            f"--controllers={self.controllers}",
            f"--root-ca-file={self.pki / 'ca.crt'}",
            f"--service-account-private-key-file={self.pki / 'sa.key'}",
            "--use-service-account-credentials=true",  # each controller its own RBAC role
            "--leader-elect=false",
            "--secure-port=0",
            "--kube-api-qps=1000",
            "--kube-api-burst=2000",
            "--v=1",
        ]

    def _scheduler_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.folder / 'scheduler.kubeconfig'}",
            "--leader-elect=false",
            "--secure-port=0",
            "--v=1",
        ]

    def _component(self, name: str, args: list[str]) -> Component:
        component = Component(name, args, self.folder / "logs" / f"{name}.log")
        self.components[name] = component
        return component

    def _add_client_component(self, name: str, args: list[str]) -> None:
        stem = "controller-manager" if name == "kube-controller-manager" else "scheduler"
        self.write_kubeconfig(stem)
        self._component(name, args).start()

    # ------------------------------------------------------------------ waiting

    def _answers(self, name: str) -> bool:
        """Whether etcd's /health or kube-apiserver's /readyz says it is up."""
        try:
            if name == "etcd":
                urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2).read()
            else:
                self._send("GET", "/readyz", None)
        except Exception:  # noqa: BLE001 - not up yet, whatever the reason
            return False
        return True

    def _wait(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        component = self.components[name]
        while time.monotonic() < deadline:
            if self._answers(name):
                return
            if not component.alive():
                raise StartError(f"{name} exited:\n{component.tail()}")
            time.sleep(0.1)
        raise StartError(f"{name} did not answer in {timeout:.0f} s:\n{component.tail()}")

    def _wait_for_crds(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        while time.monotonic() < deadline:
            crds = self.request("GET", path)["items"]
            if all(
                any(
                    c["type"] == "Established" and c["status"] == "True"
                    for c in (crd.get("status") or {}).get("conditions") or []
                )
                for crd in crds
            ):
                return
            time.sleep(0.1)
        raise StartError("the CRDs under deploy/crds were not established in time")

    # ------------------------------------------------------------------ clients

    def configuration(self, identity: str = "admin") -> k8s_client.Configuration:
        """An official-client configuration: ``admin`` (system:masters) or ``berth`` (its
        service account's token)."""
        configuration = k8s_client.Configuration()
        configuration.host = self.url
        configuration.ssl_ca_cert = str(self.pki / "ca.crt")
        if identity == "berth":
            configuration.api_key = {"authorization": f"Bearer {self.berth_token}"}
        else:
            configuration.cert_file = str(self.pki / f"{identity}.crt")
            configuration.key_file = str(self.pki / f"{identity}.key")
        return configuration

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One admin request, its JSON answer (for set-up; tests use the harness's client)."""
        raw = self._send(method, path, body)
        return json.loads(raw) if raw else None

    def _send(self, method: str, path: str, body: Any) -> bytes:
        if self._admin_tls is None:
            self._admin_tls = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
            self._admin_tls.load_cert_chain(
                str(self.pki / "admin.crt"), str(self.pki / "admin.key")
            )
        url = self.url + path
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, context=self._admin_tls, timeout=30) as answer:
            return answer.read()

    def apply(self, files: Iterable[Path]) -> None:
        """Create every document of ``files`` as admin (a Deployment of berth itself is
        skipped: nothing here runs containers)."""
        for path in files:
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc or doc.get("kind") == "Deployment":
                    continue
                self.request("POST", collection_path(doc), doc)

    def _token(self, namespace: str, name: str) -> str:
        answer = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 86400},
            },
        )
        return str(answer["status"]["token"])

    def _kubeconfig(self, user: dict[str, str], server: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "berth-test",
                    "cluster": {
                        "server": server,
                        "certificate-authority": str(self.pki / "ca.crt"),
                    },
                }
            ],
            "users": [{"name": "user", "user": user}],
            "contexts": [
                {"name": "berth-test", "context": {"cluster": "berth-test", "user": "user"}}
            ],
            "current-context": "berth-test",
        }

    def write_kubeconfig(self, stem: str) -> Path:
        user = {
            "client-certificate": str(self.pki / f"{stem}.crt"),
            "client-key": str(self.pki / f"{stem}.key"),
        }
        path = self.folder / f"{stem}.kubeconfig"
        path.write_text(yaml.safe_dump(self._kubeconfig(user, self.url)))
        return path

    def write_berth_kubeconfig(self, path: Path, server: str = "") -> Path:
        """A kubeconfig for berth's service account, to the API server or to ``server`` (the
        fault proxy in front of it)."""
        config = self._kubeconfig({"token": self.berth_token}, server or self.url)
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path


def collection_path(doc: dict[str, Any]) -> str:
    """Where a document is created: the kinds deploy/ holds, and those the tests post."""
    group_version = doc["apiVersion"]
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    plural = {
        "Namespace": "namespaces",
        "ServiceAccount": "serviceaccounts",
        "ConfigMap": "configmaps",
        "ClusterRole": "clusterroles",
        "ClusterRoleBinding": "clusterrolebindings",
        "Role": "roles",
        "RoleBinding": "rolebindings",
        "CustomResourceDefinition": "customresourcedefinitions",
        "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
        "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
        "Job": "jobs",
        "Pod": "pods",
        "PodGroup": "podgroups",
        "LocalQueue": "localqueues",
    }[doc["kind"]]
    namespace = doc.get("metadata", {}).get("namespace")
    if namespace:
        return f"{base}/namespaces/{namespace}/{plural}"
    return f"{base}/{plural}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make cluster",
        description="Start etcd, kube-apiserver and kube-controller-manager on loopback, "
        "apply deploy/, and wait until interrupted.",
    )
    parser.add_argument(
        "--dir", default="", help="working folder (default: a new temporary one, removed at exit)"
    )
    parser.add_argument("--scheduler", action="store_true", help="also run the real kube-scheduler")
    args = parser.parse_args(argv)
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="berth-cluster-"))
    plane = ControlPlane(folder, scheduler=args.scheduler)
    try:
        plane.start()
    except StartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"kube-apiserver: {plane.url}")
    print(f"admin:  export KUBECONFIG={folder / 'admin.kubeconfig'}")
    print(f"berth:  berth serve --kubeconfig {folder / 'berth.kubeconfig'}")
    print(f"logs:   {folder / 'logs'}")
    print("Ctrl-C stops it.")
    try:
        while all(c.alive() for c in plane.components.values()):
            time.sleep(1)
        print("a component exited; see its log", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        plane.stop()
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
