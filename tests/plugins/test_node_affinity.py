"""node-affinity: nodeSelector, required terms (ORed) of expressions (ANDed), matchFields,
spec.nodeName, and preferred terms as a score."""

from __future__ import annotations

import pytest

from berth.api.selectors import Affinity, NodeSelectorTerm, PreferredNodeTerm
from tests.builders import node, place_one, pod, req, run, scheduler


def nodes():
    return [
        node("a", zone="z1", labels={"disk": "ssd", "cores": "8"}),
        node("b", zone="z2", labels={"disk": "hdd", "cores": "32"}),
        node("c", zone="z3", labels={"cores": "64", "gpu": "yes"}),
    ]


def required(*terms: NodeSelectorTerm) -> Affinity:
    return Affinity(node_required=terms)


def exprs(*requirements) -> NodeSelectorTerm:
    return NodeSelectorTerm(expressions=tuple(requirements))


def fields(*requirements) -> NodeSelectorTerm:
    return NodeSelectorTerm(fields=tuple(requirements))


FEASIBLE_CASES = {
    "nodeSelector": ({"node_selector": {"disk": "ssd"}}, {"a"}),
    "nodeSelector two labels ANDed": ({"node_selector": {"disk": "hdd", "cores": "32"}}, {"b"}),
    "nodeSelector no match": ({"node_selector": {"disk": "nvme"}}, set()),
    "In": ({"affinity": required(exprs(req("disk", "In", "ssd", "hdd")))}, {"a", "b"}),
    "NotIn includes nodes without the key": (
        {"affinity": required(exprs(req("disk", "NotIn", "ssd")))},
        {"b", "c"},
    ),
    "Exists": ({"affinity": required(exprs(req("disk", "Exists")))}, {"a", "b"}),
    "DoesNotExist": ({"affinity": required(exprs(req("disk", "DoesNotExist")))}, {"c"}),
    "Gt": ({"affinity": required(exprs(req("cores", "Gt", "8")))}, {"b", "c"}),
    "Lt": ({"affinity": required(exprs(req("cores", "Lt", "64")))}, {"a", "b"}),
    "Gt on a missing key": ({"affinity": required(exprs(req("ram", "Gt", "1")))}, set()),
    "expressions ANDed": (
        {"affinity": required(exprs(req("cores", "Gt", "8"), req("disk", "Exists")))},
        {"b"},
    ),
    "terms ORed": (
        {"affinity": required(exprs(req("disk", "In", "ssd")), exprs(req("gpu", "Exists")))},
        {"a", "c"},
    ),
    "empty term matches nothing": ({"affinity": required(NodeSelectorTerm())}, set()),
    "matchFields metadata.name In": (
        {"affinity": required(fields(req("metadata.name", "In", "b", "c")))},
        {"b", "c"},
    ),
    "matchFields metadata.name NotIn": (
        {"affinity": required(fields(req("metadata.name", "NotIn", "a")))},
        {"b", "c"},
    ),
    "matchFields ANDed with expressions": (
        {
            "affinity": required(
                NodeSelectorTerm(
                    expressions=(req("cores", "Gt", "8"),),
                    fields=(req("metadata.name", "In", "c"),),
                )
            )
        },
        {"c"},
    ),
    "zone label": ({"node_selector": {"topology.kubernetes.io/zone": "z2"}}, {"b"}),
    "hostname label is implicit": ({"node_selector": {"kubernetes.io/hostname": "c"}}, {"c"}),
    "spec.nodeName": ({"node_name": "b"}, {"b"}),
    "spec.nodeName and a selector that excludes it": (
        {"node_name": "b", "node_selector": {"disk": "ssd"}},
        set(),
    ),
    "nodeSelector and affinity both apply": (
        {"node_selector": {"disk": "hdd"}, "affinity": required(exprs(req("cores", "Lt", "16")))},
        set(),
    ),
}


@pytest.mark.parametrize("spec,allowed", FEASIBLE_CASES.values(), ids=FEASIBLE_CASES.keys())
def test_required(spec, allowed):
    """Fill the cluster with copies of the pod: exactly the allowed nodes receive one each."""
    s = scheduler(nodes())
    copies = [pod(f"p{i}", cpu=4000, mem=1024, **spec) for i in range(3)]
    binds = run(s, copies)
    assert set(binds.values()) == allowed
    assert len(binds) == len(allowed)  # each node takes one copy (the cpu is all used)
    if not allowed:
        assert s.pending_reason(copies[0]) == (
            "0/3 nodes available: 3 node affinity/selector mismatch"
        )


def test_reason_counts_mismatch_and_resources():
    s = scheduler(nodes())
    blocker = pod("blocker", cpu=4000, node_name="a")
    assert run(s, [blocker]) == {"blocker": "a"}
    p = pod("p", cpu=1000, affinity=required(exprs(req("disk", "Exists"))))
    assert run(s, [p]) == {"p": "b"}
    q = pod("q", cpu=3500, affinity=required(exprs(req("disk", "Exists"))))
    assert run(s, [q]) == {}
    assert s.pending_reason(q) == (
        "0/3 nodes available: 2 insufficient cpu, 1 node affinity/selector mismatch"
    )


def preferred(*weighted_terms: tuple[int, NodeSelectorTerm]) -> Affinity:
    return Affinity(node_preferred=tuple(PreferredNodeTerm(w, t) for w, t in weighted_terms))


PREFERRED_CASES = {
    "single preference": (preferred((10, exprs(req("disk", "In", "hdd")))), "b"),
    "heavier preference wins": (
        preferred((10, exprs(req("disk", "In", "ssd"))), (50, exprs(req("gpu", "Exists")))),
        "c",
    ),
    "weights add up on a node matching both": (
        preferred(
            (30, exprs(req("disk", "In", "ssd"))),
            (20, exprs(req("cores", "Lt", "16"))),
            (40, exprs(req("gpu", "Exists"))),
        ),
        "a",
    ),
    "preference within the required set": (
        Affinity(
            node_required=(exprs(req("disk", "Exists")),),
            node_preferred=(
                PreferredNodeTerm(100, exprs(req("gpu", "Exists"))),
                PreferredNodeTerm(1, exprs(req("disk", "In", "hdd"))),
            ),
        ),
        "b",
    ),
}


@pytest.mark.parametrize("affinity,expected", PREFERRED_CASES.values(), ids=PREFERRED_CASES.keys())
def test_preferred_steers(affinity, expected):
    where, _ = place_one(nodes(), pod("p", affinity=affinity))
    assert where == expected


def test_preferred_outweighs_a_small_load_difference():
    # The preferred node already runs a pod, so least-allocated alone would pick another node.
    bound = [(pod("x", cpu=500, mem=512), "c")]
    plain, _ = place_one(nodes(), pod("p"), bound)
    assert plain in {"a", "b"}
    steered, _ = place_one(
        nodes(), pod("p", affinity=preferred((1, exprs(req("gpu", "Exists"))))), bound
    )
    assert steered == "c"
