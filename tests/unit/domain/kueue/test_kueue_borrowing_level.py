"""Kueue's borrowing level (``QuotaNode.borrowing_level``): the height of the lowest cohort whose
subtree holds a request, as ``FindHeightOfLowestSubtreeThatFits`` (issue 12 item 8)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from domain.kueue.cohort_tree import QuotaNode

FR = ("f", "cpu")


def _tree() -> dict[str, QuotaNode]:
    """root { left { lender (4 cpu), near (0) }, right { far (0) } }, and a lone queue (2 cpu)."""
    root, left, right = QuotaNode("root", False), QuotaNode("left", False), QuotaNode("right", False)
    nodes = {
        "root": root,
        "left": left,
        "right": right,
        "lender": QuotaNode("lender", True, nominal={FR: 4000}),
        "near": QuotaNode("near", True, nominal={FR: 0}),
        "far": QuotaNode("far", True, nominal={FR: 0}),
        "lone": QuotaNode("lone", True, nominal={FR: 2000}),
    }
    for parent, children in ((root, [left, right]), (left, [nodes["lender"], nodes["near"]]), (right, [nodes["far"]])):
        for child in children:
            child.parent = parent
            parent.children.append(child)
    for name, subtree in (("lender", 4000), ("near", 0), ("far", 0), ("lone", 2000), ("left", 4000), ("right", 0)):
        nodes[name].subtree = {FR: subtree}
    root.subtree = {FR: 4000}
    return nodes


@dataclass(frozen=True)
class Case:
    name: str
    queue: str
    amount: int
    want_level: int
    want_below_root: bool
    used_in_left: int = 0


CASES = [
    Case("a queue without a cohort never borrows", "lone", 2000, 0, False),
    Case("within nominal quota is level 0", "lender", 3000, 0, True),
    Case("borrowing from a sibling is the height of their cohort", "near", 4000, 1, True),
    Case("borrowing only through the root is the root's height", "far", 4000, 2, False),
    Case("a cohort whose subtree is used up does not hold it", "near", 2000, 2, False, used_in_left=3000),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_borrowing_level(case: Case) -> None:
    nodes = _tree()
    if case.used_in_left:
        nodes["lender"].add_usage(FR, case.used_in_left)
    assert nodes[case.queue].borrowing_level(FR, case.amount) == (case.want_level, case.want_below_root)


def test_height_counts_cohort_levels_down_to_the_queues() -> None:
    nodes = _tree()
    assert (nodes["root"].height(), nodes["left"].height(), QuotaNode("empty", False).height()) == (2, 1, 0)
