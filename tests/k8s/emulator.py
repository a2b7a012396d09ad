"""A Kubernetes API emulator for berth's tests and benchmark, over real HTTP.

Built on kmock's Kubernetes scaffold (HTTP server, request parsing, discovery, Status errors, and
its DSL, so a test can inject any response ahead of the emulated ones: ``api[...] << 409``).
The object state is kept here rather than in kmock's ``KubernetesEmulator`` because berth needs
what that one does not model: resourceVersions (list, watch-from, 410 Gone once the history is
compacted, 409 Conflict on a stale PUT), PUT, the ``status``, ``binding`` and ``eviction``
subresources, PodDisruptionBudgets, and lookups that do not scan every object (kmock's store and
request history are scanned on every request, which takes over 100 ms per request at 1,000
objects). What it still does not model is listed in docs/kubernetes.md.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import aiohttp.web
import attrs
import kmock

_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)

ResourceKey = tuple[str, str, str]  # group, version, plural
ObjectKey = tuple[str, str]  # namespace ("" when cluster-scoped), name
PDB: ResourceKey = ("policy", "v1", "poddisruptionbudgets")
#: Resources whose status is written only through ``/status`` (Volcano's PodGroup CRD has no
#: status subresource, so a PUT of a PodGroup replaces its status too, and ``/status`` is 404).
NO_STATUS_SUBRESOURCE = {("scheduling.volcano.sh", "v1beta1", "podgroups")}


def _status(code: int, reason: str, message: str) -> kmock.KubernetesError:
    """A Status answer (raised: kmock renders errors as Kubernetes Status objects)."""
    return kmock.KubernetesError(status=code, reason=reason, message=message, details={})


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _matches(selector: dict, labels: dict) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        value, values = labels.get(req["key"]), req.get("values") or []
        op = req["operator"]
        if (
            (op == "In" and value not in values)
            or (op == "NotIn" and value in values)
            or (op == "Exists" and value is None)
            or (op == "DoesNotExist" and value is not None)
        ):
            return False
    return True


@attrs.define(kw_only=True)
class ApiEmulator(kmock.KubernetesScaffold):
    """Objects by resource and key; every write stamps a cluster-wide resourceVersion."""

    #: How many past events a watch can resume from; older resourceVersions get 410 Gone.
    history_size: int = 100_000
    #: Requests kept for kmock's assertions (it scans them all on every request).
    keep_requests: int = 1
    #: Serve straight from aiohttp, skipping kmock's request parsing and reaction matching
    #: (for the benchmark: kmock's per-request work caps the emulator near 450 requests/s on
    #: the development machine). Injected answers still apply; kmock DSL reactions do not.
    direct: bool = False
    #: Seconds an evicted pod stays, terminating (deletionTimestamp set, its phase as it was),
    #: before it is gone: a kubelet honouring terminationGracePeriodSeconds. 0: gone at once.
    eviction_grace: float = 0.0

    store: dict[ResourceKey, dict[ObjectKey, dict]] = attrs.field(
        factory=lambda: defaultdict(dict), init=False
    )
    revision: int = attrs.field(default=0, init=False)
    history: dict[ResourceKey, deque] = attrs.field(factory=dict, init=False)
    #: The oldest resourceVersion still in every history (a watch from before it gets 410).
    horizon: int = attrs.field(default=0, init=False)
    watchers: dict[ResourceKey, list[asyncio.Queue]] = attrs.field(
        factory=lambda: defaultdict(list), init=False
    )
    #: Binding posts per pod key (accepted and refused), to check nothing is bound twice.
    binds: dict[str, int] = attrs.field(factory=lambda: defaultdict(int), init=False)
    evictions: list[str] = attrs.field(factory=list, init=False)
    #: Responses to give instead of the emulated ones: (method, path regex, status, reason,
    #: times left, action run first). See ``inject``.
    injected: list[list[Any]] = attrs.field(factory=list, init=False)
    #: Every request served: (method or WATCH, path), for checking what a client needs.
    log: list[tuple[str, str]] = attrs.field(factory=list, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.fallback[re.compile(r"/api/v1/.+|/apis/[^/]+/[^/]+/.+")] << self._serve

    # ------------------------------------------------------------------ state helpers

    def put(self, resource: ResourceKey, obj: dict, event: str = "ADDED") -> dict:
        """Store ``obj`` with a new resourceVersion and tell the watchers."""
        self.revision += 1
        # A fresh top level and metadata: events already queued keep the version they had.
        obj = {**obj, "metadata": dict(obj.get("metadata") or {})}
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.revision)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", _now())
        key = (meta.get("namespace") or "", meta["name"])
        if event == "DELETED":
            self.store[resource].pop(key, None)
        else:
            self.store[resource][key] = obj
        self._emit(resource, {"type": event, "object": obj})
        return obj

    def _emit(self, resource: ResourceKey, event: dict) -> None:
        history = self.history.setdefault(resource, deque())
        history.append((self.revision, event))
        while len(history) > self.history_size:
            self.horizon = max(self.horizon, history.popleft()[0])
        for queue in self.watchers[resource]:
            queue.put_nowait(event)

    def compact(self, skip: int = 0) -> None:
        """Forget every past event, as etcd compaction does: older watches get 410 Gone.
        ``skip`` moves the revision on as well (a server restored from a backup), so even a
        watch from the latest resourceVersion must relist."""
        self.history.clear()
        self.revision += skip
        self.horizon = self.revision

    def drop_watches(self) -> None:
        """End every open watch stream (a dropped connection, from the client's side)."""
        for queues in self.watchers.values():
            for queue in queues:
                queue.put_nowait(None)

    def inject(
        self,
        method: str,
        path: str,
        status: int,
        reason: str = "Injected",
        times: int = 1,
        before: Any = None,
    ) -> None:
        """Answer the next ``times`` requests of ``method`` on paths matching ``path`` with
        ``status`` (for a watch: an ERROR event of that code), after running ``before()``
        (e.g. another scheduler binding the pod first). The answers the emulator cannot
        produce by itself: conflicts, server errors, an expired resourceVersion."""
        self.injected.append([method, re.compile(path), status, reason, times, before])

    def _injected(self, method: str, path: str, is_watch: bool) -> Any:
        for entry in self.injected:
            verb, pattern, status, reason, times, before = entry
            if times <= 0 or verb != method or not pattern.search(path):
                continue
            if is_watch != (verb == "WATCH"):
                continue
            entry[4] -= 1
            if before is not None:
                before()
            return status, reason
        return None

    def objects(self, group: str, version: str, plural: str) -> list[dict]:
        return list(self.store[(group, version, plural)].values())

    def get(self, group: str, version: str, plural: str, namespace: str, name: str) -> dict | None:
        return self.store[(group, version, plural)].get((namespace, name))

    # ------------------------------------------------------------------ serving

    async def __call__(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if not self.direct:
            return await super().__call__(raw)
        text = await raw.read()
        try:
            answer = self._answer(
                raw.method, raw.path, raw.query, json.loads(text) if text else None
            )
            if not inspect.isasyncgen(answer):
                return aiohttp.web.json_response(answer)
        except kmock.KubernetesError as exc:
            status = {
                "kind": "Status",
                "code": exc.status,
                "reason": exc.reason,
                "message": exc.message,
            }
            return aiohttp.web.json_response(status, status=exc.status)
        stream = aiohttp.web.StreamResponse()
        await stream.prepare(raw)
        try:
            async for item in answer:
                if item != b"":
                    await stream.write(json.dumps(item).encode() + b"\n")
            await stream.write_eof()
        except ConnectionError:
            pass
        return stream

    async def _handle(self, request: kmock.Request) -> Any:
        if len(self._requests) > self.keep_requests:
            del self._requests[: -self.keep_requests]
        return await super()._handle(request)

    async def _serve(self, request: kmock.Request) -> Any:
        method = request.method.value if request.method else "GET"
        return self._answer(method, request.url.path, request.params, request.data)

    def _answer(self, method: str, path: str, params: Any, body: Any) -> Any:
        match = _PATH.match(path)
        if match is None:
            raise _status(404, "NotFound", f"no such path {path}")
        parts = match.groupdict()
        resource = (parts["group"] or "", parts["core"] or parts["version"], parts["plural"])
        namespace, name, sub = parts["namespace"] or "", parts["name"], parts["sub"]
        is_watch = params.get("watch") in ("true", "1")
        self.log.append(("WATCH" if is_watch else method, path))
        if method == "POST" and sub == "binding":
            self.binds[f"{namespace}/{name}"] += 1  # every attempt, injected answers included
        injected = self._injected("WATCH" if is_watch else method, path, is_watch)
        if injected is not None:
            if is_watch:
                return self._error_stream(*injected)
            raise _status(injected[0], injected[1], f"injected {injected[0]}")
        if method == "GET" and name is None:
            if is_watch:
                return self._watch(resource, namespace, params)
            return self._list(resource, namespace)
        if method == "POST" and name is None:
            return self._create(resource, namespace, body)
        if name is None:
            raise _status(405, "MethodNotAllowed", f"{method} on a collection")
        current = self.store[resource].get((namespace, name))
        if method == "POST" and sub == "binding":
            return self._bind(resource, current, namespace, name, body)
        if method == "POST" and sub == "eviction":
            return self._evict(resource, current, namespace, name)
        if current is None:
            raise _status(404, "NotFound", f"{parts['plural']} {name!r} not found")
        if sub == "status" and resource in NO_STATUS_SUBRESOURCE:
            raise _status(404, "NotFound", f"{parts['plural']} has no status subresource")
        if method == "GET":
            return current
        if method == "DELETE":
            self.put(resource, current, "DELETED")
            return current
        if method == "PATCH":
            patch = body if sub != "status" else {"status": (body or {}).get("status")}
            updated = merge_patch(current, patch)
            return self.put(resource, updated, "MODIFIED")
        if method == "PUT":
            given = (body.get("metadata") or {}).get("resourceVersion")
            if given and given != current["metadata"]["resourceVersion"]:
                raise _status(
                    409,
                    "Conflict",
                    f"Operation cannot be fulfilled on {parts['plural']} {name!r}: the object "
                    "has been modified; please apply your changes to the latest version",
                )
            if sub == "status":
                updated = {**current, "status": body.get("status")}
            elif resource in NO_STATUS_SUBRESOURCE:
                updated = dict(body)
            else:
                updated = {**body, "status": current.get("status", body.get("status"))}
                updated["metadata"] = {**current["metadata"], **body.get("metadata", {})}
            return self.put(resource, updated, "MODIFIED")
        raise _status(405, "MethodNotAllowed", method)

    def _list(self, resource: ResourceKey, namespace: str) -> Any:
        items = [
            obj for (ns, _), obj in self.store[resource].items() if not namespace or ns == namespace
        ]
        return {"kind": "List", "metadata": {"resourceVersion": str(self.revision)}, "items": items}

    def _create(self, resource: ResourceKey, namespace: str, body: Any) -> Any:
        meta = body.setdefault("metadata", {})
        if namespace:
            meta["namespace"] = namespace
        key = (meta.get("namespace") or "", meta.get("name"))
        if key in self.store[resource]:
            raise _status(409, "AlreadyExists", f"{resource[2]} {key[1]!r} already exists")
        return self.put(resource, body)

    def _bind(self, resource, pod, namespace, name, body) -> Any:
        if pod is None:
            raise _status(404, "NotFound", f"pods {name!r} not found")
        if pod.get("spec", {}).get("nodeName"):
            raise _status(
                409, "Conflict", f"pod {name} is already assigned to node {pod['spec']['nodeName']}"
            )
        node = (body.get("target") or {}).get("name")
        updated = merge_patch(pod, {"spec": {"nodeName": node}})
        self.put(resource, updated, "MODIFIED")
        return {"kind": "Status", "status": "Success"}

    def _evict(self, resource, pod, namespace, name) -> Any:
        if pod is None:
            raise _status(404, "NotFound", f"pods {name!r} not found")
        labels = pod.get("metadata", {}).get("labels") or {}
        budgets = self.store[PDB]
        covering = [
            pdb
            for (ns, _), pdb in budgets.items()
            if ns == namespace and _matches(pdb.get("spec", {}).get("selector") or {}, labels)
        ]
        for pdb in covering:
            if (pdb.get("status") or {}).get("disruptionsAllowed", 0) <= 0:
                raise _status(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                )
        for pdb in covering:
            status = dict(pdb.get("status") or {})
            status["disruptionsAllowed"] -= 1
            self.put(
                ("policy", "v1", "poddisruptionbudgets"), {**pdb, "status": status}, "MODIFIED"
            )
        self.evictions.append(f"{namespace}/{name}")
        if not self.eviction_grace:
            self.put(resource, pod, "DELETED")
            return {"kind": "Status", "status": "Success"}
        meta = {**pod.get("metadata", {}), "deletionTimestamp": "2026-01-01T00:00:00Z"}
        self.put(resource, {**pod, "metadata": meta}, "MODIFIED")

        def gone() -> None:
            current = self.store[resource].get((namespace, name))
            if current is not None:
                self.put(resource, current, "DELETED")

        asyncio.get_running_loop().call_later(self.eviction_grace, gone)
        return {"kind": "Status", "status": "Success"}

    async def _error_stream(self, code: int, reason: str) -> AsyncIterator[Any]:
        yield b""
        yield {"type": "ERROR", "object": {"kind": "Status", "code": code, "reason": reason}}

    async def _watch(self, resource, namespace, params) -> AsyncIterator[Any]:
        yield b""
        since = params.get("resourceVersion")
        queue: asyncio.Queue = asyncio.Queue()
        self.watchers[resource].append(queue)
        timeout = float(params.get("timeoutSeconds") or 0) or None
        try:
            if since and int(since) < self.horizon:
                gone = {
                    "kind": "Status",
                    "code": 410,
                    "reason": "Expired",
                    "message": f"too old resource version: {since} ({self.horizon})",
                }
                yield {"type": "ERROR", "object": gone}
                return
            if since:
                backlog = [e for rv, e in self.history.get(resource, ()) if rv > int(since)]
            else:
                backlog = [{"type": "ADDED", "object": o} for o in self.store[resource].values()]
            for event in backlog:
                if self._visible(event, namespace):
                    yield event
            loop = asyncio.get_running_loop()
            deadline = None if timeout is None else loop.time() + timeout
            while True:
                wait = None if deadline is None else max(0.0, deadline - loop.time())
                try:
                    event = await asyncio.wait_for(queue.get(), wait)
                except TimeoutError:
                    return
                if event is None:
                    return
                if self._visible(event, namespace):
                    yield event
        finally:
            self.watchers[resource].remove(queue)

    @staticmethod
    def _visible(event: dict, namespace: str) -> bool:
        return not namespace or event["object"]["metadata"].get("namespace") == namespace


class EmulatorThread:
    """The emulator served on 127.0.0.1 from a thread of its own, for synchronous clients.
    ``restart()`` stops the HTTP server and serves the same objects again on the same port
    (their resourceVersions kept, the watch history lost and the revision moved on, so every
    client must relist)."""

    def __init__(self, **options: Any) -> None:
        self.handler: ApiEmulator | None = None
        self._options = options
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._server: kmock.Server | None = None
        self.port: int | None = None
        self.call(self._start())

    def call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def run(self, function: Any, *args: Any) -> Any:
        """Run ``function(*args)`` on the emulator's loop (state changes from tests)."""

        async def go() -> Any:
            return function(*args)

        return self.call(go())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _start(self) -> None:
        if self.handler is None:
            self.handler = ApiEmulator(**self._options)
            await self.handler.__aenter__()
        self._server = kmock.Server(self.handler, port=self.port)
        await self._server.__aenter__()
        self.port = self._server.port

    async def _stop_server(self) -> None:
        assert self._server is not None and self.handler is not None
        self.handler.drop_watches()
        await asyncio.sleep(0)
        await self._server.__aexit__(None, None, None)
        self._server = None

    def restart(self) -> None:
        self.call(self._stop_server())
        self.run(self.handler.compact, 1000)  # type: ignore[union-attr]
        self.call(self._start())

    def close(self) -> None:
        self.call(self._stop_server())
        self.call(self.handler.__aexit__(None, None, None))  # type: ignore[union-attr]
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
