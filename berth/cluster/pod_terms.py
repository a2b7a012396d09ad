"""Which bound pods a node counts for the pods still to place: label selectors over pods (and
their namespaces) as counter keys, and the affinity terms bound pods carry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain

import numpy as np

from berth.api.objects import Pod
from berth.api.selectors import LabelSelector, PodAffinityTerm

_NO_LABELS: dict[str, str] = {}


@dataclass(slots=True, frozen=True)
class SelectorKey:
    """Which pods a counter counts: pods of the listed ``namespaces``, or of a namespace whose
    labels ``namespace_selector`` matches (an empty one: every namespace), whose own labels
    ``selector`` matches."""

    namespaces: tuple[str, ...]
    selector: LabelSelector
    namespace_selector: LabelSelector | None = None

    @classmethod
    def of_term(cls, term: PodAffinityTerm, namespace: str) -> SelectorKey:
        """The pods an affinity term of a pod in ``namespace`` names (the term already
        resolved for that pod, see ``PodAffinityTerm.for_pod``)."""
        names = term.namespaces
        if not names and term.namespace_selector is None:
            return cls((namespace,), term.selector)
        return cls(tuple(sorted(set(names))), term.selector, term.namespace_selector)

    def matches(self, pod: Pod, namespace_labels: Mapping[str, dict[str, str]]) -> bool:
        if pod.namespace not in self.namespaces:
            chosen = self.namespace_selector
            if chosen is None or not chosen.matches(
                namespace_labels.get(pod.namespace, _NO_LABELS)
            ):
                return False
        return self.selector.matches(pod.labels)

    def screen(self) -> tuple[str, tuple[str, ...]] | None:
        """A label every matching pod carries with one of the given values (the selector's
        first ``In`` requirement), or None: a cheap test that rules most pods out."""
        for req in self.selector.requirements:
            if req.operator == "In":
                return req.key, req.values
        return None


@dataclass(slots=True, frozen=True)
class AllOf:
    """Pods that match every one of several keys: a pod's required affinity terms must all be
    met by one and the same existing pod."""

    keys: tuple[SelectorKey, ...]

    def matches(self, pod: Pod, namespace_labels: Mapping[str, dict[str, str]]) -> bool:
        return all(key.matches(pod, namespace_labels) for key in self.keys)

    def screen(self) -> tuple[str, tuple[str, ...]] | None:
        return next((s for s in map(SelectorKey.screen, self.keys) if s is not None), None)


CountKey = SelectorKey | AllOf


def counted(
    key: CountKey,
    pods_on: list[dict[str, Pod]],
    namespace_labels: Mapping[str, dict[str, str]],
    labelled: Mapping[tuple[str, str], int],
    capacity: int,
) -> np.ndarray:
    """Bound pods matching ``key`` per node row (``pods_on``: each row's pods), counted
    afresh over ``capacity`` rows: what a counter starts from when first asked for.
    ``labelled``: how many bound pods carry each label (key, value), cluster-wide."""
    matches, screen = key.matches, key.screen()
    if screen is not None and not any((screen[0], value) in labelled for value in screen[1]):
        return np.zeros(capacity, dtype=np.int32)  # no bound pod carries the label
    pods = list(chain.from_iterable(on.values() for on in pods_on))
    if screen is None:
        hit = [matches(pod, namespace_labels) for pod in pods]
    else:
        # Most pods lack the label or value: one dict lookup each rules them out.
        label, values = screen
        hit = [pod.labels.get(label) in values and matches(pod, namespace_labels) for pod in pods]
    rows = np.repeat(np.arange(len(pods_on)), [len(on) for on in pods_on])
    return np.bincount(rows[np.array(hit, dtype=bool)], minlength=capacity).astype(np.int32)


#: Roles of the terms bound pods carry (see CarriedTerm).
ANTI = "anti"
AFFINITY = "affinity"
PREFERRED = "preferred"


@dataclass(slots=True, frozen=True)
class CarriedTerm:
    """A pod affinity term some bound pod carries, counted per node so that the pods it names
    feel it when they are placed: required anti-affinity keeps them out of the domain (a
    filter); required affinity and preferred terms draw them in or push them away (a score)."""

    selector: SelectorKey
    topology_key: str
    kind: str  # ANTI, AFFINITY or PREFERRED
    weight: int = 0  # PREFERRED: the term's weight, negative for anti-affinity


def carried_terms(pod: Pod) -> list[CarriedTerm]:
    """The terms ``pod`` carries once bound, resolved for its labels and namespace."""
    aff = pod.affinity
    if not aff.has_pod_terms:
        return []

    def key(term: PodAffinityTerm) -> SelectorKey:
        return SelectorKey.of_term(term.for_pod(pod.labels), pod.namespace)

    terms = [CarriedTerm(key(t), t.topology_key, ANTI) for t in aff.anti_required]
    terms += [CarriedTerm(key(t), t.topology_key, AFFINITY) for t in aff.pod_required]
    terms += [
        CarriedTerm(key(w.term), w.term.topology_key, PREFERRED, w.weight)
        for w in aff.pod_preferred
    ]
    terms += [
        CarriedTerm(key(w.term), w.term.topology_key, PREFERRED, -w.weight)
        for w in aff.anti_preferred
    ]
    return terms
