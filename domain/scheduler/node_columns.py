"""Node columns: one node set's allocatable and free room as numpy columns (one per resource,
the nodes in name order), kept current as nodes change, with each node's *kind*: all that
node-local predicates read of the node object for a *plain* task, one without a node selector
or affinity (schedulable, ready, taints). For a task with a selector or affinity, the node
checks are made once per node and kept per shape (``masks``) until a node object changes.

Node-local predicates and scores (``registry.NODE_LOCAL``) also give their answer for a whole
column at once (``Columns``), with the same integer and floating-point operations in the same
order as for one node, so the best node of a set for a new task shape is found in a few array
operations over every node instead of one Python call per node: the best score, ties to the
first by name, exactly as a scan chooses. A plugin that cannot answer a task exactly this way
(integers past 2**53, say) answers None, and the scan answers instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from domain.objects.core import Node
from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_table import NodeInfo

Column = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.float64]
KindKey = tuple[object, ...]
EXACT = 1 << 53  # integers below this are floats exactly, and their quotients rounded as Python's
MASKS = 256  # shapes whose node checks are kept, the latest (pods pinned to one node each are shapes of their own)


def plain(task: TaskInfo) -> bool:
    """Whether predicates read no node label for ``task``: no node selector, no affinity."""
    spec = task.pod.spec
    return not spec.node_selector and spec.affinity is None


def kind_of(node: NodeInfo) -> KindKey:
    """What node-local predicates read of ``node``'s object for a plain task."""
    spec, status = node.node.spec, node.node.status
    not_ready = bool(status.conditions) and not node.node.is_ready()
    return spec.unschedulable, not_ready, repr(spec.taints) if spec.taints else ""


@dataclass(slots=True, eq=False)
class NodeColumns:
    names: list[str]  # the set's nodes, sorted: a row's index is its place here
    nodes: dict[str, NodeInfo]  # by name, the latest object of each
    row: dict[str, int]
    allocatable: dict[str, Column] = field(default_factory=dict)  # resource -> its column
    idle: dict[str, Column] = field(default_factory=dict)
    kind: Column = field(default_factory=lambda: np.zeros(0, np.int64))  # each row's kind, an index of ``kinds``
    kinds: list[Node] = field(default_factory=list)  # a node object of each kind, the first seen
    _kind_ids: dict[KindKey, int] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)  # nodes changed since: read again when next asked
    small: bool = True  # every amount below ``EXACT`` in size
    masks: dict[object, Mask] = field(default_factory=dict)  # node checks per shape, until a node object changes
    _objects: list[object] = field(default_factory=list)  # each row's node object, as last read
    _used: dict[str, Column] = field(default_factory=dict)  # resource -> allocatable - idle, as last asked
    _most: dict[str, int] = field(default_factory=dict)  # resource -> the largest of ``_used``, in size

    @classmethod
    def of_nodes(cls, nodes: Sequence[NodeInfo]) -> NodeColumns:
        names = sorted(node.name for node in nodes)
        columns = cls(names, {node.name: node for node in nodes}, {name: i for i, name in enumerate(names)})
        columns.kind = np.zeros(len(names), np.int64)
        columns._objects = [None] * len(names)
        columns.dirty = set(names)
        return columns

    def changed(self, node: NodeInfo) -> None:
        """``node`` (its object, or its free room) changed: read it again when next asked."""
        if node.name in self.nodes:
            self.nodes[node.name] = node
            self.dirty.add(node.name)

    def current(self) -> NodeColumns:
        """The columns with every changed node read again."""
        if self.dirty:
            self._used.clear()
            self._most.clear()
        for name in self.dirty:
            node, i = self.nodes[name], self.row[name]
            if node.node is not self._objects[i]:
                self._objects[i] = node.node
                self.kind[i] = self._kind_id(node)
                self.masks.clear()
            self._put(self.allocatable, node.allocatable, i)
            self._put(self.idle, node.idle, i)
        self.dirty.clear()
        return self

    def _kind_id(self, node: NodeInfo) -> int:
        key = kind_of(node)
        found = self._kind_ids.get(key)
        if found is None:
            found = self._kind_ids[key] = len(self.kinds)
            self.kinds.append(node.node)
        return found

    def _put(self, columns: dict[str, Column], amounts: dict[str, int], i: int) -> None:
        for name, column in columns.items():
            if name not in amounts:
                column[i] = 0
        for name, amount in amounts.items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = np.zeros(len(self.names), np.int64)
            fits = -EXACT < amount < EXACT
            self.small &= fits
            column[i] = amount if fits else 0

    def column(self, columns: dict[str, Column], name: str) -> Column:
        """``name``'s column, zeros when no node has it."""
        found = columns.get(name)
        return np.zeros(len(self.names), np.int64) if found is None else found

    def used(self, name: str) -> Column:
        """What the nodes hold of ``name``: allocatable less free room (current columns only)."""
        found = self._used.get(name)
        if found is None:
            found = self._used[name] = self.column(self.allocatable, name) - self.column(self.idle, name)
        return found

    def exact(self, name: str, request: int, factor: int = 1) -> bool:
        """Whether ``(used + request) * factor`` is below ``EXACT`` in size on every node: a
        float exactly, and a quotient of two such rounded once, as Python divides integers."""
        most = self._most.get(name)
        if most is None:
            used = self.used(name)
            most = self._most[name] = int(np.abs(used).max()) if len(used) else 0
        return (most + abs(request)) * abs(factor) < EXACT


