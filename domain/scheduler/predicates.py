"""Predicates: can this pod run on this node? Resource fit, node selector and required node
affinity, taints and tolerations, unschedulable and not-ready nodes. Each failed check is a
short reason in Kubernetes' wording; FitSummary turns many of them into one sorted message."""

from __future__ import annotations

from collections.abc import Mapping

from domain.objects.core import Node, NodeSelectorRequirement, Pod
from domain.quantity import shortfall

UNSCHEDULABLE = "node(s) were unschedulable"
NOT_READY = "node(s) were not ready"
SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
UNTOLERATED_TAINT = "node(s) had untolerated taint"
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def _requirement_matches(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(req.key)
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    if req.operator in ("Gt", "Lt") and value is not None and len(req.values) == 1:
        try:
            have, bound = int(value), int(req.values[0])
        except ValueError:
            return False
        return have > bound if req.operator == "Gt" else have < bound
    return False


def matches_node(pod: Pod, node: Node) -> bool:
    """nodeSelector and requiredDuringScheduling node affinity (terms ORed, expressions ANDed)."""
    labels = node.metadata.labels
    if any(labels.get(k) != v for k, v in pod.spec.node_selector.items()):
        return False
    affinity = pod.spec.affinity
    required = (
        affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if (affinity and affinity.node_affinity)
        else None
    )
    if required is None or not required.node_selector_terms:
        return True
    fields = {"metadata.name": node.metadata.name}
    return any(
        all(_requirement_matches(r, labels) for r in term.match_expressions)
        and all(_requirement_matches(r, fields) for r in term.match_fields)
        and (term.match_expressions or term.match_fields)
        for term in required.node_selector_terms
    )


def tolerates_taints(pod: Pod, node: Node) -> bool:
    return all(
        any(t.tolerates(taint) for t in pod.spec.tolerations)
        for taint in node.spec.taints
        if taint.effect in _BLOCKING_EFFECTS
    )


def fit_failures(
    pod: Pod,
    request: Mapping[str, int],
    node: Node,
    free: Mapping[str, int],
    *,
    node_affinity: bool = True,
    taints: bool = True,
) -> list[str]:
    """Why ``pod`` cannot run on ``node`` with ``free`` resources left; empty when it fits.
    ``node_affinity`` and ``taints`` off skip those checks (the predicates plugin's switches)."""
    return node_failures(pod, node, node_affinity=node_affinity, taints=taints) or room_failures(request, free)


def node_failures(pod: Pod, node: Node, *, node_affinity: bool = True, taints: bool = True) -> list[str]:
    """The checks of ``fit_failures`` that read the node object alone, not its free room: the
    same pod spec and the same node object always give the same answer."""
    if node.spec.unschedulable:
        return [UNSCHEDULABLE]
    if node.status.conditions and not node.is_ready():
        return [NOT_READY]
    spec = pod.spec
    # No selector, no affinity, no taints: nothing to match (the common case, checked cheaply).
    if node_affinity and (spec.node_selector or spec.affinity is not None) and not matches_node(pod, node):
        return [SELECTOR_MISMATCH]
    if taints and node.spec.taints and not tolerates_taints(pod, node):
        return [UNTOLERATED_TAINT]
    return []


def room_failures(request: Mapping[str, int], free: Mapping[str, int]) -> list[str]:
    """The resources ``request`` asks for beyond ``free``, as ``fit_failures`` words them."""
    return [] if room_fits(request, free) else [f"Insufficient {name}" for name in shortfall(request, free)]


def room_fits(request: Mapping[str, int], free: Mapping[str, int]) -> bool:
    """Whether ``free`` holds ``request`` (``room_failures`` finds nothing), without wording why not."""
    # A loop, not all() over a generator: the predicates plugin asks this of every node it ranks,
    # and the generator costs twice as much.
    for name, amount in request.items():  # noqa: SIM110
        if amount > 0 and amount > free.get(name, 0):
            return False
    return True
