"""Lending held room: a job that cannot delay a gang's hold may use its room for one attempt
(EASY's rule: its own runtime ends by the hold's shadow time); the room is given back before the
attempt and held again after it (``Statement.give_back``, ``Statement.hold_again``)."""

from __future__ import annotations

import math

from domain import quantity
from domain.quantity import ResourceList
from domain.scheduler import runtimes, standstill
from domain.scheduler.held_room import Held
from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Session


def lendable(session: Session, job: JobInfo, holds: list[Held]) -> list[Held]:
    """The holds ``job`` cannot delay, whose room it may use: its own estimate ends by the
    hold's shadow time."""
    lent: list[Held] = []
    runs = None  # the job's runtime, asked only when a hold of another job has a shadow time
    for held in holds:  # most cycles hold nothing, most others one gang
        if held.job is job or held.shadow == math.inf:
            continue
        if runs is None:
            runs = runtimes.runtime(session.snapshot, job)
            if runs is None:
                return []
        if session.snapshot.now + runs <= held.shadow:
            lent.append(held)
            standstill.until(session, held.shadow - runs)  # lent while its runtime ends by the shadow time
    return lent


def lent_room(lent: list[Held]) -> dict[str, ResourceList]:
    """Per node, what the holds of ``lent`` keep there: the room lending them gives back. For
    one hold (most often), the same dict for every job lent it while its room is the same
    (never change it)."""
    if len(lent) == 1:
        return lent[0].statement.held_totals()
    room: dict[str, ResourceList] = {}
    for held in lent:
        for node, taken in held.statement.held_totals().items():
            quantity.add(room.setdefault(node, {}), taken)
    return room


def lend(lent: list[Held]) -> None:
    """Give back the room of the holds of ``lent`` (from ``lendable``) for one job's attempt,
    to be held again after it (``hold_again``)."""
    for held in reversed(lent):
        held.statement.give_back()


def hold_again(lent: list[Held]) -> None:
    """Each lent hold takes again what its nodes have free of its tasks' requests (on the nodes
    the attempt left as they were, what it held before: ``Statement.hold_again``)."""
    for held in lent:
        held.statement.hold_again()
