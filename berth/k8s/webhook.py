"""The mutating admission webhook ``berth serve --kruise`` serves: OpenKruise's pod webhook
(``/mutate-pod``), which injects SidecarSets' sidecars into pods as they are created.

HTTPS on ``--webhook-port`` (9876, Kruise's) with the serving certificate and key given on the
command line; the API server reaches it through ``deploy/kruise/webhook/`` (a Service, or a
``url``) and trusts it through the configuration's ``caBundle``. Each request is an
``admission.k8s.io/v1`` AdmissionReview; the answer is the same AdmissionReview with a
``response``: allowed, with a base64 JSON Patch when sidecars are injected.

- a request for anything but a pod's creation (another resource, an update, a subresource)
  is allowed unchanged, as Kruise skips it;
- a body that is not an AdmissionReview (not JSON, no ``request``, no ``uid``) gets HTTP 400
  and an AdmissionReview denying it with what is wrong;
- a pod berth cannot read is allowed unchanged, with a warning saying why;
- before this replica has synced the SidecarSets it injects from (``berth.k8s.webhook_cache``:
  every replica, leader or standby, answers from a cache of its own), and when the injection
  itself fails, the answer is HTTP 503: a webhook failure, so the configuration's
  ``failurePolicy`` decides (Ignore admits the pod as it is, Fail refuses it).

The server runs aiohttp on an event loop of its own thread; reviews are answered one at a
time, each in milliseconds.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from berth.defaults import WEBHOOK_CERT, WEBHOOK_KEY, WEBHOOK_PORT

log = logging.getLogger("berth.k8s")

MUTATE_POD = "/mutate-pod"
REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")

#: (pod, namespace) → (JSON Patch, warnings).
Admit = Callable[[dict[str, Any], str], tuple[list[dict[str, Any]], list[str]]]


@dataclass(slots=True)
class WebhookOptions:
    port: int = WEBHOOK_PORT  # 0: any free port
    cert: Path = Path(WEBHOOK_CERT)
    key: Path = Path(WEBHOOK_KEY)
    host: str = "0.0.0.0"
    #: The MutatingWebhookConfiguration whose caBundle berth keeps equal to ``cert``
    #: (``berth.k8s.ca_bundle``; None: berth writes none).
    configuration: str | None = None


class WebhookError(ValueError):
    """The webhook cannot serve (its certificate, its port); the message says which."""


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The TLS context of the webhook, or a WebhookError naming the file and what is wrong."""
    for flag, path in (("--webhook-cert", cert), ("--webhook-key", key)):
        try:
            path.read_bytes()
        except OSError as exc:
            raise WebhookError(f"{flag} {path}: cannot read ({exc.strerror or exc})") from None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise WebhookError(
            f"--webhook-cert {cert} / --webhook-key {key}: not a PEM certificate and its "
            f"private key ({exc.reason or exc})"
        ) from None
    return context


# ---------------------------------------------------------------------- reviews


class BadReview(ValueError):
    """A body that is not an AdmissionReview berth can answer; the message says why."""

    def __init__(self, message: str, uid: str = "", version: str = REVIEW_VERSIONS[0]) -> None:
        super().__init__(message)
        self.uid = uid
        self.version = version


def respond(body: bytes, admit: Admit, ready: Callable[[], bool]) -> tuple[int, dict[str, Any]]:
    """The HTTP status and the AdmissionReview that answer one request ``body``."""
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return _refused(BadReview(f"the body is not JSON ({exc})"))
    try:
        version, request = _request(review)
        uid = request["uid"]
        object_ = request.get("object")
        resource = request.get("resource") or {}
        skip = (
            (resource.get("group") or "", resource.get("resource")) != ("", "pods")
            or request.get("operation") != "CREATE"
            or bool(request.get("subResource"))
        )
        if skip:
            return 200, _review(version, {"uid": uid, "allowed": True})
        if not isinstance(object_, dict) or object_.get("kind", "Pod") != "Pod":
            raise BadReview("request.object: expected the Pod being created", uid, version)
    except BadReview as exc:
        return _refused(exc)
    if not ready():
        return _unavailable(version, uid, "berth has not synced its SidecarSets yet")
    try:
        patch, warnings = admit(object_, str(request.get("namespace") or ""))
    except Exception as exc:  # any failure is the webhook's: failurePolicy decides
        log.exception("admission failed", extra={"uid": uid})
        return _unavailable(version, uid, f"sidecar injection failed: {exc}")
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    if warnings:
        response["warnings"] = warnings
    return 200, _review(version, response)


def _request(review: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(review, dict):
        raise BadReview("expected an AdmissionReview object")
    version = review.get("apiVersion")
    if review.get("kind") != "AdmissionReview" or version not in REVIEW_VERSIONS:
        raise BadReview(
            f"expected kind AdmissionReview of {' or '.join(REVIEW_VERSIONS)}, got "
            f"kind {review.get('kind')!r} of {version!r}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview("request: missing (expected the AdmissionRequest)", version=version)
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid: missing (expected a string)", version=version)
    return version, request


def _review(version: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": version, "kind": "AdmissionReview", "response": response}


def _refused(exc: BadReview) -> tuple[int, dict[str, Any]]:
    status = {"code": 400, "message": f"berth webhook: {exc}"}
    return 400, _review(exc.version, {"uid": exc.uid, "allowed": False, "status": status})


def _unavailable(version: str, uid: str, why: str) -> tuple[int, dict[str, Any]]:
    status = {"code": 503, "message": f"berth webhook: {why}"}
    return 503, _review(version, {"uid": uid, "allowed": False, "status": status})


# ---------------------------------------------------------------------- the server


class WebhookServer:
    """HTTPS on its own thread; ``admit`` answers each pod, ``ready`` says whether it may."""

    def __init__(self, options: WebhookOptions, admit: Admit, ready: Callable[[], bool]) -> None:
        self.context = server_context(options.cert, options.key)
        self.admit = admit
        self.ready = ready
        self.socket = socket.socket(socket.AF_INET6 if ":" in options.host else socket.AF_INET)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((options.host, options.port))
        except OSError as exc:
            self.socket.close()
            raise WebhookError(f"--webhook-port {options.port}: cannot listen ({exc})") from None
        self.port = int(self.socket.getsockname()[1])
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webhook", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._started.wait(10)

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self.socket.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post(MUTATE_POD, self._mutate)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.SockSite(self._runner, self.socket, ssl_context=self.context)
        self._loop.run_until_complete(site.start())
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

    async def _mutate(self, request: web.Request) -> web.Response:
        status, review = respond(await request.read(), self.admit, self.ready)
        return web.json_response(review, status=status)
