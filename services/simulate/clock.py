"""Simulated time: a queue of timed actions, and the grid of SCHEDULE markers.

Nothing here reads a wall clock. Time is seconds from the trace start (a float); actions at
the same time run in the order they were scheduled, so a run is deterministic.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from domain.objects.meta import timestamp
from services.traces.events import START

Action = Callable[[], None]


@dataclass
class EventQueue:
    """Actions ordered by (time, order of scheduling)."""

    _heap: list[tuple[float, int, Action]] = field(default_factory=list)
    _order: itertools.count[int] = field(default_factory=itertools.count)

    def at(self, time: float, action: Action) -> None:
        heapq.heappush(self._heap, (time, next(self._order), action))

    def next_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[float, Action]:
        time, _, action = heapq.heappop(self._heap)
        return time, action


def marker_after(time: float, period: float) -> float:
    """The marker closing the period that holds ``time``: events at k*period belong to period k.

    ``time / period`` is rounded to nanoticks first: a marker's own time, k*period in floating
    point, may divide back to a hair under k (43 * 0.1 / 0.1 < 43), and must not get a second
    marker at the same instant."""
    return (math.floor(round(time / period, 9)) + 1) * period


def marker_at(time: float, period: float) -> float:
    """The first marker at or after ``time``, rounded to nanoticks as in ``marker_after``: a
    deadline at k*period, which may divide back to a hair above k, gets the marker at k*period."""
    return math.ceil(round(time / period, 9)) * period


def simulated(at: datetime, start: datetime = START) -> float:
    """A scheduler-clock instant as simulated seconds (the inverse of ``wall``)."""
    return (at - start).total_seconds()


def wall(seconds: float, start: datetime = START) -> str:
    """Simulated seconds as the RFC 3339 timestamp the stream carries."""
    return timestamp(start + timedelta(seconds=seconds))
