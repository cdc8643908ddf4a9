"""NodeTable: what a snapshot derives from the nodes and HyperNodes alone, kept between cycles.

The Node and HyperNode objects of a ``ClusterState`` are immutable and replaced on every change,
so a table built from them stays right for as long as the same objects (and the same IB label)
are there: every cycle compares them (identity first, then value) and rebuilds only on a change.
A pod's effective request, and what a task takes from its pod alone (``snapshot``'s facts), are
memoised the same way, per pod object, as is what a job takes from its PodGroup alone. Nothing here is a decision
input that a cycle could not recompute from the state: a fresh ``Memo`` gives the same snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from domain import quantity
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.objects.volcano import NETWORK_TOPOLOGY_ANNOTATION, PodGroup
from domain.quantity import ResourceList
from domain.scheduler.network_domains import (
    HYPERNODE,
    Domain,
    TopologyRequest,
    hyper_domains,
    hyper_request,
    label_domains,
    where_key,
)
from domain.state import ClusterState

TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"  # the Volcano Job task a pod belongs to (minTaskMember)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True, eq=False)
class NodeInfo:
    name: str
    node: Node
    allocatable: ResourceList
    idle: ResourceList
    labels: dict[str, str]


@dataclass(frozen=True, slots=True)
class NodeRow:
    name: str
    node: Node
    allocatable: ResourceList  # shared: never change it, copy it
    labels: dict[str, str]


@dataclass(slots=True, eq=False)
class NodeTable:
    source: tuple[object, ...]  # the objects and the label it was built from
    rows: dict[str, NodeRow]  # by name
    total: ResourceList
    largest: ResourceList
    ib: list[Domain]
    hyper: list[Domain]
    members: dict[str, list[str]]  # where-key -> its nodes' names, sorted
    node_domains: dict[str, list[str]]  # node -> where-keys of its domains


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What a snapshot's task takes from its pod object alone."""

    group: str  # its PodGroup's name; "" for a lone pod
    job: ObjectKey | None  # its PodGroup's key; None for a lone pod (the pod's own key)
    request: ResourceList  # shared: never change it
    priority: int
    role: str
    created: float


@dataclass(frozen=True, slots=True)
class GroupFacts:
    """What a snapshot's job takes from its PodGroup object alone."""

    created: float
    topology: TopologyRequest | None
    job_owners: tuple[tuple[ObjectKey, str], ...]  # (key, uid) of the Volcano Jobs that own it


@dataclass(slots=True, eq=False)
class Memo:
    table: NodeTable | None = None
    requests: dict[int, tuple[Pod, ResourceList]] = field(default_factory=dict)  # id(pod) -> (pod, request)
    facts: dict[int, tuple[Pod, PodFacts]] = field(default_factory=dict)  # id(pod) -> (pod, its facts)
    groups: dict[int, tuple[PodGroup, str, GroupFacts]] = field(default_factory=dict)  # id -> (group, label, facts)
    nodes: dict[str, NodeInfo] | None = None  # the last snapshot's nodes, built from ``nodes_table``
    nodes_table: NodeTable | None = None
    placed: dict[ObjectKey, str] = field(default_factory=dict)  # pod -> the node it holds resources on
    loads: dict[str, dict[ObjectKey, ResourceList]] = field(default_factory=dict)  # node -> pod -> request
    touched: set[str] = field(default_factory=set)  # nodes the last session's statements changed
    rebuilt: set[str] | None = None  # nodes the last ``idle_nodes`` built again; None: all of them


def _build(
    source: tuple[object, ...], nodes: list[tuple[str, Node]], hypernodes: list[object], label: str
) -> NodeTable:
    rows = {name: NodeRow(name, node, node.allocatable(), dict(node.metadata.labels)) for name, node in nodes}
    total = quantity.sum_lists(r.allocatable for r in rows.values())
    largest: ResourceList = {}
    for row in rows.values():
        largest = quantity.max_lists(largest, row.allocatable)
    ib = label_domains(rows.values(), label)
    hyper = hyper_domains(hypernodes, rows.values())
    names = rows.keys()
    members: dict[str, list[str]] = {}
    node_domains: dict[str, list[str]] = {}
    for prefix, domains in ((label, ib), (HYPERNODE, hyper)):
        for domain in domains:
            where = where_key(prefix, domain)
            members[where] = [n for n in sorted(domain.nodes) if n in names]
            for name in members[where]:
                node_domains.setdefault(name, []).append(where)
    return NodeTable(source, rows, total, largest, ib, hyper, members, node_domains)


def node_table(state: ClusterState, memo: Memo, label: str) -> NodeTable:
    """The table for the state's nodes now: the memo's when they are the same objects (at once
    when no watch event changed a Node or HyperNode since the last call)."""
    changed = state.take_changed("Node") | state.take_changed("HyperNode")
    if memo.table is not None and not changed and memo.table.source[0] == label:
        return memo.table
    nodes = state.objects.get("Node", {})
    hypernodes = list(state.objects.get("HyperNode", {}).values())
    source = (label, tuple(nodes.items()), tuple(hypernodes))
    if memo.table is None or memo.table.source != source:
        chosen = [(name, node) for name, node in sorted(nodes.items()) if isinstance(node, Node)]
        memo.table = _build(source, chosen, hypernodes, label)
    return memo.table


