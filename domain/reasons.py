"""Reasons: why the scheduler did not place something, as codes ordered by severity, the
verdict a plugin returns when it says no, and the per-task summary of node-level failures.

Messages are built from codes and counts and never parsed back; a PodGroup that waits keeps
the most severe reason of everything that held it back in this cycle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum


class Reason(StrEnum):
    """Least to most severe; a waiting object reports the most severe one it met."""

    WAITING_FOR_PREEMPTION = "WaitingForPreemption"  # pipelined: victims chosen, their pods not yet gone
    NOT_ENOUGH_RESOURCES = "NotEnoughResources"  # predicates or free resources left a task without a node
    NO_TOPOLOGY_DOMAIN = "NoFittingTopologyDomain"  # no single network domain holds the whole gang (S4)
    QUEUE_OVER_QUOTA = "QueueQuotaExceeded"  # the queue (or an ancestor) cannot hold the gang now
    QUEUE_NOT_OPEN = "QueueNotOpen"  # the queue is Closing or Closed: nothing new is admitted
    QUEUE_NOT_FOUND = "QueueNotFound"  # the queue does not exist (yet): waits for it
    NOT_ENOUGH_TASKS = "NotEnoughTasks"  # fewer tasks than minMember: nothing to place as a gang
    QUEUE_NOT_LEAF = "QueueNotLeaf"  # submitted to a queue with children: refused (S2)
    QUEUE_REFUSED = "QueueRefused"  # the queue itself was refused (S2): it never receives work

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {reason: rank for rank, reason in enumerate(Reason)}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A plugin's "no": the reason code, a human-readable message, and who said it."""

    reason: Reason
    message: str
    plugin: str


def most_severe(verdicts: list[Verdict]) -> Verdict | None:
    """The verdict to report; ties keep the first one met."""
    best: Verdict | None = None
    for verdict in verdicts:
        if best is None or verdict.reason.severity > best.reason.severity:
            best = verdict
    return best


class FitSummary:
    """Counts node-level failure reasons: "0/3 nodes are unavailable: 2 Insufficient cpu, 1 ...".
    What it says is worked out once until ``add`` counts more (a summary shared by the twins of
    a shape is read by every gang of that shape)."""

    __slots__ = ("_message", "_reasons", "_top", "nodes")

    def __init__(self, nodes: int, reasons: Counter[str] | None = None) -> None:
        self.nodes = nodes
        self._reasons: Counter[str] = Counter() if reasons is None else reasons
        self._top: str | None = None
        self._message: str | None = None

    @property
    def reasons(self) -> Counter[str]:
        """The reasons counted (change them only through ``add``)."""
        return self._reasons

    def add(self, reasons: list[str]) -> None:
        self._reasons.update(reasons)
        self._top = self._message = None

    def top(self) -> str:
        """The most frequent reason (ties by name): what one word about this task would say."""
        if self._top is None:
            reasons = self._reasons
            self._top = min(reasons.items(), key=lambda item: (-item[1], item[0]))[0] if reasons else "no nodes"
        return self._top

    def message(self) -> str:
        if self._message is None:
            if self.nodes == 0:
                self._message = "0/0 nodes are unavailable: no nodes in the cluster."
            else:
                parts = ", ".join(f"{count} {reason}" for reason, count in sorted(self._reasons.items()))
                self._message = f"0/{self.nodes} nodes are unavailable: {parts}."
        return self._message


def gang_pipelined(pipelined: int, tasks: int, nodes: list[str]) -> str:
    """A gang whose members wait on nodes that preemption is releasing (Volcano's Pipelined)."""
    where = ", ".join(nodes)
    return (
        f"{pipelined}/{tasks} tasks in gang pipelined, waiting for preemption: "
        f"they can be assigned to {where} once resource is released"
    )


def gang_unschedulable(unready: int, tasks: int, words: str) -> str:
    """Volcano's gang condition message: how many members cannot be placed, then ``words``
    (``failed_words``) ("3/4 tasks in gang unschedulable: 3 Insufficient nvidia.com/gpu. Origin
    reason is w-1: 0/4 nodes are ...")."""
    return f"{unready}/{tasks} tasks in gang unschedulable: {words}"


def failed_words(first: tuple[str, FitSummary] | None, summaries: Collection[FitSummary]) -> str:
    """One word per task that found no node (its most frequent node-level reason, most common
    first; ``summaries`` has one per task, in any order), then the node summary of the ``first``
    of them (its name and summary), as upstream's "Origin reason"."""
    each = dict(zip(map(id, summaries), summaries, strict=True))
    counts: Counter[str] = Counter()
    if len(each) == 1:  # all twins of one shape share one summary (a shortfall's)
        counts[next(iter(each.values())).top()] = len(summaries)
    else:
        for key, n in Counter(map(id, summaries)).items():  # twins share one summary: its top is found once
            counts[each[key].top()] += n
    words = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda i: (-i[1], i[0])))
    if first is not None:
        name, summary = first
        words += f". Origin reason is {name}: {summary.message()}"
    return words
