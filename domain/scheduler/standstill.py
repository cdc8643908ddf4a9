"""Standstill: until when a Volcano cycle's outcome stands, if nothing but time changes.

A cycle's decisions are a function of the state and of its instant. Most of it never reads the
instant; what does says, as it reads it, the earliest instant at which its answer could be
another (``until``), and the cycle keeps the earliest of them (infinite when nothing reads
the instant). A later cycle over the same state, at an instant before that, reads every answer
as this one did, so it decides what this one decided, written already: nothing
(``Engine.handle`` skips it when its caller vouches for the state).

What reads the instant, and until when its answer stands:
- ``sla``: a job not yet past its waiting time until it passes it; one past it stays past;
- ``reservation`` ranking by slowdown (which grows with the wait): not beyond the instant;
- ``reservation`` oldest first: its target stays the oldest job past the bound (a job passing
  the bound later was created later); without a target, until the next job passes the bound;
- held room (``held_room.hold``): the plans read the instant only against the ends of the pods
  of known end (``runtimes.ends``; a node free now ranks before those freeing up at an end),
  so they stand until the earliest of them;
- lending (``lending.lendable``): a job whose runtime ends by a hold's shadow time from now may
  use its room until the shadow time less that runtime; one that may not never may later;
- a status write the state refused is asked again by the next cycle: not beyond the instant.
"""

from __future__ import annotations

import math

from domain.scheduler.cache import SchedulerCache
from domain.scheduler.session import Session

KEPT = "standstill"  # in ``SchedulerCache.kept``: until when the last cycle's outcome stands
READING = "standstill-reading"  # the earliest instant the running cycle's answers read so far


def until(session: Session, instant: float) -> None:
    """An answer ``session`` read stands only before ``instant`` (scheduler seconds)."""
    kept = session.kept
    reading = kept.get(READING)
    if not isinstance(reading, float) or instant < reading:
        kept[READING] = instant


def now(session: Session) -> None:
    """An answer ``session`` read may be another at any later instant."""
    until(session, session.snapshot.now)


def forget(cache: SchedulerCache) -> None:
    """A cycle over ``cache`` begins: until it ends, no outcome is known to stand (one that
    raises leaves none)."""
    cache.kept.pop(KEPT, None)
    cache.kept[READING] = math.inf


def keep(cache: SchedulerCache) -> None:
    """The cycle over ``cache`` ended: its outcome stands until the earliest instant it read."""
    cache.kept[KEPT] = cache.kept.pop(READING, -math.inf)


def of(cache: SchedulerCache) -> float:
    """Until when the outcome of the last cycle over ``cache`` stands (-inf when unknown)."""
    kept = cache.kept.get(KEPT)
    return kept if isinstance(kept, float) else -math.inf
