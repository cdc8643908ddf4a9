"""What a policy did to a trace, in one shape for the closed-loop simulator and the baselines:
per job when it started and ended, and step timelines of allocated resources and of the
number of waiting jobs. ``metrics`` turns an ``Outcome`` into numbers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from domain.quantity import ResourceList
from services.traces.model import Job


@dataclass
class JobRecord:
    """``start``: when the job's gang (its first ``min_member`` tasks) was first all running;
    ``end``: when its last task finished; None when that never happened in the run."""

    job: Job
    start: float | None = None
    end: float | None = None
    restarts: int = 0


@dataclass
class Timeline:
    """A step function as its change points: (time, value), times non-decreasing; a second
    point at the same time replaces the first."""

    points: list[tuple[float, float]] = field(default_factory=list)

    def set(self, time: float, value: float) -> None:
        if self.points and self.points[-1][0] == time:
            self.points[-1] = (time, value)
        elif not self.points or self.points[-1][1] != value:
            self.points.append((time, value))

    def _segments(self, begin: float, end: float) -> list[tuple[float, float, float]]:
        """(from, to, value) of every step inside [begin, end]."""
        following = [time for time, _ in self.points[1:]] + [end]
        return [
            (max(time, begin), min(until, end), value)
            for (time, value), until in zip(self.points, following, strict=True)
            if min(until, end) > max(time, begin)
        ]

    def integral(self, begin: float, end: float) -> float:
        """The area under the step function over [begin, end]."""
        return sum((hi - lo) * value for lo, hi, value in self._segments(begin, end))

    def means(self, begin: float, end: float, buckets: int) -> list[float]:
        """The mean value in each of ``buckets`` equal slices of [begin, end], in one sweep."""
        width = (end - begin) / buckets
        sums = [0.0] * buckets
        bucket = 0
        for lo, hi, value in self._segments(begin, end):
            while bucket < buckets - 1 and begin + (bucket + 1) * width <= lo:
                bucket += 1
            start = lo
            while start < hi:
                edge = hi if bucket == buckets - 1 else min(hi, begin + (bucket + 1) * width)
                sums[bucket] += value * (edge - start)
                start = edge
                if start < hi:
                    bucket += 1
        return [total / width for total in sums]


@dataclass
class Outcome:
    """One policy's run of a trace on a set of nodes; ``capacity`` and ``usage`` in milli-units."""

    policy: str
    capacity: ResourceList
    jobs: dict[str, JobRecord]
    usage: dict[str, Timeline] = field(default_factory=dict)
    waiting: Timeline = field(default_factory=Timeline)
    pending_reasons: Counter[str] = field(default_factory=Counter)
    queue_usage: dict[str, dict[str, Timeline]] = field(default_factory=dict)
    end: float = 0.0

    def track(
        self, time: float, allocated: ResourceList, waiting: int, by_queue: Mapping[str, ResourceList] | None = None
    ) -> None:
        """Record the allocation (in all, and per queue) and queue length from ``time`` on."""
        for resource in self.capacity:
            self.usage.setdefault(resource, Timeline()).set(time, allocated.get(resource, 0))
        for queue, amounts in (by_queue or {}).items():
            timelines = self.queue_usage.setdefault(queue, {})
            for resource in self.capacity:
                timelines.setdefault(resource, Timeline()).set(time, amounts.get(resource, 0))
        self.waiting.set(time, waiting)
        self.end = max(self.end, time)
