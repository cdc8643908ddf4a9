"""Held room: a gang that waits past its bound keeps, for the rest of the cycle, what its nodes
have free of what it needs, so later jobs (and backfill) cannot take the room it is waiting for.

Volcano's allocate leaves a pipelined job's statement neither committed nor discarded (JobPipelined,
used by the ``sla`` plugin); its old ``reserve`` action locked whole nodes for one elected job.
Here each task, in task order, goes to the node (of those it could run on once they are empty)
that frees up for it first, then whose free room covers most of its request, ties to node
order; a node takes as many tasks as its allocatable holds. When a node frees up is known only
from runtime estimates (``runtimes.ESTIMATE``, an annotation on the pod or its PodGroup; an estimate is
an input, never assumed) of the pods running there, with their ``status.startTime``, or, when
the config names a user label, from their users' last runtimes (``domain.runtime_history``):
a node that holds the task now frees up now, one that needs pods of unknown end never (so
without either the node chosen is the one closest to holding the task). On each node the task holds
what is free of its request, up to all of it; the gang stays pending and its queue is not
charged. Running pods on those nodes finish and no one else starts there, so the room the gang
needs only grows: the next cycle, it goes first again and either fits or holds again, on the
nodes then closest. Nothing is decided by a hold: the cycle's decisions are those of the
placements it leaves to the other jobs.

EASY's rules, when the estimates give the hold a *shadow time* (when its last node frees up for
it): the members are placed again on the nodes that free up *last* by then, so those that free
up sooner stay free for any job (EASY's extra nodes); and a later job whose own estimate ends
by the shadow time may use the held room (``lending``: lent, then held again): when the runtimes are
estimates that end a job (a batch system's requested time) it cannot delay the gang; when they
are predictions (``runtimes``) it may, if the prediction was short, as under EASY++.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import partial

from domain import quantity
from domain.quantity import ResourceList
from domain.recorded import HeldRoom
from domain.scheduler import held_plans, node_offers, runtimes, standstill
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.node_offers import Facts, Untouched
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.predicates import node_failures, room_fits
from domain.scheduler.runtimes import Ends
from domain.scheduler.session import Session
from domain.scheduler.statement import Statement


@dataclass(slots=True, eq=False)
class Held:
    """The room one gang holds this cycle: its statement, what it holds where, and until when
    (``shadow``: when its last node frees up for it; infinite without estimates)."""

    job: JobInfo
    statement: Statement
    places: list[tuple[TaskInfo, str]]
    shadow: float
    plan: held_plans.Plan  # what it holds by (``room_of`` keeps its answer there)
    taken: bool = False  # whether its members have taken their room yet (``take``)


def _free_at(now: float, room: ResourceList, need: ResourceList, ends: list[tuple[float, ResourceList]]) -> float:
    """When a node with ``room`` free now first has ``need`` free, as its pods of known end leave."""
    if node_offers.fits(room, need):
        return now
    free = dict(room)
    for end, freed in ends:
        quantity.add(free, freed)
        if node_offers.fits(free, need):
            return end
    return math.inf


def _covered(task: TaskInfo, idle: ResourceList, taken: ResourceList) -> float:
    """How much of the task's request a node's free room ``idle`` covers once ``taken`` is held
    there (what members planned before it hold: each holds what is free of its request, so the
    room left is ``idle`` less ``taken``, or none), summed over its resources (0 to one each)."""
    return sum(
        min(max(idle.get(name, 0) - taken.get(name, 0), 0), amount) / amount
        for name, amount in task.request.items()
        if amount > 0
    )


def hold(session: Session, job: JobInfo) -> Held | None:
    """Hold room for the members ``job`` still needs to reach its minimum (its pending tasks with
    requests, in task order); None when the empty cluster could not hold them. A gang whose
    plans would read what they read last time holds the same nodes unplanned (``held_plans``).
    The room is taken only when something after it reads the nodes' free room (``take``)."""
    snapshot = session.snapshot
    short = job.min_member - job.placed()
    tasks = job.asking_in_order(session.config, session.task_key)[: max(short, 0)]
    ends = runtimes.ends(snapshot, session.kept)
    standstill.until(session, runtimes.earliest(ends, session.kept))  # what the plans read of the instant
    known = held_plans.again(session, job, tasks, ends)
    if known is None:
        known = plans(session, tasks, ends)
        if known is None:
            return None
        held_plans.keep(session, job, tasks, ends, places=known[0], shadow=known[1])
    places = list(zip(tasks, known[0], strict=True))
    return Held(job, Statement(session), places, known[1], held_plans.current(session, job))


