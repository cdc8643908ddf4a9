"""Node classes: the nodes of one node set grouped by all that node-local predicates and scores
(``registry.NODE_LOCAL``) read of a node for a *plain* task, one without a node selector or
affinity: whether it is schedulable and ready, its taints, its allocatable and its free room.

Nodes of one class give every plain task the same predicate answer and the same score, so the
best node of a class is its first by name, and the best node of the set is the best of the
classes' first nodes: exactly what a scan of every node chooses (the best score, ties to the
name), at one evaluation per class. A cluster of alike machines starts as one class, and each
placement moves one node to another: the first question of a new shape (every question, when
no two pods share a shape) costs the nodes that differ, not all of them.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_table import NodeInfo

ClassKey = tuple[object, ...]


def plain(task: TaskInfo) -> bool:
    """Whether predicates read no node label for ``task``: no node selector, no affinity."""
    spec = task.pod.spec
    return not spec.node_selector and spec.affinity is None


def class_of(node: NodeInfo) -> ClassKey:
    """What node-local predicates and scores read of ``node`` for a plain task (not its name)."""
    spec, status = node.node.spec, node.node.status
    not_ready = bool(status.conditions) and not node.node.is_ready()
    taints = repr(spec.taints) if spec.taints else ""
    return spec.unschedulable, not_ready, taints, tuple(node.allocatable.items()), tuple(node.idle.items())


@dataclass(slots=True, eq=False)
class NodeClasses:
    nodes: dict[str, NodeInfo]  # the set's nodes, by name (the latest object of each)
    members: dict[ClassKey, list[str]] = field(default_factory=dict)  # each class's nodes, sorted by name
    of: dict[str, ClassKey] = field(default_factory=dict)  # node -> its class, as last worked out
    dirty: set[str] = field(default_factory=set)  # nodes changed since: classed again when next asked

    @classmethod
    def of_nodes(cls, nodes: Sequence[NodeInfo]) -> NodeClasses:
        classes = cls({node.name: node for node in nodes})
        for name in sorted(classes.nodes):
            key = classes.of[name] = class_of(classes.nodes[name])
            classes.members.setdefault(key, []).append(name)
        return classes

    def changed(self, node: NodeInfo) -> None:
        """``node`` (its object, or its free room) changed: class it again when next asked."""
        if node.name in self.nodes:
            self.nodes[node.name] = node
            self.dirty.add(node.name)

    def firsts(self) -> Iterator[NodeInfo]:
        """Each class's first node by name, the classes in no set order."""
        for name in self.dirty:
            old, new = self.of[name], class_of(self.nodes[name])
            if new == old:
                continue
            names = self.members[old]
            del names[bisect_left(names, name)]
            if not names:
                del self.members[old]
            insort(self.members.setdefault(new, []), name)
            self.of[name] = new
        self.dirty.clear()
        nodes = self.nodes
        return (nodes[names[0]] for names in self.members.values())
