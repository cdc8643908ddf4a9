"""Candidates: per task shape, the feasible nodes of a node set ranked by score, kept current as
placements change nodes, so that a cycle does not re-run every predicate on every node for every
task (the all-pairs cost that makes naive gang schedulers slow).

A shape is what predicates and scores look at (requests, selector, affinity, tolerations, and
the job when its placed members sway the score). When a node's free resources change, every
ranking that holds the node re-evaluates it at once and older entries of it go stale, so the
top valid entry is exactly what a full scan would choose: the best score, ties to the name.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from domain.reasons import FitSummary
from domain.scheduler.snapshot import NodeInfo, TaskInfo

Entry = tuple[float, str, int]  # (-score, node name, node version when scored)


@dataclass
class Ranking:
    task: TaskInfo  # any task of the shape: they all get the same answers
    nodes: dict[str, NodeInfo]
    heap: list[Entry] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)  # why each infeasible node does not fit


@dataclass
class Candidates:
    predicate: Callable[[TaskInfo, NodeInfo], list[str]]
    score: Callable[[TaskInfo, NodeInfo], float]
    versions: dict[str, int] = field(default_factory=dict)
    _rankings: dict[tuple[object, ...], Ranking] = field(default_factory=dict)

    def changed(self, node: NodeInfo) -> None:
        """A node's free resources changed: re-rank it wherever it is ranked."""
        self.versions[node.name] = self.versions.get(node.name, 0) + 1
        for ranking in self._rankings.values():
            if node.name in ranking.nodes:
                self._evaluate(ranking, node)

    def _evaluate(self, ranking: Ranking, node: NodeInfo) -> None:
        failures = self.predicate(ranking.task, node)
        if failures:
            ranking.reasons[node.name] = failures
            return
        ranking.reasons.pop(node.name, None)
        entry = (-self.score(ranking.task, node), node.name, self.versions.get(node.name, 0))
        heapq.heappush(ranking.heap, entry)

    def best(
        self, key: tuple[object, ...], task: TaskInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[NodeInfo | None, FitSummary]:
        """The best feasible node for ``task`` among ``nodes`` (named by ``key``), or why none fits."""
        ranking = self._rankings.get(key)
        if ranking is None:
            ranking = self._rankings[key] = Ranking(task, {n.name: n for n in nodes})
            for node in nodes:
                self._evaluate(ranking, node)
        heap = ranking.heap
        while heap:
            _, name, version = heap[0]
            if version == self.versions.get(name, 0):
                return ranking.nodes[name], FitSummary(len(nodes))
            heapq.heappop(heap)  # stale: the node was re-ranked when it changed
        summary = FitSummary(len(nodes))
        summary.reasons = Counter(r for failures in ranking.reasons.values() for r in failures)
        return None, summary
