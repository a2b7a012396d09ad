"""The ``caBundle`` of berth's MutatingWebhookConfiguration, kept equal to the certificate the
pod webhook serves (``berth serve --kruise --webhook-cert``), as Kruise's webhook controller
keeps its configurations' caBundle.

Every replica does it, leader or not, from the same Secret: the first write wins and the
others find the bundle in place. The configuration is read by name every ``PERIOD`` seconds
rather than watched, so the rights are ``get`` and ``patch`` on that one name
(``deploy/kruise/webhook/rbac.yaml``); until the configuration exists (deploy/ applies it once
berth runs) or the rights are granted, each pass finds nothing to do and says so once.

The bundle is the PEM file as given: the API server trusts the certificates it holds, so a
self-signed serving certificate, or a file with its CA after it, verifies (a bundle that holds
the leaf alone pins that certificate).
"""

from __future__ import annotations

import base64
import logging
import threading
from pathlib import Path
from typing import Any

from berth.k8s.client import ApiError, ConnectionLost, KubeClient
from berth.k8s.kinds import Resource

log = logging.getLogger("berth.k8s")

#: The configuration deploy/kruise/webhook/ applies.
CONFIGURATION = "berth-mutating-webhook-configuration"
#: Seconds between two reads of the configuration.
PERIOD = 10.0
MUTATING = Resource(
    "MutatingWebhookConfiguration",
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    False,
)
JSON_PATCH = "application/json-patch+json"


def bundle_patch(configuration: dict[str, Any], bundle: str) -> list[dict[str, Any]]:
    """The JSON Patch that sets the caBundle of every webhook of ``configuration`` that does
    not hold ``bundle`` (base64), each guarded by its name (empty: all hold it)."""
    patch: list[dict[str, Any]] = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        if (webhook.get("clientConfig") or {}).get("caBundle") == bundle:
            continue
        path = f"/webhooks/{index}"
        patch.append({"op": "test", "path": f"{path}/name", "value": webhook.get("name")})
        patch.append({"op": "add", "path": f"{path}/clientConfig/caBundle", "value": bundle})
    return patch


class CaBundleWriter:
    def __init__(
        self,
        client: KubeClient,
        cert: Path,
        *,
        name: str = CONFIGURATION,
        period: float = PERIOD,
    ) -> None:
        self.client = client
        self.bundle = base64.b64encode(cert.read_bytes()).decode()
        self.name = name
        self.period = period
        self._said: int | None = None  # the last status reported, so each is said once
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ca-bundle", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def write(self) -> None:
        """One pass: read the configuration, patch the webhooks whose caBundle differs."""
        path = MUTATING.item(None, self.name)
        try:
            configuration = self.client.request("GET", path)
        except ApiError as exc:
            if exc.status not in (403, 404):
                raise
            if self._said != exc.status:
                self._said = exc.status
                why = "not found" if exc.status == 404 else "not granted (get, patch)"
                log.info("caBundle not written", extra={"configuration": self.name, "why": why})
            return
        patch = bundle_patch(configuration, self.bundle)
        if patch:
            self.client.request("PATCH", path, body=patch, content_type=JSON_PATCH, retry=False)
            log.info("caBundle written", extra={"configuration": self.name})
        self._said = None

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.write()
            except (ApiError, ConnectionLost) as exc:
                log.warning("caBundle not written", extra={"error": str(exc)})
            self._stopping.wait(self.period)