def plans(session: Session, tasks: list[TaskInfo], ends: Ends) -> tuple[list[str], float] | None:
    """Each of ``tasks``' node and the shadow time, planned: on the nodes that free up first for
    them, then, with a shadow time, on those that free up last by then; None when the empty
    cluster could not hold them."""
    untouched: dict[tuple[object, ...], Untouched] = {}  # each plan starts from the same room: shared
    likes = [_likeness(task) for task in tasks]
    known = _plan(session, tasks, likes, ends, None, untouched=untouched)
    if known is not None and known[1] < math.inf:
        known = _plan(session, tasks, likes, ends, known[1], untouched=untouched) or known
    return known


def take(holds: list[Held]) -> None:
    """The holds of ``holds`` not taken yet take their room, in order (each member, in turn,
    what its node has free of its request): before the next job is tried, or an action after
    allocate reads the nodes. A hold nothing reads after it takes nothing: its nodes are not
    changed, so the next cycle's snapshot and rankings need not take them in again (most holds
    on a deep backlog are the last attempt of their cycle)."""
    for held in holds:
        if not held.taken:
            held.taken = True
            for task, node in held.places:
                held.statement.hold(task, node)


def _likeness(task: TaskInfo) -> tuple[object, ...]:
    """What a node's facts for a member read of it: its shape (what predicates read) and its
    request's resources in order (``_covered`` sums them in that order)."""
    return (task.shape(), tuple(task.request))


def _facts(
    now: float, task: TaskInfo, node: NodeInfo, taken: ResourceList, budget: ResourceList, *, ends: Ends
) -> Facts:
    """What ``node`` offers ``task`` with ``taken`` planned there by the members before it, and
    ``budget`` left of its allocatable."""
    if node_failures(task.pod, node.node) or not room_fits(task.request, budget):
        return None  # it could not run there even with the node empty (``fit_failures``)
    free_at = _free_at(now, node.idle, quantity.sum_lists((taken, task.request)), ends.get(node.name, []))
    return free_at, _covered(task, node.idle, taken)


def _alone(now: float, task: TaskInfo, ends: Ends, node: NodeInfo) -> Facts:
    """``_facts`` with no member planned on ``node``."""
    return _facts(now, task, node, {}, node.allocatable, ends=ends)


def _after(now: float, node: NodeInfo, members: int, task: TaskInfo, ends: Ends) -> tuple[Facts, bool]:
    """``_facts`` once ``members`` members alike ``task`` are planned on ``node``, and whether
    its free room holds them and ``task`` now (``node_offers.after``)."""
    taken = {name: amount * members for name, amount in task.request.items()}
    budget = {**node.allocatable, **{name: node.allocatable.get(name, 0) - amount for name, amount in taken.items()}}
    offer = _facts(now, task, node, taken, budget, ends=ends)
    return offer, offer is not None and node_offers.fits(node.idle, quantity.sum_lists((taken, task.request)))


