"""Leader election on a ``coordination.k8s.io`` Lease, as client-go's leaderelection does it.

A candidate takes the Lease when it does not exist, or when its holder has not renewed it
within ``leaseDurationSeconds``; the leader renews it every ``renew`` seconds with a PUT that
carries the resourceVersion it read, so two candidates cannot both win (the loser gets 409
Conflict). A leader that cannot renew before its lease would expire steps down: ``lost`` is set
and the serve loop stops (the process exits and is restarted as a candidate, as kube-scheduler
does).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

from berth.k8s.client import ApiError, ConnectionLost, KubeClient
from berth.k8s.kinds import LEASE

log = logging.getLogger("berth.k8s")


def _now_stamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        identity: str,
        *,
        name: str = "berth",
        namespace: str = "berth-system",
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self.client = client
        self.identity = identity
        self.name = name
        self.namespace = namespace
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = threading.Event()
        self.lost = threading.Event()
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: When another holder's lease was first seen unchanged (its renewals are judged by
        #: this process's clock, never by the other's timestamps).
        self._observed: tuple[str, float] | None = None

    # ------------------------------------------------------------------ public

    def run(self) -> None:
        """Start campaigning in the background; ``leading`` is set once this replica leads."""
        self._thread = threading.Thread(target=self._loop, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        """Stop; a leader releases the Lease (so a standby takes over at once) unless
        ``release`` is False (a crash)."""
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(5)
        if release and self.leading.is_set():
            try:
                self._release()
            except (ApiError, ConnectionLost) as exc:
                log.warning("lease not released", extra={"error": str(exc)})

    # ------------------------------------------------------------------ the loop

    def _loop(self) -> None:
        last_renew = 0.0
        while not self.stopping.is_set():
            try:
                held = self._try_acquire_or_renew()
            except (ApiError, ConnectionLost) as exc:
                log.warning("lease update failed", extra={"error": str(exc)})
                held = False
            now = time.monotonic()
            if held:
                last_renew = now
                if not self.leading.is_set():
                    log.info("became leader", extra={"identity": self.identity})
                    self.leading.set()
            elif self.leading.is_set() and now - last_renew > self.renew_deadline:
                log.error("leadership lost", extra={"identity": self.identity})
                self.leading.clear()
                self.lost.set()
                return
            self.stopping.wait(self.retry_period)

    def _path(self, name: str | None = None) -> str:
        return LEASE.item(self.namespace, name) if name else LEASE.collection(self.namespace)

    def _try_acquire_or_renew(self) -> bool:
        now = time.time()
        try:
            lease = self.client.request("GET", self._path(self.name))
        except ApiError as exc:
            if exc.status != 404:
                raise
            return self._create(now)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        version = (lease.get("metadata") or {}).get("resourceVersion", "")
        if holder and holder != self.identity:
            stamp = f"{holder}@{spec.get('renewTime')}@{version}"
            if self._observed is None or self._observed[0] != stamp:
                self._observed = (stamp, time.monotonic())
                return False
            duration = spec.get("leaseDurationSeconds") or self.lease_duration
            if time.monotonic() - self._observed[1] < duration:
                return False
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "renewTime": _now_stamp(now),
            "acquireTime": spec.get("acquireTime") if holder == self.identity else _now_stamp(now),
            "leaseTransitions": transitions if holder == self.identity else transitions + 1,
        }
        body = {**lease, "spec": new_spec}
        try:
            self.client.request("PUT", self._path(self.name), body=body, retry=False)
        except ApiError as exc:
            if exc.status == 409:
                return False  # another candidate wrote first
            raise
        return True

    def _create(self, now: float) -> bool:
        body = {
            "apiVersion": LEASE.api_version,
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.lease_duration)),
                "acquireTime": _now_stamp(now),
                "renewTime": _now_stamp(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self.client.request("POST", self._path(), body=body, retry=False)
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def _release(self) -> None:
        lease = self.client.request("GET", self._path(self.name))
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return
        body = {**lease, "spec": {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}}
        self.client.request("PUT", self._path(self.name), body=body, retry=False)
