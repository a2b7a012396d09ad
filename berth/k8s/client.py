"""A thin JSON layer over the official ``kubernetes`` client.

The official client supplies configuration (kubeconfig or in-cluster service account), TLS,
authentication and the connection pool; berth calls its generic ``ApiClient`` and reads the JSON
itself. Its typed models are skipped on purpose: turning each response into generated model
objects costs more than the request it decodes (see docs/kubernetes.md), and berth converts API
objects with its own manifest converters anyway.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

log = logging.getLogger("berth.k8s")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer from the API server: its HTTP status, reason and message."""

    def __init__(self, status: int, reason: str = "", message: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def retriable(self) -> bool:
        """Server-side trouble or throttling: worth another try after a pause."""
        return self.status >= 500 or self.status == 429


class ConnectionLost(Exception):
    """The API server could not be reached, or a connection broke mid-answer."""


def load_configuration(kubeconfig: str | None) -> k8s_client.Configuration:
    """From ``kubeconfig`` if given, else the pod's service account (in-cluster), else the
    default kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``)."""
    configuration = k8s_client.Configuration()
    if kubeconfig:
        k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        return configuration
    try:
        k8s_config.load_incluster_config(client_configuration=configuration)
    except k8s_config.ConfigException:
        k8s_config.load_kube_config(client_configuration=configuration)
    return configuration


def api_error(status: int, body: bytes) -> ApiError:
    try:
        payload = orjson.loads(body)
    except (ValueError, TypeError):
        return ApiError(status, "", body[:200].decode("utf-8", "replace") if body else "")
    if not isinstance(payload, dict):
        return ApiError(status)
    return ApiError(status, str(payload.get("reason", "")), str(payload.get("message", "")))


class KubeClient:
    """Requests by path, JSON in and out. ``retries`` bounds the attempts on 5xx, 429 and
    broken connections, with jittered exponential backoff from ``backoff`` seconds."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        pool_size: int = 16,
        retries: int = 5,
        backoff: float = 0.1,
        max_backoff: float = 5.0,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        configuration.connection_pool_maxsize = max(pool_size, 4)
        self.api = k8s_client.ApiClient(configuration)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.timeout = timeout
        self._sleep = sleep
        self._rng = random.Random()
        self._lock = threading.Lock()
        #: Attempts that were retried, by cause ("500", "connection"...), for metrics and tests.
        self.retried: dict[str, int] = {}

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    def close(self) -> None:
        self.api.close()

    # ------------------------------------------------------------------ requests

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        retry: bool = True,
    ) -> Any:
        """The decoded JSON answer; raises ApiError on a non-2xx status (after the retries
        for retriable ones when ``retry``), ConnectionLost when the server stays unreachable."""
        attempt = 0
        while True:
            try:
                return self._once(method, path, query, body, content_type)
            except ApiError as exc:
                if not (retry and exc.retriable) or attempt >= self.retries:
                    raise
                cause = str(exc.status)
            except ConnectionLost:
                if not retry or attempt >= self.retries:
                    raise
                cause = "connection"
            self.count_retry(cause)
            self._sleep(self.delay(attempt))
            attempt += 1

    def count_retry(self, cause: str) -> None:
        with self._lock:
            self.retried[cause] = self.retried.get(cause, 0) + 1

    def delay(self, attempt: int) -> float:
        """Exponential backoff with jitter (half to all of the exponential step)."""
        step = min(self.max_backoff, self.backoff * (2**attempt))
        return step * (0.5 + 0.5 * self._rng.random())

    def _once(
        self, method: str, path: str, query: dict[str, Any] | None, body: Any, content_type: str
    ) -> Any:
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        request = self.api.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self.api.call_api(*request, _request_timeout=self.timeout)
            data = response.read()
        except ApiException as exc:  # raised by the REST layer for some statuses
            raise api_error(
                exc.status or 0,
                (exc.body or b"") if isinstance(exc.body, bytes) else str(exc.body or "").encode(),
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionLost(f"{method} {path}: {exc}") from None
        if not 200 <= response.status <= 299:
            raise api_error(response.status, data)
        return orjson.loads(data) if data else None

    def stream(self, path: str, query: dict[str, Any], timeout: float) -> Iterator[dict]:
        """A watch: one decoded event per line until the server ends the stream (or ``timeout``
        seconds pass without a byte). Raises ApiError or ConnectionLost."""
        request = self.api.param_serialize(
            "GET",
            path,
            query_params=list(query.items()),
            header_params={"Accept": JSON},
            auth_settings=["BearerToken"],
        )
        method, url, headers, _, _ = request
        try:
            raw = self.api.rest_client.pool_manager.request(
                method,
                url,
                headers=headers,
                preload_content=False,
                timeout=urllib3.Timeout(connect=self.timeout, read=timeout),
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionLost(f"watch {path}: {exc}") from None
        finished = False
        try:
            if raw.status != 200:
                raise api_error(raw.status, raw.read())
            buffer = b""
            for chunk in raw.stream(65536, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)
            if buffer.strip():
                yield orjson.loads(buffer)
            finished = True
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ConnectionLost(f"watch {path}: {exc}") from None
        except ValueError as exc:  # a line cut short by a dropped connection
            raise ConnectionLost(f"watch {path}: malformed event ({exc})") from None
        finally:
            if not finished:
                raw.close()  # left mid-stream: the connection must not serve another request
            raw.release_conn()

    def stop(self) -> None:
        """Close every pooled connection (ends open watches)."""
        self.api.rest_client.pool_manager.clear()
