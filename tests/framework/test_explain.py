"""Explained decisions on a cluster small enough to work out by hand.

Six nodes, every one 4 cpu / 8 GiB unless said otherwise; the pod asks 2 cpu / 2 GiB and
selects ``disk=ssd``:

    cordoned  unschedulable                    -> node unschedulable
    plain     no disk label                    -> node-affinity
    tainted   disk=ssd, tainted NoSchedule     -> taint-toleration
    small     disk=ssd, 1 cpu                  -> resource-fit (insufficient cpu)
    empty     disk=ssd                         -> cpu .50, mem .25 after placement
    half      disk=ssd, holds 1 cpu / 2 GiB    -> cpu .75, mem .50 after placement

least-allocated scores 100·(1 − mean fraction): empty 62.5, half 37.5; most-allocated scores
100·mean fraction: empty 37.5, half 62.5. Weighted 1 and 2: empty 62.5 + 75 = 137.5, half
37.5 + 125 = 162.5, so half wins.
"""

from __future__ import annotations

import pytest

from berth.api.objects import PodGroup
from berth.api.selectors import Taint
from berth.framework.explain import PLACED, REFUSED, ROLLED_BACK
from tests.builders import config, node, pod, run, scheduler

SSD = {"disk": "ssd"}
CONFIG = config(
    [
        "gang",
        "node-affinity",
        "taint-toleration",
        "resource-fit",
        {"name": "least-allocated", "arguments": {"weight": 1}},
        {"name": "most-allocated", "arguments": {"weight": 2}},
    ]
)


def _cluster():
    nodes = [
        node("cordoned", labels=SSD, unschedulable=True),
        node("plain"),
        node("tainted", labels=SSD, taints=[Taint("dedicated", "x")]),
        node("small", cpu=1000, labels=SSD),
        node("empty", labels=SSD),
        node("half", labels=SSD),
    ]
    return scheduler(nodes, CONFIG, bound=[(pod("resident", cpu=1000, mem=2048), "half")])


def _tallies(decision):
    return [(f.plugin, f.rejected, f.passed) for f in decision.filters]


def test_placement_tallies_every_filter_and_scores_the_best_nodes():
    s = _cluster()
    explainer = s.explain(["web-*"])
    binds = run(s, [pod("web-1", cpu=2000, mem=2048, node_selector=SSD), pod("other")])
    assert binds["web-1"] == "half"
    assert set(explainer.records) == {"default/web-1"}  # the other pod is not recorded
    record = explainer.records["default/web-1"]
    assert record.refused is None and record.refusals == 0
    decision = record.placed
    assert (decision.outcome, decision.node, decision.nodes) == (PLACED, "half", 6)
    assert _tallies(decision) == [
        ("(node)", {"node unschedulable": 1}, 5),
        ("node-affinity", {"node affinity/selector mismatch": 1}, 4),
        ("taint-toleration", {"untolerated taint": 1}, 3),
        ("resource-fit", {"insufficient cpu": 1}, 2),
    ]
    assert decision.weights == {"least-allocated": 1.0, "most-allocated": 2.0}
    scores = {s.node: s for s in decision.scores}
    assert list(scores) == ["half", "empty"]  # best first
    assert scores["half"].chosen and not scores["empty"].chosen
    assert scores["half"].scores == {
        "least-allocated": (37.5, 37.5),
        "most-allocated": (62.5, 125.0),
    }
    assert scores["empty"].scores == {
        "least-allocated": (62.5, 62.5),
        "most-allocated": (37.5, 75.0),
    }
    assert scores["half"].total == pytest.approx(162.5, abs=1e-5)
    assert scores["empty"].total == pytest.approx(137.5, abs=1e-5)


def test_refusal_gives_the_same_message_as_the_pending_reason():
    s = _cluster()
    explainer = s.explain(["default/big"])
    big = pod("big", cpu=4500, mem=1024, node_selector=SSD)
    run(s, [big])
    run(s, [], now=10.0)  # tried again: two refusals, the last one kept
    record = explainer.records["default/big"]
    assert record.placed is None and record.refusals == 2 and record.first_refused == 0.0
    decision = record.refused
    assert (decision.outcome, decision.time, decision.scores) == (REFUSED, 10.0, [])
    assert _tallies(decision)[-1] == ("resource-fit", {"insufficient cpu": 3}, 0)
    assert decision.message == s.pending_reason(big)
    assert decision.message == (
        "0/6 nodes available: 3 insufficient cpu, 1 node affinity/selector mismatch, "
        "1 node unschedulable, 1 untolerated taint"
    )


def test_a_gang_placement_undone_is_explained_as_rolled_back():
    # Two 3.5-cpu pods of a gang of two: the first fits (empty), the second nowhere.
    s = _cluster()
    explainer = s.explain(["gang-*"])
    s.add_group(PodGroup("gang", min_member=2))
    members = [pod(f"gang-{i}", cpu=3500, node_selector=SSD, group="gang") for i in range(2)]
    assert run(s, members) == {}
    first = explainer.records["default/gang-0"].refused
    assert first.outcome == ROLLED_BACK and first.node == "empty"
    assert first.message.startswith("the search chose empty, but the placement was undone")
    second = explainer.records["default/gang-1"].refused
    assert second.outcome == REFUSED and second.message.startswith("0/6 nodes available")


def test_records_serialize_to_plain_json():
    import json

    s = _cluster()
    explainer = s.explain(["web-1"])
    run(s, [pod("web-1", cpu=2000, mem=2048, node_selector=SSD)])
    data = explainer.records["default/web-1"].to_dict()
    assert json.loads(json.dumps(data)) == data
    placed = data["placed"]
    assert placed["feasible"] == 2 and placed["scores"][0]["chosen"] is True
    assert placed["scores"][0]["plugins"]["most-allocated"] == {"raw": 62.5, "weighted": 125.0}
