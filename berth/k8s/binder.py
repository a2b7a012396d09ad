"""Binds and evictions through the API.

Binds go out concurrently so a scheduling cycle never waits for them: the Scheduler has already
accounted the pod on its node (the assumed placement, as kube-scheduler's cache keeps it) and
the watch confirms it later. Each outcome comes back to the serve loop as a ``BindResult`` on
its event queue; a failed bind is undone there and the pod requeued.

The binds use aiohttp on an event loop of their own, with the address, TLS material and
credentials of the official client's configuration (its ``param_serialize`` builds the auth
headers, so token refresh hooks apply; they are reused for ``AUTH_REFRESH`` seconds). Measured
on the development machine against an API emulator, threads over the official client's urllib3
pool top out near 900 binds/s whatever their number (the GIL), an asyncio client past
3,000/s: see docs/kubernetes.md.

Before a bind, the annotation hooks run (``annotate``): each returns annotations the pod must
carry before it lands on its node, which are patched onto the pod first, as the node agent (a
device plugin) reads them when the pod starts. The GPU devices a session chose
(``berth.io/gpu-devices``) are always written this way; CPU sets can join the same way.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from berth.api.objects import Pod
from berth.cluster.devices import GPU_DEVICES_ANNOTATION
from berth.k8s.client import JSON, MERGE_PATCH, ApiError, ConnectionLost, KubeClient, api_error
from berth.k8s.kinds import POD

log = logging.getLogger("berth.k8s")

#: How long a bind reuses the auth headers the official client built (a rotated token is
#: read again within this many seconds).
AUTH_REFRESH = 5.0

#: A hook: the annotations to write on ``pod`` before it is bound to ``node`` (may be empty).
AnnotationHook = Callable[[Pod, str], dict[str, str]]


@dataclass(slots=True)
class BindResult:
    pod: Pod
    node: str
    error: ApiError | ConnectionLost | None
    seconds: float  # how long the API calls took


def gpu_devices(pod: Pod, node: str) -> dict[str, str]:
    """The devices the session placed the pod on (recorded on the pod when it was bound)."""
    devices = pod.annotations.get(GPU_DEVICES_ANNOTATION)
    return {GPU_DEVICES_ANNOTATION: devices} if devices else {}


def binding_body(pod: Pod, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def eviction_body(pod: Pod) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
    }


class Binder:
    def __init__(
        self,
        client: KubeClient,
        results: queue.Queue,
        *,
        concurrency: int = 16,
        annotate: list[AnnotationHook] | None = None,
    ) -> None:
        self.client = client
        self.results = results
        self.annotate: list[AnnotationHook] = [gpu_devices, *(annotate or [])]
        self.concurrency = concurrency
        self.loop = asyncio.new_event_loop()
        self._work: asyncio.Queue | None = None
        self._ready = threading.Event()
        self._headers: dict[str, tuple[float, dict[str, str]]] = {}
        self._thread = threading.Thread(target=self._run, name="binder", daemon=True)
        self._thread.start()
        self._ready.wait()

    def bind(self, binds: list[tuple[Pod, str]]) -> None:
        """Queue a session's binds (one wake-up of the binder's loop for all); each one's
        BindResult arrives on the results queue."""
        if binds:
            self.loop.call_soon_threadsafe(self._queue_all, binds)

    def _queue_all(self, binds: list[tuple[Pod, str]]) -> None:
        for item in binds:
            self._work.put_nowait(item)  # type: ignore[union-attr]

    def stop(self) -> None:
        for _ in range(self.concurrency):
            self.loop.call_soon_threadsafe(self._work.put_nowait, None)  # type: ignore[union-attr]
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())
        self.loop.close()

    async def _main(self) -> None:
        self._work = asyncio.Queue()
        configuration = self.client.api.configuration
        connector = aiohttp.TCPConnector(limit=self.concurrency, ssl=_ssl_context(configuration))
        timeout = aiohttp.ClientTimeout(total=self.client.timeout)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            self._ready.set()
            await asyncio.gather(*(self._worker(session) for _ in range(self.concurrency)))

    async def _worker(self, session: aiohttp.ClientSession) -> None:
        while (item := await self._work.get()) is not None:  # type: ignore[union-attr]
            pod, node = item
            started = time.perf_counter()
            error: ApiError | ConnectionLost | None = None
            try:
                annotations: dict[str, str] = {}
                for hook in self.annotate:
                    annotations.update(hook(pod, node))
                if annotations:
                    patch = {"metadata": {"annotations": annotations}}
                    path = POD.item(pod.namespace, pod.name)
                    await self._send(session, "PATCH", path, patch, MERGE_PATCH)
                    pod.annotations.update(annotations)
                path = POD.item(pod.namespace, pod.name, "binding")
                await self._send(session, "POST", path, binding_body(pod, node), JSON)
            except (ApiError, ConnectionLost) as exc:
                error = exc
            self.results.put(BindResult(pod, node, error, time.perf_counter() - started))

    async def _send(
        self, session: aiohttp.ClientSession, method: str, path: str, body: dict, kind: str
    ) -> None:
        """One request, retried like KubeClient.request (5xx, 429, broken connections)."""
        attempt = 0
        while True:
            url, headers = self._request_parts(method, path, kind)
            try:
                async with session.request(
                    method, url, headers=headers, data=orjson.dumps(body)
                ) as response:
                    data = await response.read()
                    if 200 <= response.status <= 299:
                        return
                    error: ApiError | ConnectionLost = api_error(response.status, data)
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                error = ConnectionLost(f"{method} {path}: {exc}")
            retriable = isinstance(error, ConnectionLost) or error.retriable
            if not retriable or attempt >= self.client.retries:
                raise error
            self.client.count_retry(
                "connection" if isinstance(error, ConnectionLost) else str(error.status)
            )
            await asyncio.sleep(self.client.delay(attempt))
            attempt += 1

    def _request_parts(self, method: str, path: str, kind: str) -> tuple[str, dict[str, str]]:
        """A request's URL and headers. The official client builds the headers (so its token
        refresh hooks apply), at most once per AUTH_REFRESH seconds per content type: building
        them costs as much as the rest of a bind."""
        now = time.monotonic()
        cached = self._headers.get(kind)
        if cached is None or now >= cached[0]:
            _, _, headers, _, _ = self.client.api.param_serialize(
                method,
                path,
                header_params={"Content-Type": kind, "Accept": JSON},
                auth_settings=["BearerToken"],
            )
            cached = self._headers[kind] = (now + AUTH_REFRESH, headers)
        return self.client.api.configuration.host + path, cached[1]

    def evict(self, pod: Pod) -> ApiError | ConnectionLost | None:
        """Evict now (evictions are few and their outcome decides what the controllers hear):
        None when the API accepted it or the pod is already gone; the error otherwise, e.g.
        429 when a PodDisruptionBudget forbids it."""
        try:
            self.client.request(
                "POST",
                POD.item(pod.namespace, pod.name, "eviction"),
                body=eviction_body(pod),
                retry=False,
            )
        except ApiError as exc:
            if exc.status == 404:
                return None
            return exc
        except ConnectionLost as exc:
            return exc
        return None


def _ssl_context(configuration: Any) -> ssl.SSLContext | bool:
    """TLS as the official client's configuration asks for it (None for plain HTTP)."""
    if not str(configuration.host).startswith("https"):
        return False
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
