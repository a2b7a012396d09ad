"""The revisions of the Kruise workloads that roll out (CloneSet, Advanced StatefulSet), kept
as Kruise keeps them: one ``apps/v1`` ControllerRevision per pod template, named like the
pods' ``controller-revision-hash`` (``<name>-<revision>``), owned by the workload, its
``data`` the template (``{"spec": {"template": {..., "$patch": "replace"}}}``) and its
``revision`` a number counting up.

They are what lets a restarted berth update in place a pod of a revision older than the
workload's template: the controller needs that revision's template to tell whether only
images changed, and the API no longer has it anywhere else. Revisions are written from the
serve loop (``write``), never from an informer event; they are read once per workload, on
first sight, before its controller's first pass. As Kruise does, ``prune`` deletes the oldest
revisions no pod and neither the current nor the update revision uses, beyond the workload's
``revisionHistoryLimit`` (10 unless set).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from berth.k8s.client import ApiError, KubeClient
from berth.k8s.convert import owner_reference
from berth.k8s.kinds import BY_KIND, CONTROLLER_REVISION

HASH_LABEL = "controller.kubernetes.io/hash"
#: Kruise's default ``revisionHistoryLimit``.
HISTORY_LIMIT = 10


def template_of(revision: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template a ControllerRevision holds (None: not one in Kruise's shape)."""
    template = ((revision.get("data") or {}).get("spec") or {}).get("template")
    if not isinstance(template, dict):
        return None
    return {k: v for k, v in template.items() if k != "$patch"}


class Revisions:
    """The ControllerRevisions berth has written or found, and those still to write."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        #: (kind, owner key) → revision hash → its number.
        self.numbers: dict[tuple[str, str], dict[str, int]] = {}
        #: (kind, owner key) → revision hash → template: not yet written.
        self.pending: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}

    def load(self, kind: str, owner_raw: dict[str, Any]) -> list[dict[str, Any]]:
        """The templates of the revisions ``owner_raw`` owns, oldest first."""
        meta = owner_raw.get("metadata") or {}
        key = (kind, f"{meta.get('namespace')}/{meta.get('name')}")
        uid = meta.get("uid")
        answer = self.client.request("GET", CONTROLLER_REVISION.collection(meta.get("namespace")))
        owned = [
            item
            for item in answer.get("items") or []
            if any(
                ref.get("uid") == uid and ref.get("controller")
                for ref in (item.get("metadata") or {}).get("ownerReferences") or []
            )
        ]
        owned.sort(key=lambda item: int(item.get("revision") or 0))
        templates = []
        for item in owned:
            template = template_of(item)
            if template is None:
                continue
            revision = str((item.get("metadata") or {}).get("name", "")).rpartition("-")[2]
            self.numbers.setdefault(key, {})[revision] = int(item.get("revision") or 0)
            templates.append(template)
        return templates

    def record(self, kind: str, key: str, revision: str, template: dict[str, Any]) -> None:
        """Keep ``template`` as revision ``revision`` of ``key`` (written by ``write``)."""
        if revision in self.numbers.get((kind, key), {}):
            return
        self.pending.setdefault((kind, key), {})[revision] = template

    def forget(self, kind: str, key: str) -> None:
        self.numbers.pop((kind, key), None)
        self.pending.pop((kind, key), None)

    def write(self, raw_of: Callable[[str, str], dict[str, Any] | None]) -> None:
        """Create the pending revisions of each owner whose object ``raw_of(kind, key)``
        still gives; one that exists already (written before a restart) counts as written."""
        for (kind, key), pending in sorted(self.pending.items()):
            owner_raw = raw_of(kind, key)
            if owner_raw is None:
                del self.pending[(kind, key)]
                continue
            numbers = self.numbers.setdefault((kind, key), {})
            for revision, template in list(pending.items()):
                number = max(numbers.values(), default=0) + 1
                self._create(kind, owner_raw, revision, template, number)
                numbers[revision] = number
                del pending[revision]
            del self.pending[(kind, key)]

    def prune(self, kind: str, owner_raw: dict[str, Any], live: set[str]) -> list[str]:
        """Delete the oldest revisions of ``owner_raw`` that are not ``live`` (used by a pod,
        or the current or update revision) beyond its ``revisionHistoryLimit``; returns the
        revisions deleted (one already gone counts)."""
        meta = owner_raw.get("metadata") or {}
        numbers = self.numbers.get((kind, f"{meta.get('namespace')}/{meta.get('name')}"), {})
        limit = (owner_raw.get("spec") or {}).get("revisionHistoryLimit")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            limit = HISTORY_LIMIT
        history = sorted((n, r) for r, n in numbers.items() if r not in live)
        pruned = []
        for _, revision in history[: max(len(history) - limit, 0)]:
            path = CONTROLLER_REVISION.item(meta.get("namespace"), f"{meta.get('name')}-{revision}")
            try:
                self.client.request("DELETE", path)
            except ApiError as exc:
                if exc.status != 404:
                    raise
            del numbers[revision]
            pruned.append(revision)
        return pruned

    def _create(
        self,
        kind: str,
        owner_raw: dict[str, Any],
        revision: str,
        template: dict[str, Any],
        number: int,
    ) -> None:
        meta = owner_raw.get("metadata") or {}
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels[HASH_LABEL] = revision
        body = {
            "apiVersion": CONTROLLER_REVISION.api_version,
            "kind": CONTROLLER_REVISION.kind,
            "metadata": {
                "name": f"{meta.get('name')}-{revision}",
                "namespace": meta.get("namespace"),
                "labels": labels,
                "ownerReferences": owner_reference(owner_raw, BY_KIND[kind]),
            },
            "data": {"spec": {"template": {**template, "$patch": "replace"}}},
            "revision": number,
        }
        try:
            self.client.request(
                "POST", CONTROLLER_REVISION.collection(meta.get("namespace")), body=body
            )
        except ApiError as exc:
            if exc.status != 409:
                raise
