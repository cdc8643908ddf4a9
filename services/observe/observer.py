"""Observer: what the worker shows about itself, beside the work: its metrics, readiness, the
last decisions it made and how far each partition lags behind. The stream service feeds it
after every batch; the HTTP server (``services.observe.server``) reads it."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from domain.decisions import Decision
from domain.engine import Failing
from domain.state import ClusterState
from services.observe.metrics import WorkerMetrics

RECENT = 50  # decisions kept for the status page


class Observer:
    def __init__(
        self, states: Callable[[], Iterable[ClusterState]], failing: Callable[[str], Failing | None] = lambda _: None
    ) -> None:
        self.states = states
        self.failing = failing  # a cluster's cycles raising in a row (``Engine.failing``)
        self.metrics = WorkerMetrics(states, failing)
        self.ready = False  # partitions assigned and their state restored from the store
        self.recent: deque[Decision] = deque(maxlen=RECENT)
        self.lags: dict[int, int] = {}
        self.started = time.monotonic()

    def assigned(self, ready: bool) -> None:
        self.ready = ready

    def batch(
        self,
        partition: int,
        *,
        events: int,
        decisions: Sequence[Decision],
        rejects: Sequence[str],
        seconds: float,
        lag: int | None,
    ) -> None:
        self.metrics.observe_batch(partition, events, decisions, rejects, seconds)
        self.recent.extend(decisions)
        if lag is not None:
            self.lags[partition] = lag
            self.metrics.lag.labels(str(partition)).set(lag)

    def timer(self, outcome: str) -> None:
        """What the timer did for a cluster that wanted a cycle: wrote its marker ("written"),
        found it idle ("idle") or waited after cycles that raised ("backoff")."""
        self.metrics.timer.labels(outcome).inc()

    def cycle(self, seconds: float) -> None:
        self.metrics.cycle_ms.observe(seconds * 1000)
