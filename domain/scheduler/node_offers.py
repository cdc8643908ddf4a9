"""Node offers: what a node that no member of a held gang has taken yet offers a member (when
it frees up for the member and how much of the member its free room covers, or that the member
cannot run there), kept between cycles for ``held_room``'s plans.

An offer reads the node object and its allocatable (the predicates, with the allocatable as the
room: could the member run there once the node is empty), the node's free room and the known
ends of its pods (when it frees up, how much it covers), and the cycle's instant in two ways
only: a node whose free room holds the member now frees up now, and predicted ends are raised
past the instant (so the ends list changes with it when it matters). So an offer is used again,
for the later members and gangs of its likeness (shape and request) in the session and in the
sessions after, while the node object, the allocatable, the free room and the ends list are the
same; one that frees up now is given the new instant. So is what it offers once one, two, ...
members of that likeness are planned there (``after``: their sum taken from its free room and
its allocatable), for gangs of one likeness. Only the likenesses planned in the last
session that planned a hold are kept (a gang held as last time is not planned:
``held_plans``), at most one offer per node each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from domain.objects.core import Node
from domain.quantity import ResourceList
from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.runtimes import Ends
from domain.scheduler.session import Session

KEPT = "held-room-offers"
NO_ENDS: list[tuple[float, ResourceList]] = []  # the ends of a node without pods of known end (never change it)

Facts = tuple[float, float] | None
"""What a node offers a member: when it frees up for it and how much of it it covers now; None
when the member cannot run there."""


def fits(room: ResourceList, need: ResourceList) -> bool:
    """Whether ``room`` holds ``need``."""
    return all(room.get(name, 0) >= amount for name, amount in need.items())


@dataclass(slots=True, eq=False)
class Offer:
    """What a node offered members of one likeness when no member had taken it yet, and what that
    was read from: the node object, its allocatable, its free room and the known ends of its pods.
    While all four are the same, so is the offer (the predicates read the node object and its
    allocatable; when it frees up and how much it covers read its free room and ends), but for
    a node that holds the member now, which frees up at the cycle's instant (``ready``)."""

    info: NodeInfo  # the snapshot's node it was last found to be of (read from, or the same as)
    node: Node
    allocatable: ResourceList
    idle: ResourceList | None  # None: the member cannot run there (the free room is not read)
    ends: list[tuple[float, ResourceList]]
    facts: Facts
    ready: bool  # its free room holds the member now: ``facts``' time is the instant it was read at
    # what it offers the next member once 1, 2, ... members are planned there, and whether ready
    later: list[tuple[Facts, bool]] = field(default_factory=list)

    def at(self, now: float) -> Facts:
        """What it offers at ``now``: a node that holds the member frees up at the instant."""
        facts = self.facts
        return (now, facts[1]) if self.ready and facts is not None else facts


@dataclass(slots=True, eq=False)
class _Kept:
    """The offers of the last session's holds and of this one's, per likeness, by node index."""

    session: Session
    before: dict[tuple[object, ...], dict[int, Offer]]
    now: dict[tuple[object, ...], dict[int, Offer]]


Untouched = tuple[list[Facts], dict[int, Offer]]
"""What the nodes no member has taken offer members of one likeness, by node index: in this
hold (``untouched``), and as kept."""


def kept(session: Session, like: tuple[object, ...]) -> dict[int, Offer]:
    """The kept offers of ``like``, shared by the gangs of this session that hold members of it:
    those of the last session that planned a hold, if it planned members of ``like`` (at most
    one per node for each likeness that session planned)."""
    memo = session.kept.get(KEPT)
    if not isinstance(memo, _Kept) or memo.session is not session:
        before = memo.now if isinstance(memo, _Kept) else {}
        memo = session.kept[KEPT] = _Kept(session, before, {})  # only the likenesses held last time stay
    offers = memo.now.get(like)
    if offers is None:
        offers = memo.now[like] = memo.before.pop(like, {})
    return offers


def first(
    now: float,
    offers: dict[int, Offer],
    index: int,
    node: NodeInfo,
    *,
    task: TaskInfo,
    ends: Ends,
    facts: Callable[[NodeInfo], Facts],
) -> Facts:
    """What ``node``, which no member has taken yet, offers ``task`` (``facts``): kept while what
    it is read from is the same (``Offer``), for the later members and gangs of its likeness."""
    known = offers.get(index)
    own = ends.get(node.name, NO_ENDS)
    # The allocatable and the ends lists are mostly the very ones read before (shared, never changed).
    allocatable = node.allocatable
    if (
        known is not None
        and known.node is node.node
        and (known.allocatable is allocatable or known.allocatable == allocatable)
    ):
        if known.idle is None:
            known.info, known.ends = node, own  # what it read is this node's: ``untouched`` may say so at once
            return None
        if known.idle == node.idle and (known.ends is own or known.ends == own):
            known.info, known.ends = node, own
            return known.at(now)
    offer = facts(node)
    idle = None if offer is None else dict(node.idle)
    ready = offer is not None and fits(node.idle, task.request)  # ``held_room._free_at`` says now
    offers[index] = Offer(node, node.node, node.allocatable, idle, own, offer, ready)
    return offer


def untouched(
    now: float,
    offers: dict[int, Offer],
    nodes: list[NodeInfo],
    touched: set[str],
    *,
    task: TaskInfo,
    ends: Ends,
    facts: Callable[[NodeInfo], Facts],
) -> list[Facts]:
    """What each of ``nodes`` (the snapshot's, in order) offers ``task`` with no member on it
    (``first``). An offer read from the very same snapshot node, with the very same list of
    ends, is given again without comparing what it read, unless a statement changed the node
    in this session (``touched``): a snapshot's node changes only by statements, and one they
    changed is built anew by the next cycle's snapshot, so the same node untouched has the free
    room it had."""
    found: list[Facts] = []
    for index, node in enumerate(nodes):
        known = offers.get(index)
        if (
            known is not None
            and known.info is node
            and known.ends is ends.get(node.name, NO_ENDS)
            and node.name not in touched
        ):
            found.append(known.at(now))
            continue
        found.append(first(now, offers, index, node, task=task, ends=ends, facts=facts))
    return found


After = Callable[[float, NodeInfo, int, TaskInfo, Ends], tuple[Facts, bool]]
"""What a node offers a member at an instant once members alike it are planned there, and whether
its free room holds them and the member now (``held_room``'s)."""


def after(now: float, offer: Offer, members: int, facts: After, *, node: NodeInfo, task: TaskInfo, ends: Ends) -> Facts:
    """What ``node``, whose offer is ``offer`` (kept and checked this session: ``first``), offers
    ``task``, a member of its likeness, once ``members`` of them (one or more) are planned there
    (``facts``, asked only when not kept), kept with the offer: the same node state, the same
    answer, as ``first``'s."""
    later = offer.later
    if len(later) < members:  # a node is planned on one member after another
        later.append(facts(now, node, members, task, ends))
    found, ready = later[members - 1]
    return (now, found[1]) if ready and found is not None else found