def _plan(
    session: Session,
    tasks: list[TaskInfo],
    likes: list[tuple[object, ...]],
    ends: Ends,
    latest_by: float | None,
    *,
    untouched: dict[tuple[object, ...], Untouched],
) -> tuple[list[str], float] | None:
    """Choose a node for each of ``tasks`` in turn: their nodes and the shadow time (a plan
    takes no room: ``hold`` has the chosen ones take it). Without ``latest_by``, the node that
    frees up first for the member, then whose free room covers most of it, then the first; with
    it, of the nodes that free up by then, the one that frees up last, then covers most, then
    the first: the ones free sooner stay with the other jobs (EASY's extra nodes), and the gang
    still starts at ``latest_by``. A node's rank is (when it frees up, negated for the latter,
    how much it does not cover, its index), the least first. For a member alike the one before
    it, every node ranks as it did for that one but the node that one took, so only that node
    is ranked again, into a heap of the others (a gang's members are mostly alike); and what a
    node no member has taken yet offers a member is kept in ``untouched`` (per likeness, by node
    index), for the plans after, and for the holds of later sessions while the node is as it
    was (``node_offers``), with, for a gang of one likeness, what it offers once members are
    planned there (``node_offers.after``)."""
    snapshot = session.snapshot
    nodes = snapshot.node_list()
    budget: dict[str, ResourceList] = {}  # node -> allocatable less the tasks of this job planned there
    planned: dict[str, ResourceList] = {}  # node -> requests of this job's tasks planned there
    places: list[str] = []
    shadow = snapshot.now
    ranks: list[tuple[float, float, int]] = []  # a heap of the candidates' ranks
    sign, limit = (1.0, math.inf) if latest_by is None else (-1.0, latest_by)  # when it frees up: rank's sign, bound
    chosen_index = -1
    alike = likes.count(likes[0]) == len(likes) if likes else True
    members: dict[int, int] = {}  # for a gang of one likeness: node index -> members planned there
    offers: dict[int, node_offers.Offer] = {}  # the kept offers of the members' likeness (``node_offers``)

    def facts(task: TaskInfo, node: NodeInfo) -> Facts:
        taken = planned.get(node.name, {})
        return _facts(snapshot.now, task, node, taken, budget.get(node.name, node.allocatable), ends=ends)

    for at, task in enumerate(tasks):
        if at and (alike or likes[at] == likes[at - 1]):  # the node the one before took is planned: its facts change
            if alike:  # kept with its offer, as what it offers the first member is
                chosen, count = nodes[chosen_index], members[chosen_index]
                offer = node_offers.after(
                    snapshot.now, offers[chosen_index], count, _after, node=chosen, task=task, ends=ends
                )
            else:
                offer = facts(task, nodes[chosen_index])
            if offer is not None and offer[0] <= limit:
                heapq.heappush(ranks, (sign * offer[0], -offer[1], chosen_index))
        else:
            seen = untouched.get(likes[at])
            if seen is None:
                kept = node_offers.kept(session, likes[at])
                alone = partial(_alone, snapshot.now, task, ends)  # what no member planned there changes
                found = node_offers.untouched(
                    snapshot.now, kept, nodes, snapshot.touched, task=task, ends=ends, facts=alone
                )
                seen = untouched[likes[at]] = (found, kept)
            known, offers = seen
            if planned:  # members of another likeness are planned there
                known = [
                    facts(task, node) if node.name in planned else offer
                    for node, offer in zip(nodes, known, strict=True)
                ]
            ranks = [
                (sign * offer[0], -offer[1], index)
                for index, offer in enumerate(known)
                if offer is not None and offer[0] <= limit
            ]
            heapq.heapify(ranks)
        if not ranks:
            return None  # the cluster could never hold the gang: nothing to wait for
        # Each rank ends in its node's index: no two tie.
        first, _, chosen_index = heapq.heappop(ranks)
        chosen_at = sign * first
        chosen = nodes[chosen_index]
        if alike:
            members[chosen_index] = members.get(chosen_index, 0) + 1
        else:
            quantity.add(planned.setdefault(chosen.name, {}), task.request)
            room = budget[chosen.name] = dict(budget.get(chosen.name, chosen.allocatable))
            quantity.add(room, {name: -amount for name, amount in task.request.items()})
        places.append(chosen.name)
        shadow = max(shadow, chosen_at)
    return places, shadow


def room_of(held: Held) -> HeldRoom:
    """What ``held`` holds now, per node, and its shadow time (what it would take, when not
    taken yet: the nodes are as it found them, which are as its plan read them, so the answer
    is kept with the plan for the holds it makes again)."""
    if held.taken:
        return HeldRoom(held.job.key, tuple(held.statement.holding()), held.shadow)
    plan = held.plan
    if plan.would_hold is None:
        plan.would_hold = tuple(held.statement.would_hold(held.places))
    return HeldRoom(held.job.key, plan.would_hold, held.shadow)