@dataclass(slots=True, eq=False)
class Rows:
    """Some rows of node columns (the nodes a task fits on, in name order), for scores: each
    resource's columns taken once."""

    columns: NodeColumns
    rows: npt.NDArray[np.intp] | None  # None: every row
    _taken: dict[tuple[bool, str], Column] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns.names) if self.rows is None else len(self.rows)

    def allocatable(self, name: str) -> Column:
        return self._take(False, name)

    def used(self, name: str) -> Column:
        """allocatable - idle: with a request added, the ``total - idle + request`` of one node's score."""
        return self._take(True, name)

    def exact(self, name: str, request: int, factor: int = 1) -> bool:
        return self.columns.exact(name, request, factor)

    def _take(self, used: bool, name: str) -> Column:
        found = self._taken.get((used, name))
        if found is None:
            whole = self.columns.used(name) if used else self.columns.column(self.columns.allocatable, name)
            found = self._taken[used, name] = whole if self.rows is None else whole[self.rows]
        return found


Fit = Callable[[TaskInfo, NodeColumns], Mask | None]
Score = Callable[[TaskInfo, Rows], Scores | None]


@dataclass(frozen=True, slots=True)
class Columns:
    """The session's predicates and scores over whole columns: a mask of the nodes a task fits
    on, and every node's score (meaningful where it fits); None when not exactly so."""

    fit: Fit
    score: Score

    def best(self, task: TaskInfo, columns: NodeColumns) -> NodeInfo | None:
        """The node a scan of every node would choose for ``task``: the best score, ties to the
        name; None when none fits or the columns cannot tell exactly (the scan answers then)."""
        columns.current()
        fits = self.fit(task, columns) if columns.small else None
        if fits is None:
            return None
        rows = np.flatnonzero(fits)
        if not len(rows):
            return None
        scores = self.score(task, Rows(columns, None if len(rows) == len(fits) else rows))
        if scores is None:
            return None
        return columns.nodes[columns.names[rows[int(np.argmax(scores))]]]  # the first of the best: names are sorted


def combined(fits: Sequence[Fit | None], scores: Sequence[Score | None]) -> Columns | None:
    """The session's predicates (all must pass) and scores (summed in their order, as
    ``Session.node_score``) over columns; None when a callback gives none."""
    fit_fns = [fn for fn in fits if fn is not None]
    score_fns = [fn for fn in scores if fn is not None]
    if len(fit_fns) < len(fits) or len(score_fns) < len(scores):
        return None

    def fit(task: TaskInfo, columns: NodeColumns) -> Mask | None:
        found = np.ones(len(columns.names), np.bool_)
        for fn in fit_fns:
            mask = fn(task, columns)
            if mask is None:
                return None
            found &= mask
        return found

    def score(task: TaskInfo, rows: Rows) -> Scores | None:
        total = np.zeros(len(rows))
        for fn in score_fns:
            found = fn(task, rows)
            if found is None:
                return None
            total = total + found
        return total

    return Columns(fit, score)
