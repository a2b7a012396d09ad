"""A reverse proxy between berth and a real kube-apiserver, for the faults a real server will
not produce on demand: watches cut mid-stream, 429 and 5xx answers, slow answers, and an
outage of the address berth talks to. It also keeps the record the tests read: every request,
every Binding posted per pod, every eviction the server accepted.

It serves TLS with the control plane's own serving certificate (so berth's client verifies it
as it would the real server) and passes each request on unchanged, its bearer token included,
so the API server authenticates and authorises berth's service account itself.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import ssl
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.web

_POD_SUB = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/(binding|eviction)$")
_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


class FaultProxy:
    """Serves on 127.0.0.1 from a thread of its own; ``upstream`` is the API server's URL."""

    def __init__(self, upstream: str, pki: Path) -> None:
        self.upstream = upstream
        self._client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self._server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server_tls.load_cert_chain(str(pki / "serving.crt"), str(pki / "serving.key"))
        #: Every request: (method, or WATCH for a watch, and path).
        self.log: list[tuple[str, str]] = []
        #: Every answer: (method or WATCH, path, HTTP status).
        self.answers: list[tuple[str, str, int]] = []
        #: Binding posts per pod key, every attempt (injected answers included).
        self.binds: dict[str, int] = defaultdict(int)
        #: Binding posts per pod key the server accepted (more than one would be a double bind).
        self.bound: dict[str, int] = defaultdict(int)
        #: Pod keys whose eviction the server accepted, in order.
        self.evictions: list[str] = []
        #: (method, path regex, status, reason, times left, action run first); see inject().
        self.injected: list[list[Any]] = []
        #: Watch events about objects whose ``namespace/name`` matches one of these are dropped
        #: (an event the client never hears of).
        self.hidden: list[re.Pattern] = []
        #: (share, statuses): that share of requests, drawn by a seeded generator, answered with
        #: one of the statuses in turn instead of being passed on (a 429/5xx storm).
        self.flaky: tuple[float, tuple[int, ...]] | None = None
        self._draw = random.Random(0)
        #: Seconds added before every answer (a slow server).
        self.delay = 0.0
        #: While set, new connections are refused as by a server that is down.
        self.down = False
        self._watches: set[aiohttp.web.StreamResponse] = set()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._runner: aiohttp.web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0
        self.call(self._start())

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ test controls

    def call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        async def go() -> Any:
            return function(*args)

        return self.call(go())

    def inject(
        self,
        method: str,
        pattern: str,
        status: int,
        reason: str,
        times: int = 1,
        action: Callable[[], None] | None = None,
    ) -> None:
        """Answer the next ``times`` requests matching ``method`` (or WATCH) and the path
        regex with ``status`` instead of passing them on; ``action`` runs before the first
        such answer (in the proxy's thread: it may call the API server synchronously)."""
        self.run(self.injected.append, [method, re.compile(pattern), status, reason, times, action])

    def before(self, method: str, pattern: str, action: Callable[[], None], times: int = 1) -> None:
        """Run ``action`` before passing on each of the next ``times`` matching requests, which
        then go to the API server as sent: a concurrent writer racing berth, say, so the
        server answers a real 409 Conflict."""
        self.run(self.injected.append, [method, re.compile(pattern), 0, "", times, action])

    def hide(self, pattern: str) -> None:
        """Drop, from every watch stream from now on, the events of objects whose
        ``namespace/name`` matches ``pattern``."""
        self.run(self.hidden.append, re.compile(pattern))

    def drop_watches(self) -> None:
        """Cut every open watch stream, as a broken connection would."""

        self.run(self._abort_watches)

    def _abort_watches(self) -> None:
        for response in list(self._watches):
            transport = response._req.transport if response._req else None  # noqa: SLF001
            if transport is not None:
                transport.abort()
        self._watches.clear()

    def reset(self) -> None:
        """Forget the record and the faults (between tests)."""

        def clear() -> None:
            self.log.clear()
            self.answers.clear()
            self.binds.clear()
            self.bound.clear()
            self.flaky = None
            self.evictions.clear()
            self.injected.clear()
            self.hidden.clear()
            self.delay = 0.0
            self.down = False

        self.run(clear)

    def close(self) -> None:
        self.call(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    # ------------------------------------------------------------------ serving

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._client_tls, limit=256),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False,
        )
        app = aiohttp.web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = aiohttp.web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = aiohttp.web.TCPSite(
            self._runner, "127.0.0.1", self.port, ssl_context=self._server_tls
        )
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # noqa: SLF001

    async def _stop(self) -> None:
        self._abort_watches()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        # Handlers still waiting on a stream end here, not as tasks destroyed with the loop.
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def _take_injected(self, method: str, path: str) -> list[Any] | None:
        for entry in self.injected:
            if entry[0] == method and entry[1].search(path) and entry[4] > 0:
                entry[4] -= 1
                if entry[2] == 0:  # before(): act, then pass the request on
                    entry[5]()
                    return None
                if entry[5] is not None:
                    action, entry[5] = entry[5], None
                    action()
                return entry
        return None

    async def _handle(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        if self.down:
            if request.transport is not None:
                request.transport.abort()
            return aiohttp.web.Response(status=503)
        path = request.path
        is_watch = request.query.get("watch") in ("true", "1")
        method = "WATCH" if is_watch else request.method
        self.log.append((method, path))
        sub = _POD_SUB.match(path)
        if sub and request.method == "POST" and sub.group(3) == "binding":
            self.binds[f"{sub.group(1)}/{sub.group(2)}"] += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        injected = self._take_injected(method, path)
        if injected is not None:
            self.answers.append((method, path, injected[2]))
            return _status_answer(injected[2], injected[3], is_watch)
        if self.flaky is not None and self._draw.random() < self.flaky[0]:
            status = self.flaky[1][len(self.answers) % len(self.flaky[1])]
            self.answers.append((method, path, status))
            return _status_answer(status, "Storm", is_watch)
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        assert self._session is not None
        try:
            upstream = await self._session.request(
                request.method,
                self.upstream + request.path_qs,
                headers=headers,
                data=body or None,
            )
        except (aiohttp.ClientError, OSError):
            if request.transport is not None:
                request.transport.abort()
            return aiohttp.web.Response(status=503)
        self.answers.append((method, path, upstream.status))
        async with upstream:
            out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
            if not is_watch:
                data = await upstream.read()
                if sub and sub.group(3) == "binding" and 200 <= upstream.status < 300:
                    self.bound[f"{sub.group(1)}/{sub.group(2)}"] += 1
                if sub and sub.group(3) == "eviction" and 200 <= upstream.status < 300:
                    self.evictions.append(f"{sub.group(1)}/{sub.group(2)}")
                return aiohttp.web.Response(status=upstream.status, headers=out_headers, body=data)
            response = aiohttp.web.StreamResponse(status=upstream.status, headers=out_headers)
            await response.prepare(request)
            self._watches.add(response)
            try:
                buffer = b""
                async for chunk in upstream.content.iter_any():
                    if not self.hidden:
                        await response.write(chunk)
                        continue
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    kept = [line for line in lines if not self._is_hidden(line)]
                    if kept:
                        await response.write(b"\n".join(kept) + b"\n")
            except (aiohttp.ClientError, ConnectionResetError, OSError):
                pass
            finally:
                self._watches.discard(response)
            return response

    def _is_hidden(self, line: bytes) -> bool:
        try:
            meta = json.loads(line)["object"]["metadata"]
        except (ValueError, KeyError, TypeError):
            return False
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        return any(pattern.search(key) for pattern in self.hidden)


def _status_answer(code: int, reason: str, is_watch: bool) -> aiohttp.web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": f"injected {code}",
    }
    if is_watch:
        # A watch that fails after it started: one ERROR event, then the end of the stream.
        line = json.dumps({"type": "ERROR", "object": status}) + "\n"
        return aiohttp.web.Response(status=200, body=line, content_type="application/json")
    return aiohttp.web.Response(
        status=code, text=json.dumps(status), content_type="application/json"
    )
