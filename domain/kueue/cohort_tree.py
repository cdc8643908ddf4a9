"""Quota tree: ClusterQueues and Cohorts as nodes of Kueue's cohort tree, with nominal quota,
borrowing and lending limits per (flavor, resource), and the usage of the workloads holding
quota.

The arithmetic is Kueue's ``resource_node``: a node lends its parent everything above what
its lending limit makes it keep (``guaranteed``); a cohort's subtree quota is its own quota
plus what its children lend; a node's usage above its guaranteed part counts in its parent.
What a ClusterQueue can still take is its free guaranteed part plus what its parent can give,
capped on every edge by the borrowing limit. A root's quota is hard: no node's usage can push
its root above the root's subtree quota, which is the "no over-admission" property.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from domain.objects.kueue import ClusterQueue, Cohort, ResourceGroup

FlavorResource = tuple[str, str]
"""(flavor name, resource name)."""


@dataclass(eq=False)
class QuotaNode:
    """A ClusterQueue (``is_queue``) or a Cohort in the tree."""

    name: str
    is_queue: bool
    nominal: dict[FlavorResource, int] = field(default_factory=dict)
    borrowing_limit: dict[FlavorResource, int] = field(default_factory=dict)
    lending_limit: dict[FlavorResource, int] = field(default_factory=dict)
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)

    def guaranteed(self, fr: FlavorResource) -> int:
        """The part of the subtree quota this node keeps from its parent (0 without a lending limit)."""
        if fr not in self.lending_limit:
            return 0
        return max(0, self.subtree.get(fr, 0) - self.lending_limit[fr])

    def available(self, fr: FlavorResource) -> int:
        """How much more of ``fr`` this node may use now, through the whole tree."""
        if self.parent is None:
            return self.subtree.get(fr, 0) - self.usage.get(fr, 0)
        guaranteed = self.guaranteed(fr)
        local = max(0, guaranteed - self.usage.get(fr, 0))
        from_parent = self.parent.available(fr)
        if fr in self.borrowing_limit:
            lent = self.subtree.get(fr, 0) - guaranteed
            used_in_parent = max(0, self.usage.get(fr, 0) - guaranteed)
            from_parent = min(from_parent, lent - used_in_parent + self.borrowing_limit[fr])
        return local + max(0, from_parent)

    def potential(self, fr: FlavorResource) -> int:
        """How much of ``fr`` this node could use if nobody used anything."""
        if self.parent is None:
            return self.subtree.get(fr, 0)
        guaranteed = self.guaranteed(fr)
        from_parent = self.parent.potential(fr)
        if fr in self.borrowing_limit:
            from_parent = min(from_parent, self.subtree.get(fr, 0) - guaranteed + self.borrowing_limit[fr])
        return guaranteed + from_parent

    def add_usage(self, fr: FlavorResource, amount: int) -> None:
        """Add (or, negative, remove) usage here and carry the part above guaranteed upwards."""
        guaranteed = self.guaranteed(fr)
        before = max(0, self.usage.get(fr, 0) - guaranteed)
        self.usage[fr] = self.usage.get(fr, 0) + amount
        after = max(0, self.usage[fr] - guaranteed)
        if self.parent is not None and after != before:
            self.parent.add_usage(fr, after - before)

    def is_borrowing(self, fr: FlavorResource, extra: int = 0) -> bool:
        return self.usage.get(fr, 0) + extra > self.nominal.get(fr, 0)

    def height(self) -> int:
        """A cohort's distance to its furthest leaf: 1 with only ClusterQueues below, 0 when empty."""
        return max([min(len(self.children), 1), *(c.height() + 1 for c in self.children if not c.is_queue)])

    def borrowing_level(self, fr: FlavorResource, amount: int) -> tuple[int, bool]:
        """Kueue's borrowing level of taking ``amount`` more of ``fr`` here: 0 without borrowing,
        else the height of the lowest cohort whose subtree holds it (the root's when none does);
        and whether that cohort is below the root (a reclaim inside the hierarchy is possible)."""
        if self.parent is None or not self.is_borrowing(fr, amount):
            return 0, self.parent is not None
        remaining = amount - max(0, self.guaranteed(fr) - self.usage.get(fr, 0))
        for node in self.ancestors():
            if node.usage.get(fr, 0) + remaining <= node.subtree.get(fr, 0):
                return node.height(), node.parent is not None
            remaining -= max(0, node.guaranteed(fr) - node.usage.get(fr, 0))
        return self.ancestors()[-1].height(), False

    def ancestors(self) -> list[QuotaNode]:
        out, node = [], self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out


def _quotas(node: QuotaNode, groups: Iterable[ResourceGroup]) -> None:
    for group in groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                fr = (flavor.name, quota.name)
                node.nominal[fr] = int(quota.nominal_quota)
                if quota.borrowing_limit is not None:
                    node.borrowing_limit[fr] = int(quota.borrowing_limit)
                if quota.lending_limit is not None:
                    node.lending_limit[fr] = int(quota.lending_limit)


def _fill_subtree(node: QuotaNode) -> None:
    node.subtree = dict(node.nominal)
    for child in node.children:
        _fill_subtree(child)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + quota - child.guaranteed(fr)


@dataclass
class QuotaTree:
    queues: dict[str, QuotaNode]
    cohorts: dict[str, QuotaNode]

    def roots(self) -> list[QuotaNode]:
        return [n for n in (*self.cohorts.values(), *self.queues.values()) if n.parent is None]


def build(queues: Mapping[str, ClusterQueue], cohorts: Mapping[str, Cohort]) -> QuotaTree:
    """The tree of the given ClusterQueues and Cohorts, without usage. A cohort named by a
    queue but not defined is an empty cohort; a parent link that would close a cycle is dropped."""
    tree = QuotaTree({}, {})
    for name in sorted(cohorts):
        tree.cohorts[name] = QuotaNode(name, is_queue=False)
        _quotas(tree.cohorts[name], cohorts[name].spec.resource_groups)
    for name in sorted(queues):
        tree.queues[name] = QuotaNode(name, is_queue=True)
        _quotas(tree.queues[name], queues[name].spec.resource_groups)
    for name in sorted(cohorts):
        parent_name = cohorts[name].spec.parent_cohort()
        if parent_name:
            _link(tree, tree.cohorts[name], parent_name)
    for name in sorted(queues):
        cohort_name = queues[name].spec.cohort_of()
        if cohort_name:
            _link(tree, tree.queues[name], cohort_name)
    for root in tree.roots():
        _fill_subtree(root)
    return tree


def _link(tree: QuotaTree, child: QuotaNode, parent_name: str) -> None:
    parent = tree.cohorts.get(parent_name)
    if parent is None:
        parent = tree.cohorts[parent_name] = QuotaNode(parent_name, is_queue=False)
    if parent is child or child in parent.ancestors():
        return
    child.parent = parent
    parent.children.append(child)
