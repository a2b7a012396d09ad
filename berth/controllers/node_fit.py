"""Whether a pod could run on one node, judged from the objects alone, as OpenKruise's
BroadcastJob controller judges it before it creates a pod for that node: node name, node
selector and required node affinity, NoSchedule and NoExecute taints, the unschedulable flag,
and the pod's requests against the node's allocatable (the node's other pods are not counted:
whether they leave room is the scheduler's business)."""

from __future__ import annotations

from berth.api.objects import Node, Pod
from berth.api.selectors import LabelSelector, NodeSelectorTerm, Taint, Toleration

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    if not term.expressions and not term.fields:
        return False  # an empty term matches no node
    if term.expressions and not LabelSelector(term.expressions).matches(node.labels):
        return False
    for field in term.fields:
        inside = node.name in field.values
        if (field.operator == "In") != inside:
            return False
    return True


def _tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    return any(toleration.tolerates(taint) for toleration in tolerations)


def why_not(pod: Pod, node: Node) -> str:
    """Why ``pod`` cannot run on ``node`` ("" when it can)."""
    if pod.node_name and pod.node_name != node.name:
        return "node name mismatch"
    if any(node.labels.get(key) != value for key, value in pod.node_selector.items()):
        return "node selector mismatch"
    terms = pod.affinity.node_required
    if terms and not any(_term_matches(term, node) for term in terms):
        return "node affinity mismatch"
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(taint, pod.tolerations):
            return f"untolerated taint {taint.key}"
    if node.unschedulable and not _tolerated(UNSCHEDULABLE_TAINT, pod.tolerations):
        return "node is unschedulable"
    for name, amount in pod.requests.items():
        if amount > node.allocatable.get(name, 0):
            return f"insufficient {name}"
    return ""
