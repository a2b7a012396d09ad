"""The pod webhook's own cache (berth/k8s/webhook_cache.py), without a cluster: when a replica
may answer (each watched kind's first list applied), what it answers before that and after.
Its client fails any request: applying events and answering reviews never writes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from berth.k8s.informer import Event
from berth.k8s.webhook import respond
from berth.k8s.webhook_cache import WebhookCache
from tests.k8s.test_sidecarset_admit import injected_names, pod, sidecar_set
from tests.k8s.test_webhook import review


class NoWrites:
    """A client that fails the test on any request: the cache only ever reads through its
    informers, which these tests do not start."""

    def request(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the webhook cache wrote: {args}")


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "resourceVersion": "1"},
        "value": value,
    }


LOG = Event("SidecarSet", "ADDED", sidecar_set("log"))
HIGH = Event("PriorityClass", "ADDED", priority_class("high", 1000))
SETS_LISTED = Event("SidecarSet", "SYNCED", {})
CLASSES_LISTED = Event("PriorityClass", "SYNCED", {})
LOG_GONE = Event("SidecarSet", "DELETED", {"metadata": {"name": "log"}})

# events the informers delivered → ready, HTTP status of a web pod's review, sidecars injected
CASES = {
    "nothing listed yet": ([], False, 503, None),
    "only the SidecarSets listed": ([LOG, SETS_LISTED], False, 503, None),
    "only the PriorityClasses listed": ([HIGH, CLASSES_LISTED], False, 503, None),
    "both listed": ([HIGH, CLASSES_LISTED, LOG, SETS_LISTED], True, 200, ["log", "c"]),
    "both listed, in the other order": (
        [LOG, SETS_LISTED, CLASSES_LISTED],
        True,
        200,
        ["log", "c"],
    ),
    "both listed, no SidecarSets": ([SETS_LISTED, CLASSES_LISTED], True, 200, []),
    "a set added after the lists": ([SETS_LISTED, CLASSES_LISTED, LOG], True, 200, ["log", "c"]),
    "a set deleted after the lists": (
        [LOG, SETS_LISTED, CLASSES_LISTED, LOG_GONE],
        True,
        200,
        [],
    ),
}


@pytest.mark.parametrize(("events", "ready", "status", "containers"), CASES.values(), ids=CASES)
def test_a_replica_answers_once_both_kinds_are_listed(events, ready, status, containers):
    cache = WebhookCache(NoWrites())  # type: ignore[arg-type]
    for event in events:
        cache.handle(event)
    assert cache.ready() is ready
    body = review(namespace="default", object=pod({"app": "web"}))
    code, answer = respond(body, cache.admit, cache.ready)
    response = answer["response"]
    assert (code, response["allowed"]) == (status, status == 200)
    if status == 503:
        assert response["status"]["message"] == (
            "berth webhook: berth has not synced its SidecarSets yet"
        )
        return
    patch = json.loads(base64.b64decode(response["patch"])) if containers else []
    assert ("patch" in response) is bool(containers)
    assert injected_names(patch) == (containers or [])


def test_a_pod_converts_with_the_priority_classes_listed():
    cache = WebhookCache(NoWrites())  # type: ignore[arg-type]
    for event in (LOG, SETS_LISTED, CLASSES_LISTED):
        cache.handle(event)
    high = {**pod({"app": "web"}), "spec": {**pod({})["spec"], "priorityClassName": "high"}}
    patch, (warning,) = cache.admit(high, "default")
    assert patch == [] and 'no PriorityClass named "high"' in warning
    cache.handle(HIGH)
    patch, warnings = cache.admit(high, "default")
    assert warnings == [] and injected_names(patch) == ["log", "c"]


def test_a_set_changed_after_the_lists_injects_its_new_containers():
    cache = WebhookCache(NoWrites())  # type: ignore[arg-type]
    changed = sidecar_set("log")
    changed["metadata"] = {**changed["metadata"], "resourceVersion": "2", "generation": 2}
    changed["spec"]["containers"] = [{"name": "log", "image": "log:2"}]
    for event in (LOG, SETS_LISTED, CLASSES_LISTED, Event("SidecarSet", "MODIFIED", changed)):
        cache.handle(event)
    patch, _ = cache.admit(pod({"app": "web"}), "default")
    (containers,) = [op["value"] for op in patch if op["path"] == "/spec/containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("log", "log:2"), ("c", "app")]
