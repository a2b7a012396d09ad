"""The cache and the API's answers to berth's own writes: when an answer carries someone else's
change to a pod (the claim names kube-controller-manager recorded, a bind by another
scheduler), that change's own watch event arrives looking like an echo and is dropped, so the
pod's watchers are told once the writing handler is done. Without it a pod whose template claim
was named while berth wrote its PodScheduled condition waited until something else changed. No
cluster needed: the client below answers as the API server does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from berth.k8s.cache import KubeStore
from berth.k8s.client import ApiError
from berth.k8s.informer import Event
from berth.store import WatchEvent

NAMED = [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]


def _pod(version: int, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1",
                     "resourceVersion": str(version)},
        "spec": {"schedulerName": "berth", "containers": [{"name": "c", "image": "x"}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]},
        "status": {"phase": "Pending", **status},
    }  # fmt: skip


class _Api:
    """The pod as the API server holds it, changed behind berth's back by ``elsewhere``."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored

    def elsewhere(self, change: dict[str, Any], spec: dict[str, Any] | None = None) -> None:
        self.stored = copy.deepcopy(self.stored)
        self.stored["status"].update(change)
        self.stored["spec"].update(spec or {})
        self._bump()

    def _bump(self) -> None:
        meta = self.stored["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
        if method == "GET":
            return copy.deepcopy(self.stored)
        assert method == "PUT"
        if body["metadata"]["resourceVersion"] != self.stored["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        self.stored = copy.deepcopy(body)
        self._bump()
        return copy.deepcopy(self.stored)


@pytest.mark.parametrize(
    ("status", "spec", "seen"),
    [
        (
            {"resourceClaimStatuses": NAMED},
            None,
            lambda pod, raw: raw["status"].get("resourceClaimStatuses") == NAMED,
        ),
        ({}, {"nodeName": "n1"}, lambda pod, raw: pod.bound_node == "n1"),
        ({"phase": "Running"}, {"nodeName": "n1"}, lambda pod, raw: pod.phase.value == "Running"),
    ],
    ids=["claim names", "bound elsewhere", "running"],
)
def test_another_writers_change_in_an_answer_reaches_the_watchers(status, spec, seen):
    api = _Api(_pod(1))
    store = KubeStore(client=api)  # type: ignore[arg-type]
    heard: list[tuple[WatchEvent, bool]] = []
    store.watch(
        "Pod", lambda event, pod: heard.append((event, seen(pod, store.raw("Pod", pod.key))))
    )
    store.apply(Event("Pod", "ADDED", _pod(1)))
    api.elsewhere(status, spec)
    changed = copy.deepcopy(api.stored)
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    store.write_status("Pod", "default/p", {"conditions": [condition]})  # 409, read, written
    store.apply(Event("Pod", "MODIFIED", changed))  # the change's own event: an echo now
    assert heard == [(WatchEvent.ADDED, False)]  # no watcher hears in the writer's middle
    store.announce()
    assert heard == [(WatchEvent.ADDED, False), (WatchEvent.MODIFIED, True)]
    store.announce()
    assert len(heard) == 2  # told once


def test_an_answer_with_only_berths_own_change_is_not_announced():
    api = _Api(_pod(1))
    store = KubeStore(client=api)  # type: ignore[arg-type]
    heard: list[WatchEvent] = []
    store.watch("Pod", lambda event, pod: heard.append(event))
    store.apply(Event("Pod", "ADDED", _pod(1)))
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    store.write_status("Pod", "default/p", {"conditions": [condition]})
    store.announce()
    assert heard == [WatchEvent.ADDED]


def test_a_watcher_write_that_fails_while_announced_is_logged_and_the_others_are_told(caplog):
    pods = {name: _Api(_pod(1)) for name in ("p", "q")}
    heard: list[str] = []

    class _Both:
        def request(self, method: str, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
            name = path.rstrip("/").split("/")[-1 if method == "GET" else -2]
            return pods[name].request(method, path, body)

    store = KubeStore(client=_Both())  # type: ignore[arg-type]

    def watcher(event: WatchEvent, pod: Any) -> None:
        if event == WatchEvent.MODIFIED and pod.name == "p":
            raise ApiError(500, "InternalError", "etcd is away")
        heard.append(pod.name)

    store.watch("Pod", watcher)
    for name, api in pods.items():
        raw = _pod(1)
        raw["metadata"]["name"] = api.stored["metadata"]["name"] = name
        store.apply(Event("Pod", "ADDED", raw))
        api.elsewhere({"resourceClaimStatuses": NAMED})
        store.write_status("Pod", f"default/{name}", {"conditions": []})
    heard.clear()
    store.announce()  # does not raise
    assert heard == ["q"]
    assert not store.unannounced
    assert any("event not handled" in r.getMessage() for r in caplog.records)