def request_of(memo: Memo, pod: Pod) -> ResourceList:
    """``pod.spec.requests()``, computed once per pod object; the caller must not change it."""
    entry = memo.requests.get(id(pod))
    if entry is None or entry[0] is not pod:
        entry = memo.requests[id(pod)] = (pod, pod.spec.requests())
    return entry[1]


def seconds(moment: datetime | None) -> float:
    return ((moment or _EPOCH) - _EPOCH).total_seconds()


def pod_facts(memo: Memo, pod: Pod) -> PodFacts:
    """What a task takes from its pod alone, computed once per pod object."""
    entry = memo.facts.get(id(pod))
    if entry is None or entry[0] is not pod:
        name = pod.group_name()
        job = ObjectKey(f"{pod.metadata.namespace}/{name}") if name else None
        # The task name: the annotation, else the label of the same name (Volcano's getTaskID).
        role = pod.metadata.annotations.get(TASK_SPEC_ANNOTATION) or pod.metadata.labels.get(TASK_SPEC_ANNOTATION, "")
        facts = PodFacts(
            name, job, request_of(memo, pod), pod.spec.priority or 0, role, seconds(pod.metadata.creation_timestamp)
        )
        entry = memo.facts[id(pod)] = (pod, facts)
    return entry[1]


def _topology(group: PodGroup, label: str) -> TopologyRequest | None:
    if group.metadata.annotations.get(NETWORK_TOPOLOGY_ANNOTATION) == "ib-cluster":
        return TopologyRequest(hard=True, highest_tier=None, label=label)
    spec = group.spec.network_topology
    if spec is None:
        return None
    return hyper_request(spec)


def group_facts(memo: Memo, group: PodGroup, label: str) -> GroupFacts:
    """What a job takes from its PodGroup alone (``label`` names IB clusters), once per object."""
    entry = memo.groups.get(id(group))
    if entry is None or entry[0] is not group or entry[1] != label:
        meta = group.metadata
        owners = tuple(
            (ObjectKey(f"{meta.namespace}/{owner.name}"), owner.uid)
            for owner in meta.owner_references
            if owner.kind == "Job"
        )
        facts = GroupFacts(seconds(meta.creation_timestamp), _topology(group, label), owners)
        entry = memo.groups[id(group)] = (group, label, facts)
    return entry[2]


def forget_gone(memo: Memo, pods: dict[object, Pod], groups: dict[object, object]) -> None:
    """Drop the memoised requests and facts of pod and PodGroup objects the state no longer holds."""
    if len(memo.requests) > 2 * len(pods) + 64 or len(memo.facts) > 2 * len(pods) + 64:
        live = {id(p) for p in pods.values()}
        memo.requests = {k: v for k, v in memo.requests.items() if k in live}
        memo.facts = {k: v for k, v in memo.facts.items() if k in live}
    if len(memo.groups) > 2 * len(groups) + 64:
        live = {id(g) for g in groups.values()}
        memo.groups = {k: v for k, v in memo.groups.items() if k in live}


def _fresh(row: NodeRow, load: Iterable[ResourceList]) -> NodeInfo:
    idle = dict(row.allocatable)
    for request in load:
        for name, amount in request.items():
            idle[name] = idle.get(name, 0) - amount
    return NodeInfo(row.name, row.node, row.allocatable, idle, row.labels)


def _place(state: ClusterState, memo: Memo, changed: Iterable[ObjectKey]) -> set[str]:
    """File the ``changed`` pods under the node they hold resources on now; the nodes whose load changed."""
    pods = state.objects.get("Pod", {})
    moved: set[str] = set()
    for key in changed:
        old = memo.placed.pop(key, "")
        before = memo.loads[old].pop(key) if old else None
        pod = pods.get(key)
        name = state.node_of(pod, key) if isinstance(pod, Pod) and not pod.is_finished() else ""
        request = request_of(memo, pod) if name and isinstance(pod, Pod) else None
        if name and request is not None:
            memo.placed[key] = name
            memo.loads.setdefault(name, {})[key] = request
        if old != name or before != request:
            moved.update(n for n in (old, name) if n)
        if old and not memo.loads[old]:
            del memo.loads[old]
    return moved


def idle_nodes(state: ClusterState, memo: Memo, table: NodeTable, changed: set[ObjectKey]) -> dict[str, NodeInfo]:
    """Every node with its idle resources: allocatable less the requests of the unfinished pods
    on it (bound by the cluster or by our decision). ``changed`` are the pods changed since the
    last call; only nodes whose load they changed, or that the last session's statements
    touched, are built again; the others are the last cycle's, as is the dict (a snapshot's
    nodes are valid until the next ``build``)."""
    if memo.nodes is None:
        memo.placed, memo.loads = {}, {}
        moved = _place(state, memo, list(state.objects.get("Pod", {})))
    else:
        moved = _place(state, memo, sorted(changed))
    nodes = memo.nodes
    rebuilt: set[str] | None = None
    if nodes is None or memo.nodes_table is not table:
        nodes = {name: _fresh(row, memo.loads.get(name, {}).values()) for name, row in table.rows.items()}
    else:
        rebuilt = set()
        for name in memo.touched | moved:
            row = table.rows.get(name)
            if row is not None:
                nodes[name] = _fresh(row, memo.loads.get(name, {}).values())
                rebuilt.add(name)
    memo.nodes, memo.nodes_table, memo.touched, memo.rebuilt = nodes, table, set(), rebuilt
    return nodes
