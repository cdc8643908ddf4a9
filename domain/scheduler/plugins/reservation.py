"""reservation: the one gang that has waited longest past ``reservation-waiting-time`` goes
first and holds its room, so large gangs never starve, without runtime estimates (and with
EASY's backfill rule when pods carry them: ``held_room``).

Volcano's old ``elect`` plugin and ``reserve`` action chose one target job and locked nodes for
it; EASY backfill reserves for the queue's head, but needs runtime estimates, which a
Kubernetes cluster does not have. Here: among the jobs still short of their minimum, those
created at least the waiting time (default ``DEFAULT_WAITING``, argument
``reservation-waiting-time``, a Go duration) before the cycle, the one created first (then by
key) is the target. It goes before every other job of its queue, may be enqueued at once, and
may pipeline (JobPipelined): allocate then holds, for the rest of the cycle, the room it waits
for (``held_room``), and the other jobs fill what is left. One target at a time keeps the
cluster busy: only the nodes it needs are held. Once it runs, the next one in line becomes the
target.

With ``reservation-shortest-first: true`` the other jobs go shortest first, by the runtime held
room reads (an estimate given or the user's prediction, the shorter with both:
``runtimes.runtime``), as EASY++ backfills (Tsafrir, Etsion and Feitelson 2007); a job of
unknown runtime goes as one of none, so that its user's history learns. Without estimates or a
history every job ties, and the order is the one without the argument. Starvation stays
bounded: every job in turn becomes the target.

With ``reservation-slowdown-first: true`` the target is, among the jobs past the bound, the one
whose bounded slowdown would be the highest if it started now (waited plus runtime, over the
runtime, 10 s at least; a job of unknown runtime counts as one of 10 s), instead of the oldest:
a short gang past the bound is held room before a long one that waited a little longer, as
EASY, told runtimes, lets it start in a hole the long one cannot use. Every job's slowdown grows
as it waits, so every job still becomes the target in turn; without runtimes every job counts
as 10 s long and the oldest is the target, as without the argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from domain.durations import positive_seconds
from domain.objects.meta import ObjectKey
from domain.scheduler import pipelining, runtimes, standstill
from domain.scheduler.extension_points import Vote
from domain.scheduler.infos import JobInfo
from domain.scheduler.plugin_args import arguments_of, switch
from domain.scheduler.session import Key, Plugin, Session
from domain.scheduler.snapshot import Snapshot

NAME = "reservation"
WAITING_TIME = "reservation-waiting-time"
SHORTEST_FIRST = "reservation-shortest-first"
SLOWDOWN_FIRST = "reservation-slowdown-first"
DEFAULT_WAITING = 3600.0  # seconds
KEPT = "reservation-target"
FLOOR = 10.0  # seconds: the runtime below which bounded slowdown counts no shorter (Feitelson's bound)


def target(snapshot: Snapshot, bound: float, *, by_slowdown: bool = False) -> ObjectKey | None:
    """Among the jobs short of their minimum created at least ``bound`` before the cycle, the one
    created first (then by key); with ``by_slowdown``, the one whose bounded slowdown would be the
    highest if it started now (``slowdown``; ties as without)."""
    candidates = [(job.created, job.key, job) for job in snapshot.waiting_jobs() if _eligible(snapshot, job, bound)]
    if not candidates:
        return None
    if not by_slowdown:
        return min(candidates)[1]
    return min(candidates, key=lambda c: (-slowdown(snapshot, c[2]), c[0], c[1]))[1]


def _eligible(snapshot: Snapshot, job: JobInfo, bound: float) -> bool:
    return snapshot.now - job.created >= bound and _short(job)


def _short(job: JobInfo) -> bool:
    """Whether ``job`` waits for room: not on its way out, short of its minimum, with a pending
    task that asks for room."""
    return not job.terminating and job.placed() < job.min_member and any(not t.best_effort for t in job.pending())


def _next_past(snapshot: Snapshot, bound: float) -> float:
    """When the next job short of its minimum passes ``bound`` (infinite when none waits): the
    earliest instant an oldest-first target can appear where there is none."""
    return min((job.created + bound for job in snapshot.waiting_jobs() if _short(job)), default=math.inf)


@dataclass(slots=True, eq=False)
class _Last:
    """The oldest-first target of the last session, and what says this session follows it."""

    unsettled: set[ObjectKey]  # the job table's (whose identity says the table is the same one)
    renewal: int
    now: float
    bound: float
    chosen: ObjectKey


def _oldest(session: Session, bound: float) -> ObjectKey | None:
    """``target``, oldest first, in the cost of the jobs that changed: the last session's target
    stays the oldest eligible job while it is eligible, unless a job changed since (built again,
    put back, given a changed PodGroup or changed by that session) is eligible and older. A job
    that was not eligible becomes so only by changing or by passing the bound, and those that
    pass it now were created after any that passed it before. Else every waiting job is looked
    at, as ``target`` does (a fresh cache answers as a kept one)."""
    snapshot = session.snapshot
    last = session.kept.get(KEPT)
    jobs = snapshot.jobs
    if (
        isinstance(last, _Last)
        and snapshot.follows(last.unsettled, last.renewal)
        and last.bound == bound
        and last.now <= snapshot.now
        and (kept := jobs.get(last.chosen)) is not None
        and last.chosen in snapshot.waiting
        and _eligible(snapshot, kept, bound)
    ):
        best = (kept.created, kept.key)
        for key in snapshot.jobs_touched():
            job = jobs.get(key)
            if (
                job is not None
                and key in snapshot.waiting
                and (job.created, key) < best
                and _eligible(snapshot, job, bound)
            ):
                best = (job.created, key)
        chosen: ObjectKey | None = best[1]
    else:
        chosen = target(snapshot, bound)
    if chosen is None:
        session.kept.pop(KEPT, None)
    else:
        session.kept[KEPT] = _Last(snapshot.unsettled, snapshot.renewal, snapshot.now, bound, chosen)
    return chosen


def slowdown(snapshot: Snapshot, job: JobInfo) -> float:
    """``job``'s bounded slowdown if it started now: (waited + runtime) / max(runtime, ``FLOOR``),
    its runtime the one held room reads (``runtimes.runtime``), ``FLOOR`` when unknown (as
    shortest first takes a job of unknown runtime as one of none)."""
    runs = runtimes.runtime(snapshot, job)
    runs = FLOOR if runs is None else max(runs, FLOOR)
    return (snapshot.now - job.created + runs) / runs


def build(options: Mapping[str, object]) -> Plugin:
    given = positive_seconds(arguments_of(options).get(WAITING_TIME))
    bound = DEFAULT_WAITING if given is None else given
    shortest = switch(options, SHORTEST_FIRST, default=False)
    by_slowdown = switch(options, SLOWDOWN_FIRST, default=False)

    def on_open(session: Session) -> None:
        snapshot = session.snapshot
        if by_slowdown:
            chosen = target(snapshot, bound, by_slowdown=True)
            standstill.now(session)  # slowdowns grow with the wait, each at its own rate
        else:
            chosen = _oldest(session, bound)
            if chosen is None:
                standstill.until(session, _next_past(snapshot, bound))

        def order(job: JobInfo) -> Key:
            if job.key == chosen:
                return (0.0, 0.0)
            runs = runtimes.runtime(snapshot, job) if shortest else None
            return (1.0, 0.0 if runs is None else runs)

        def pipelined(job: JobInfo) -> Vote:
            return Vote.PERMIT if job.key == chosen else Vote.ABSTAIN

        pipelining.register(session, NAME, order, pipelined, only=() if chosen is None else (chosen,))

    return Plugin(NAME, on_open)
