"""NodeTable: what a snapshot derives from the nodes and HyperNodes alone, kept between cycles.

The Node and HyperNode objects of a ``ClusterState`` are immutable and replaced on every change,
so a table built from them stays right for as long as the same objects (and the same IB label)
are there: a cycle rebuilds it only when a watch event changed a Node or HyperNode. The nodes
with their idle resources (``idle_nodes``) are kept the same way, per node, and built again only
where a changed pod or the last session's statements changed the node's load. ``NodeMemo``
holds both in the scheduler's cache; a fresh one gives the same snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from domain import quantity
from domain.changes import Changes
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList
from domain.scheduler.network_domains import (
    HYPERNODE,
    Domain,
    hyper_domains,
    label_domains,
    where_key,
)
from domain.scheduler.object_facts import Facts, request_of
from domain.state import ClusterState


@dataclass(slots=True, eq=False)
class NodeInfo:
    name: str
    node: Node
    allocatable: ResourceList
    idle: ResourceList
    labels: dict[str, str]

    def with_idle(self, idle: ResourceList) -> NodeInfo:
        """The same node with ``idle`` as its free room: what its checks say of a node in that state."""
        return NodeInfo(self.name, self.node, self.allocatable, idle, self.labels)


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


@dataclass(slots=True, eq=False)
class NodeMemo:
    table: NodeTable | None = None
    nodes: dict[str, NodeInfo] | None = None  # the last snapshot's nodes, built from ``nodes_table``
    nodes_table: NodeTable | None = None
    placed: dict[ObjectKey, str] = field(default_factory=dict)  # pod -> the node it holds resources on
    loads: dict[str, dict[ObjectKey, ResourceList]] = field(default_factory=dict)  # node -> pod -> request
    # node -> its allocatable less its loads, made when its loads or ``nodes_table`` last changed
    # (a node's idle starts as a copy of it: never change it)
    unloaded: dict[str, ResourceList] = field(default_factory=dict)
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


def node_table(state: ClusterState, memo: NodeMemo, changes: Changes, label: str) -> NodeTable:
    """The table for the state's nodes now: the memo's when they are the same objects (at once
    when no watch event changed a Node or HyperNode since the last call)."""
    changed = changes.take("Node") | changes.take("HyperNode")
    if memo.table is not None and not changed and memo.table.source[0] == label:
        return memo.table
    nodes = state.objects.get("Node", {})
    hypernodes = list(state.objects.get("HyperNode", {}).values())
    source = (label, tuple(nodes.items()), tuple(hypernodes))
    if memo.table is None or memo.table.source != source:
        chosen = [(name, node) for name, node in sorted(nodes.items()) if isinstance(node, Node)]
        memo.table = _build(source, chosen, hypernodes, label)
    return memo.table


def _unloaded(row: NodeRow, load: Iterable[ResourceList]) -> ResourceList:
    idle = dict(row.allocatable)
    for request in load:
        for name, amount in request.items():
            idle[name] = idle.get(name, 0) - amount
    return idle


def _fresh(row: NodeRow, unloaded: ResourceList) -> NodeInfo:
    return NodeInfo(row.name, row.node, row.allocatable, dict(unloaded), row.labels)


def _place(state: ClusterState, memo: NodeMemo, facts: Facts, changed: Iterable[ObjectKey]) -> set[str]:
    """File the ``changed`` pods under the node they hold resources on now; the nodes whose load changed."""
    pods = state.objects.get("Pod", {})
    moved: set[str] = set()
    for key in changed:
        old = memo.placed.pop(key, "")
        before = memo.loads[old].pop(key) if old else None
        pod = pods.get(key)
        name = state.node_of(pod, key) if isinstance(pod, Pod) and not pod.is_finished() else ""
        request = request_of(facts, key, pod) if name and isinstance(pod, Pod) else None
        if name and request is not None:
            memo.placed[key] = name
            memo.loads.setdefault(name, {})[key] = request
        if old != name or before != request:
            moved.update(n for n in (old, name) if n)
        if old and not memo.loads[old]:
            del memo.loads[old]
    return moved


def idle_nodes(
    state: ClusterState, memo: NodeMemo, facts: Facts, table: NodeTable, changed: set[ObjectKey]
) -> dict[str, NodeInfo]:
    """Every node with its idle resources: allocatable less the requests of the unfinished pods
    on it (bound by the cluster or by our decision). ``changed`` are the pods changed since the
    last call; only nodes whose load they changed, or that the last session's statements
    touched, are built again; the others are the last cycle's, as is the dict (a snapshot's
    nodes are valid until the next ``build``)."""
    if memo.nodes is None:
        memo.placed, memo.loads = {}, {}
        moved = _place(state, memo, facts, list(state.objects.get("Pod", {})))
    else:
        moved = _place(state, memo, facts, sorted(changed))
    nodes, loads = memo.nodes, memo.loads
    rebuilt: set[str] | None = None
    if nodes is None or memo.nodes_table is not table:
        unloaded = memo.unloaded = {
            name: _unloaded(row, loads.get(name, {}).values()) for name, row in table.rows.items()
        }
        nodes = {name: _fresh(row, unloaded[name]) for name, row in table.rows.items()}
    else:
        unloaded = memo.unloaded
        rebuilt = set()
        for name in memo.touched | moved:
            row = table.rows.get(name)
            if row is not None:
                if name in moved:  # else only the statements touched it: its loads are as they were
                    unloaded[name] = _unloaded(row, loads.get(name, {}).values())
                nodes[name] = _fresh(row, unloaded[name])
                rebuilt.add(name)
    memo.nodes, memo.nodes_table, memo.touched, memo.rebuilt = nodes, table, set(), rebuilt
    return nodes
