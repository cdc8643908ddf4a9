"""Candidates: per task shape, the feasible nodes of a node set ranked by score, kept current as
placements change nodes, so that a cycle does not re-run every predicate on every node for every
task (the all-pairs cost that makes naive gang schedulers slow).

A shape is what predicates and scores look at (requests, selector, affinity, tolerations, and
the job when its placed members sway the score). When a node's free resources change, its older
entries go stale and every ranking that holds it marks it for re-evaluation; a ranking evaluates
its marked nodes when it is next asked (a node that changes many times between two questions is
evaluated once, and a ranking nobody asks again never is), so the top valid entry is exactly what
a full scan would choose: the best score, ties to the name.

When every predicate and score looks at the task's shape and the node alone, the rankings stay
right from one cycle to the next as long as the nodes that changed in between are marked: a
session then ``carry``-s the last cycle's candidates instead of ranking every node again, and a
shape's first questions are answered over node columns (``node_columns``): a few array
operations over every node instead of a call per node.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from domain.objects.core import Node
from domain.reasons import FitSummary
from domain.scheduler import node_columns
from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_table import NodeInfo

# The questions of a plain shape answered over node columns before a ranking is kept for it: a
# ranking made afresh evaluates every node, and pays off for a shape asked many times.
ASKED_OVER_COLUMNS = 8
LOG_LIMIT = 1 << 16  # node changes remembered for ``changed_since``
DRAFTS = 64  # first scans kept, the latest, for a shape asked again to start its ranking from
KINDS_KEPT = 1024  # node kinds numbered (``Candidates._alike_as``): twice the nodes and this many
ANSWERS_PER_NODE = 2  # a plain shape's kept answers (``Candidates._answer``): at most this many per node, and 1,024
Entry = tuple[float, str, int]  # (-score, node name, node version when scored)
Answer = tuple[list[str], float]  # the predicate's failures, and the score when there are none
Predicate = Callable[[TaskInfo, NodeInfo], list[str]]
Score = Callable[[TaskInfo, NodeInfo], float]


@dataclass
class Ranking:
    task: TaskInfo  # any task of the shape: they all get the same answers
    nodes: dict[str, NodeInfo]
    heap: list[Entry] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)  # why each infeasible node does not fit
    counts: Counter[str] = field(default_factory=Counter)  # those reasons counted, kept with them
    dirty: set[str] = field(default_factory=set)  # nodes changed since they were last evaluated here
    feasible: set[str] = field(default_factory=set)  # the nodes the task fits on, as last evaluated
    answers: dict[tuple[int, tuple[object, ...]], Answer] | None = None  # the shape's, shared (``Candidates._answer``)
    copies: dict[str, int] | None = None  # once asked (``standing``): each feasible node's copies of the request
    total: int = 0  # their sum


@dataclass(slots=True)
class Draft:
    """What a shape's first scan found on each node, at the candidates' ``tick``."""

    tick: int
    names: list[str]  # the nodes scanned, in order
    entries: list[Entry]  # the feasible ones
    reasons: dict[str, list[str]]  # why each other one does not fit


@dataclass
class Candidates:
    predicate: Predicate
    score: Score
    versions: dict[str, int] = field(default_factory=dict)
    tick: int = 0  # how many node changes it has seen: equal ticks, the same free room everywhere
    _log: list[str] = field(default_factory=list)  # the nodes of the latest changes, oldest first
    _logged_from: int = 0  # the tick of the first change in ``_log``
    _rankings: dict[tuple[object, ...], Ranking] = field(default_factory=dict)
    _holding: dict[str, list[Ranking]] = field(default_factory=dict)  # node -> the rankings that hold it
    holds: dict[str, NodeInfo] | None = None  # the snapshot nodes its rankings were made on
    _asked: dict[tuple[object, ...], int] = field(default_factory=dict)  # shapes asked without a ranking: how often
    _drafts: dict[tuple[object, ...], Draft] = field(default_factory=dict)  # the latest first scans
    columns: node_columns.Columns | None = None  # the predicate and score over node columns (``holds`` only)
    _columns: dict[str, node_columns.NodeColumns] = field(default_factory=dict)  # node set -> its columns
    _columns_of: dict[str, list[node_columns.NodeColumns]] = field(default_factory=dict)  # node -> those holding it
    _answers: dict[tuple[object, ...], dict[tuple[int, tuple[object, ...]], Answer]] = field(default_factory=dict)
    _alike: dict[str, tuple[Node, object, int]] = field(default_factory=dict)  # ``_alike_as``
    _kinds: dict[tuple[object, ...], int] = field(default_factory=dict)  # ``_alike_as``'s numbers

    def changed(self, node: NodeInfo) -> None:
        """A node's free resources changed: re-rank it wherever it is ranked, when next asked."""
        self.versions[node.name] = self.versions.get(node.name, 0) + 1
        self.tick += 1
        self._log.append(node.name)
        if len(self._log) > LOG_LIMIT:
            del self._log[: LOG_LIMIT // 2]
            self._logged_from += LOG_LIMIT // 2
        for ranking in self._holding.get(node.name, ()):
            ranking.dirty.add(node.name)
        for columns in self._columns_of.get(node.name, ()):
            columns.changed(node)

    def changed_since(self, tick: int) -> list[str] | None:
        """The nodes changed after ``tick`` (with repeats), or None when that is no longer known."""
        return None if tick < self._logged_from else self._log[tick - self._logged_from :]

    def _alike_as(self, node: NodeInfo) -> int:
        """What node-local predicates and scores read of ``node`` for a plain task, beside its
        free room: its kind (``node_columns.kind_of``) and its allocatable, numbered (a number
        hashes at once, where the tuple it stands for is hashed again at each look-up)."""
        kept = self._alike.get(node.name)
        if kept is None or kept[0] is not node.node or kept[1] is not node.allocatable:
            kind = (node_columns.kind_of(node), tuple(sorted(node.allocatable.items())))
            if kind not in self._kinds and len(self._kinds) >= 2 * len(self.holds or ()) + KINDS_KEPT:
                # Numbers are never given twice while answers keyed by them are kept.
                self._kinds.clear()
                self._alike.clear()
                for answers in self._answers.values():
                    answers.clear()
            number = self._kinds.setdefault(kind, len(self._kinds))
            kept = self._alike[node.name] = (node.node, node.allocatable, number)
        return kept[2]

    def _answer(self, ranking: Ranking, node: NodeInfo) -> Answer:
        """The predicate's failures for ``ranking``'s shape on ``node`` and the score when it fits.
        With node-local predicates and scores, two nodes alike (``_alike_as``) with the same free
        room give a plain task the same answers, so a plain shape keeps them by that (across its
        rankings: the whole cluster's and each network domain's), and a node in a state seen
        before is not evaluated again. A task with a node selector or affinity reads the node's
        labels: it is evaluated on each node."""
        answers = ranking.answers
        if answers is None:
            return self._evaluated(ranking.task, node)
        state = (self._alike_as(node), tuple(node.idle.items()))
        found = answers.get(state)
        if found is None:
            if len(answers) >= ANSWERS_PER_NODE * len(self.holds or ranking.nodes) + 1024:
                answers.clear()
            found = answers[state] = self._evaluated(ranking.task, node)
        return found

    def _evaluated(self, task: TaskInfo, node: NodeInfo) -> Answer:
        failures = self.predicate(task, node)
        return failures, 0.0 if failures else self.score(task, node)

    def _evaluate(self, ranking: Ranking, node: NodeInfo) -> None:
        failures, score = self._answer(ranking, node)
        before = ranking.reasons.get(node.name)
        if ranking.copies is not None:
            ranking.total -= ranking.copies.pop(node.name, 0)
            if not failures:
                ranking.total += ranking.copies.setdefault(node.name, copies_of(ranking.task, node))
        if failures:
            ranking.feasible.discard(node.name)
            if failures != before:  # most changes of room leave a node that did not fit as it was
                if before:
                    ranking.counts.subtract(before)
                ranking.reasons[node.name] = failures
                ranking.counts.update(failures)
            return
        ranking.feasible.add(node.name)
        if before:
            del ranking.reasons[node.name]
            ranking.counts.subtract(before)
        heapq.heappush(ranking.heap, (-score, node.name, self.versions.get(node.name, 0)))

    def _refresh(self, ranking: Ranking) -> None:
        for name in ranking.dirty:
            self._evaluate(ranking, ranking.nodes[name])
        ranking.dirty.clear()
        if len(ranking.heap) > 2 * len(ranking.nodes) + 64:
            # Stale entries pile up over many cycles: keep the current ones only.
            versions = self.versions
            ranking.heap = [e for e in ranking.heap if e[2] == versions.get(e[1], 0)]
            heapq.heapify(ranking.heap)

    def _ranking(self, key: tuple[object, ...], task: TaskInfo, nodes: Sequence[NodeInfo]) -> Ranking:
        """The ranking of ``key``, made now if there is none, its changed nodes evaluated again."""
        ranking = self._rankings.get(key)
        if ranking is None:
            ranking = self._rankings[key] = Ranking(task, {n.name: n for n in nodes})
            if self.holds is not None and node_columns.plain(task):  # node-local, and no node label read
                ranking.answers = self._answers.setdefault(task.shape(), {})
            for node in nodes:
                self._holding.setdefault(node.name, []).append(ranking)
            if not self._from_draft(ranking, self._drafts.pop(key, None), nodes):
                for node in nodes:
                    self._evaluate(ranking, node)
        if ranking.dirty:
            self._refresh(ranking)
        return ranking

    def _from_draft(self, ranking: Ranking, draft: Draft | None, nodes: Sequence[NodeInfo]) -> bool:
        """Start ``ranking`` from the first scan of its shape, its nodes changed since then marked
        to be evaluated again (as a kept ranking's are); False when that is not known."""
        changed = None if draft is None else self.changed_since(draft.tick)
        if draft is None or changed is None or draft.names != [node.name for node in nodes]:
            return False
        ranking.heap = draft.entries
        heapq.heapify(ranking.heap)
        ranking.feasible = {name for _, name, _ in draft.entries}
        ranking.reasons = draft.reasons
        ranking.counts = _counted(draft.reasons)
        ranking.dirty = {name for name in changed if name in ranking.nodes}  # the log has every node's
        return True

    def standing(
        self, key: tuple[object, ...], task: TaskInfo, nodes: Sequence[NodeInfo], *, make: bool = False
    ) -> Ranking | None:
        """The ranking of ``task`` among ``nodes`` (named by ``key``) as it stands now, with the
        copies of the task's request each node it fits on holds (counted once, then kept as
        nodes change) and the reasons of the others (never change them); None for a shape
        without a ranking yet (one asked once at most: no ranking is made for it), unless
        ``make`` asks for one."""
        if key not in self._rankings and not make:
            return None
        ranking = self._ranking(key, task, nodes)
        if ranking.copies is None:
            ranking.copies = {name: copies_of(task, ranking.nodes[name]) for name in ranking.feasible}
            ranking.total = sum(ranking.copies.values())
        return ranking

    def best(
        self, key: tuple[object, ...], task: TaskInfo, nodes: Sequence[NodeInfo], where: str = ""
    ) -> tuple[NodeInfo | None, FitSummary]:
        """The best feasible node for ``task`` among ``nodes`` (named by ``key``; ``where``
        names the node set alone), or why none fits."""
        if key not in self._rankings:
            # A shape's first question is answered by a plain scan: most shapes of a varied
            # workload are asked once, and a kept ranking would cost its upkeep for nothing.
            # With node-local predicates and scores, it is answered over node columns, and so
            # are its next few (a ranking made afresh evaluates every node);
            # the full scan is left for when no node fits (it counts the reasons).
            times = self._asked[key] = self._asked.get(key, 0) + 1
            if times <= ASKED_OVER_COLUMNS and self.holds is not None:
                found = self._best_over_columns(where, task, nodes)
                if found is not None:
                    return found, FitSummary(len(nodes))
            if times == 1:
                return self._scan(key, task, nodes)
        ranking = self._ranking(key, task, nodes)
        heap = ranking.heap
        while heap:
            _, name, version = heap[0]
            if version == self.versions.get(name, 0):
                return ranking.nodes[name], FitSummary(len(nodes))
            heapq.heappop(heap)  # stale: the node changed since this entry was scored
        return None, FitSummary(len(nodes), Counter({reason: n for reason, n in ranking.counts.items() if n > 0}))

    def _best_over_columns(self, where: str, task: TaskInfo, nodes: Sequence[NodeInfo]) -> NodeInfo | None:
        """What ``_scan`` would choose, over node columns; None when none fits or the columns
        cannot tell. A node set keeps its members while the candidates hold the same nodes."""
        if self.columns is None:
            return None
        columns = self._columns.get(where)
        if columns is None:
            columns = self._columns[where] = node_columns.NodeColumns.of_nodes(nodes)
            for name in columns.names:
                self._columns_of.setdefault(name, []).append(columns)
        return self.columns.best(task, columns)

    def _scan(
        self, key: tuple[object, ...], task: TaskInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[NodeInfo | None, FitSummary]:
        """What ``best`` would answer from a new ranking: the best score, ties to the name. What
        it found is kept as a draft of the shape's ranking (the latest ``DRAFTS`` of them)."""
        best: NodeInfo | None = None
        best_entry: Entry | None = None
        entries: list[Entry] = []
        reasons: dict[str, list[str]] = {}
        versions = self.versions
        for node in nodes:
            failures = self.predicate(task, node)
            if failures:
                reasons[node.name] = failures
                continue
            entry = (-self.score(task, node), node.name, versions.get(node.name, 0))
            entries.append(entry)
            if best_entry is None or entry < best_entry:
                best, best_entry = node, entry
        self._drafts[key] = Draft(self.tick, [node.name for node in nodes], entries, reasons)
        if len(self._drafts) > DRAFTS:
            del self._drafts[next(iter(self._drafts))]
        return best, FitSummary(len(nodes), _counted(reasons) if best is None else None)


def copies_of(task: TaskInfo, node: NodeInfo) -> int:
    """How many copies of ``task``'s request (what it asks of, at least one thing) ``node``'s free room holds."""
    idle = node.idle
    return min(idle.get(name, 0) // amount for name, amount in task.request.items() if amount > 0)


def _counted(reasons: dict[str, list[str]]) -> Counter[str]:
    """Each node's reasons, counted over the nodes (in node order)."""
    counts: Counter[str] = Counter()
    for failures in reasons.values():
        counts.update(failures)
    return counts


def carry(
    previous: Candidates | None,
    predicate: Predicate,
    score: Score,
    nodes: dict[str, NodeInfo],
    rebuilt: set[str] | None,
    *,
    columns: node_columns.Columns | None,
) -> Candidates:
    """The last cycle's candidates for a session over a snapshot's ``nodes``, those it built again
    (``rebuilt``) marked as changed; new ones for a new node set (or a first cycle). Only for
    node-local predicates and scores: the rankings keep the answers they gave the last session."""
    if previous is None or previous.holds is not nodes or rebuilt is None:
        return Candidates(predicate, score, columns=columns, holds=nodes)
    previous.predicate, previous.score, previous.columns = predicate, score, columns
    for name in sorted(rebuilt):
        node = nodes[name]
        for ranking in previous._holding.get(name, ()):
            ranking.nodes[name] = node
        previous.changed(node)
    return previous
