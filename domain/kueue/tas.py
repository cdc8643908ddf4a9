"""Topology-aware placement (TAS): a podSet's pods are put in one domain of the required level
(or, for preferred, the lowest level where one domain fits, else anywhere), computed from live
node capacity, and written as ``topologyAssignment`` (levels, and domains with a pod count).

Node capacity is allocatable minus the requests of running pods that TAS does not account for
(pods without the ``kueue.x-k8s.io/workload`` annotation) minus the assignments of every
workload holding quota in a TAS flavor. Among the domains that fit, the one with the least
free capacity wins (best fit, then domain values); inside it, the roomiest nodes fill first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.workloads import WorkloadInfo
from domain.lifecycle.workload import HOSTNAME_LABEL
from domain.objects.core import Node, PodSpec
from domain.objects.kueue import PodSetTopologyRequest, ResourceFlavor
from domain.quantity import PODS, ResourceList

WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
_UNBOUNDED = 1 << 30

NodeFree = dict[str, ResourceList]


@dataclass(frozen=True, slots=True)
class Placement:
    assignment: dict[str, Any]  # the topologyAssignment JSON
    per_node: dict[str, int]  # node -> pods


def node_free(snap: KueueSnapshot) -> NodeFree:
    """Free resources per node now, cached in the snapshot for the cycle."""
    if snap.node_free is not None:
        return snap.node_free
    state = snap.state
    free: NodeFree = {n.metadata.name: n.allocatable() for n in _nodes(snap)}
    for pod in state.pods().values():
        node = state.node_of(pod)
        if node in free and not pod.is_finished() and WORKLOAD_ANNOTATION not in pod.metadata.annotations:
            _take(free[node], pod.spec.requests(), 1)
    for info in snap.holders():
        for node, per_pod, count in _assigned(info):
            if node in free:
                _take(free[node], per_pod, count)
    snap.node_free = free
    return free


def _nodes(snap: KueueSnapshot) -> list[Node]:
    return [n for _, n in sorted(snap.state.of_kind("Node").items()) if isinstance(n, Node)]


def _take(free: ResourceList, per_pod: Mapping[str, int], count: int) -> None:
    for name, amount in per_pod.items():
        free[name] = free.get(name, 0) - amount * count


def _assigned(info: WorkloadInfo) -> list[tuple[str, ResourceList, int]]:
    requests = {p.name: p.per_pod for p in info.pod_sets}
    out = []
    for psa in (info.view.admission or {}).get("podSetAssignments", ()):
        assignment = psa.get("topologyAssignment") or {}
        if (assignment.get("levels") or [""])[-1] != HOSTNAME_LABEL:
            continue
        for domain in assignment.get("domains", ()):
            out.append((domain["values"][-1], requests.get(psa.get("name", ""), {}), int(domain["count"])))
    return out


def reserve(snap: KueueSnapshot, placement: Placement, per_pod: ResourceList) -> None:
    free = node_free(snap)
    for node, count in placement.per_node.items():
        _take(free[node], per_pod, count)


def _fits_node(node: Node, flavor: ResourceFlavor, spec: PodSpec, levels: list[str]) -> bool:
    labels = node.metadata.labels
    if not node.is_ready() or node.spec.unschedulable or any(level not in labels for level in levels):
        return False
    if any(labels.get(k) != v for k, v in (*flavor.spec.node_labels.items(), *spec.node_selector.items())):
        return False
    tolerations = [*spec.tolerations, *flavor.spec.tolerations]
    return all(
        taint.effect == "PreferNoSchedule" or any(t.tolerates(taint) for t in tolerations) for taint in node.spec.taints
    )


def _capacity(free: ResourceList, per_pod: Mapping[str, int], declared: ResourceList) -> int:
    pods = _UNBOUNDED
    for name, amount in per_pod.items():
        if amount <= 0 or (name == PODS and name not in declared):
            continue
        pods = min(pods, max(0, free.get(name, 0)) // amount)
    return pods


def place(
    snap: KueueSnapshot,
    flavor: ResourceFlavor,
    spec: PodSpec,
    per_pod: ResourceList,
    *,
    count: int,
    request: PodSetTopologyRequest | None,
    within: Mapping[str, str] | None = None,
    exclude: frozenset[str] = frozenset(),
) -> Placement | str:
    """Place ``count`` pods; a Placement, or the reason (a message) they do not fit.
    ``within`` restricts the nodes to a domain (level label -> value); ``exclude`` drops nodes."""
    topology = snap.topologies.get(flavor.spec.topology_name or "")
    if topology is None:
        return f'topology "{flavor.spec.topology_name}" not found'
    levels = [level.node_label for level in topology.spec.levels]
    free = node_free(snap)
    capacity: dict[str, tuple[tuple[str, ...], int]] = {}
    for node in _nodes(snap):
        name = node.metadata.name
        if name in exclude or name not in free or not _fits_node(node, flavor, spec, levels):
            continue
        if within and any(node.metadata.labels.get(k) != v for k, v in within.items()):
            continue
        labels = node.metadata.labels
        pods = _capacity(free[name], per_pod, node.allocatable())
        if pods > 0:
            capacity[name] = (tuple(labels[level] for level in levels), pods)
    for depth in _depths(levels, request):
        chosen = _best_domain(capacity, depth, count)
        if chosen is not None:
            return _fill(capacity, chosen, depth, count, levels)
    wanted = request.required if request and request.required else "any domain"
    return f'topology "{topology.metadata.name}" does not fit {count} pod(s) in {wanted}'


def _depths(levels: list[str], request: PodSetTopologyRequest | None) -> list[int]:
    """Level prefixes to try: the required one alone; the preferred one and those above; or none (0)."""
    if request is not None and request.required in levels:
        return [levels.index(request.required) + 1]
    if request is not None and request.preferred in levels:
        return [*range(levels.index(request.preferred) + 1, 0, -1), 0]
    return [0]


def _best_domain(capacity: Mapping[str, tuple[tuple[str, ...], int]], depth: int, count: int) -> tuple[str, ...] | None:
    totals: dict[tuple[str, ...], int] = {}
    for values, pods in capacity.values():
        totals[values[:depth]] = totals.get(values[:depth], 0) + pods
    fitting = [(total, domain) for domain, total in totals.items() if total >= count]
    return min(fitting)[1] if fitting else None


def _fill(
    capacity: Mapping[str, tuple[tuple[str, ...], int]],
    domain: tuple[str, ...],
    depth: int,
    count: int,
    levels: list[str],
) -> Placement:
    per_node: dict[str, int] = {}
    candidates = sorted((-pods, name) for name, (values, pods) in capacity.items() if values[:depth] == domain)
    left = count
    for negative, name in candidates:
        if left == 0:
            break
        per_node[name] = min(-negative, left)
        left -= per_node[name]
    return Placement(assignment(levels, {capacity[n][0]: c for n, c in per_node.items()}), per_node)


def assignment(levels: list[str], counts: Mapping[tuple[str, ...], int]) -> dict[str, Any]:
    domains = [{"values": list(values), "count": count} for values, count in sorted(counts.items()) if count > 0]
    return {"levels": list(levels), "domains": domains}
