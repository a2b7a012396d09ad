"""Bound pods counted per node by selector: the counts a selector registers late (screened by
its first ``In`` requirement) and keeps through binds and unbinds equal counting the pods on
each node afresh."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.objects import Namespace
from berth.api.selectors import LabelSelector
from berth.cluster.pod_terms import AllOf, SelectorKey
from berth.cluster.state import ClusterState
from tests.builders import node, pod, req

NAMESPACES = ("default", "team-a", "team-b")
VALUES = ("x", "y", "z")

labels = st.dictionaries(st.sampled_from(("app", "tier")), st.sampled_from(VALUES), max_size=2)
requirement = st.one_of(
    st.builds(
        req,
        st.sampled_from(("app", "tier")),
        st.sampled_from(("In", "NotIn")),
        st.sampled_from(VALUES),
        st.sampled_from(VALUES),
    ),
    st.builds(req, st.sampled_from(("app", "tier")), st.sampled_from(("Exists", "DoesNotExist"))),
)
selector = st.lists(requirement, max_size=3).map(lambda r: LabelSelector(tuple(r)))
selector_key = st.builds(
    SelectorKey,
    st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2, unique=True).map(tuple),
    selector,
    st.none() | selector,
)
count_key = selector_key | st.lists(selector_key, min_size=2, max_size=3).map(
    lambda keys: AllOf(tuple(keys))
)
# (node, namespace, labels, unbind later)
bound = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(NAMESPACES), labels, st.booleans()),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(key=count_key, before=bound, after=bound)
def test_counts_equal_counting_afresh(key, before, after) -> None:
    state = ClusterState()
    state.add_nodes(node(f"n{i}") for i in range(4))
    state.set_namespace(Namespace("team-a", labels={"tier": "x"}))
    pods = []
    for i, (row, namespace, pod_labels, _) in enumerate(before + after):
        if i == len(before):
            state.pod_counts(key)  # registered with some pods bound, kept through the rest
        p = pod(f"p{i}", cpu=1, mem=1, namespace=namespace, labels=pod_labels)
        state.bind(p, row)
        pods.append((p, row))
    for (p, row), (*_, leave) in zip(pods, before + after, strict=True):
        if leave:
            state.unbind(p, row)
    expected = [
        sum(key.matches(p, state.namespace_labels) for p in state.pods_on[row].values())
        for row in range(state.n)
    ]
    assert state.pod_counts(key).tolist() == expected
    state.selector_counts.clear()
    assert state.pod_counts(key).tolist() == expected  # registered with every pod bound
