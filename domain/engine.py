"""Engine: the whole domain behind one call. Events go in in stream order; each gets its
cluster's next seq, is folded into that cluster's state, and triggers a scheduling cycle when
the cluster's clock says so. Replay and the streaming worker both drive this one class, so
they cannot disagree."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

import msgspec

from domain.cache import ClusterCache
from domain.cycle import run_cycle
from domain.decisions import Decision
from domain.events import Inbound, ScheduleMarker, WatchEvent
from domain.kueue import deadlines, workloads
from domain.scheduler import standstill
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.object_facts import seconds
from domain.state import ClusterState


class Processed(msgspec.Struct, frozen=True):
    """What one event did: its seq and the decisions of the cycle it triggered (a frozen struct,
    made for every event at a fraction of a frozen dataclass's cost)."""

    cluster: str
    seq: int
    decisions: list[Decision]
    cycle_failure: str = ""  # why the cycle this event triggered raised (it was skipped), or ""


class Failing(NamedTuple):
    """Cycles of one cluster that raised in a row (``Engine.failing``)."""

    count: int
    quiet: int  # the last of them with no watch event between them or since (0: one came since)
    last: float  # the instant of the last, in seconds since the epoch


class Engine:
    """Per-cluster states and the rule for when cycles run.

    ``on_markers(cluster)`` says whether the cluster's stream carries SCHEDULE markers: then
    cycles run only at markers; otherwise a cycle runs after every event (CONTRACT section 1).
    A cluster switches to markers for good when its first marker arrives.
    """

    def __init__(self, config: SchedulerConfig, on_markers: Callable[[str], bool] = lambda _: False) -> None:
        self.config = config
        self._on_markers = on_markers
        self.clusters: dict[str, ClusterState] = {}
        self.caches: dict[str, ClusterCache] = {}  # what the schedulers keep between cycles, per cluster

    def state(self, cluster: str) -> ClusterState:
        state = self.clusters.get(cluster)
        if state is None:
            state = self.clusters[cluster] = ClusterState(cluster, on_markers=self._on_markers(cluster))
        return state

    def cache(self, state: ClusterState) -> ClusterCache:
        """The cache of ``state``'s cluster; a new one (built from scratch by the next cycle) when
        the cluster's state object is new (a restore, or a cluster rebuilt from the store)."""
        cache = self.caches.get(state.name)
        if cache is None or cache.state is not state:
            cache = self.caches[state.name] = ClusterCache(state)
        return cache

    def handle(self, event: Inbound, *, echoes: bool = False) -> Processed:
        """Fold ``event`` and run the cycle it triggers. An exception of the fold propagates (the
        caller rebuilds the cluster without the event); one of the cycle is caught and the cycle
        skipped, so a single object can never stop the cluster's stream: the same input fails
        the same way in the worker, in replay and in a restore, so they stay equal.

        ``echoes``, for a marker: its caller vouches that the events since the last marker only
        wrote back statuses the cycles decided (the cluster's echo), or that none came. Then the
        state is what the last cycle left, and if that cycle's outcome stands at this marker's
        instant (``standstill``) the cycle would decide nothing: it is not run. A replay, which
        cannot vouch, runs it and decides the same nothing."""
        state = self.state(event.cluster)
        seq = state.next_seq
        state.next_seq += 1
        came = state.events_since_marker  # watch events before this one since the last marker
        state.apply(event, seq=seq, history_label=self.config.runtime_history_label)
        if not isinstance(event, ScheduleMarker) and state.on_markers:
            return Processed(event.cluster, seq, [])
        cache = self.cache(state)
        if echoes and isinstance(event, ScheduleMarker) and self._stands(state, state.clock):
            cache.quiet = True  # the cycle would decide nothing over this very state
            return Processed(event.cluster, seq, [])
        cache.quiet = False
        try:
            decisions = run_cycle(state, cache, self.config, seq=seq)
        except MemoryError:
            raise  # the machine, not the input
        except Exception as exc:  # whatever one object makes the cycle raise
            watched = came or isinstance(event, WatchEvent)
            cache.failures += 1
            cache.quiet_failures = 1 if watched or not cache.quiet_failures else cache.quiet_failures + 1
            cache.failed_at = seconds(state.clock) if state.clock is not None else 0.0
            return Processed(event.cluster, seq, [], cycle_failure=f"{type(exc).__name__}: {exc}")
        cache.quiet, cache.failures, cache.quiet_failures = not decisions, 0, 0
        return Processed(event.cluster, seq, decisions)

    def wants_cycle(self, cluster: str, instant: datetime) -> bool:
        """Whether the worker's timer should consider a marker for ``cluster`` at ``instant``:
        watch events came since the last one, pods or workloads wait (``ClusterState.wants_cycle``),
        or a Kueue step's deadline is due (an admitted workload's PodsReady timeout, whose pods
        wait for nothing of ours)."""
        state = self.clusters.get(cluster)
        if state is None:
            return False
        if state.wants_cycle():
            return True
        deadline = self.next_deadline(cluster)
        return deadline is not None and deadline <= max(instant, state.clock or instant)

    def idle(self, cluster: str, instant: datetime) -> bool:
        """Whether a SCHEDULE marker of ``cluster`` at ``instant`` would decide nothing, so the
        worker's timer need not write it: no watch event came since the last marker, whose cycle
        ran to its end and decided nothing (so the state is the one that cycle left: its notes,
        no decision of its own waiting for the cluster's answer), the Volcano side's outcome
        stands at the instant (``standstill``) and no Kueue step waits for a time before it
        (``next_deadline``). A cluster never seen, restored from a snapshot or whose last cycle
        raised is not idle."""
        state, cache = self.clusters.get(cluster), self.caches.get(cluster)
        if state is None or state.clock is None or cache is None or cache.state is not state:
            return False
        at = max(instant, state.clock)
        if state.events_since_marker or not cache.quiet or seconds(at) >= standstill.of(cache.volcano):
            return False
        deadline = self.next_deadline(cluster)
        return deadline is None or at < deadline

    def failing(self, cluster: str) -> Failing | None:
        """The cycles of ``cluster`` that raised one after another: how many, how many of the last
        of them had no watch event between them nor since (``quiet``: then the state is the one the
        last failed over, but for the clock, and the worker's timer backs off), and when the last
        ran. None when the last cycle ran to its end, or the cluster or its cache is new."""
        state, cache = self.clusters.get(cluster), self.caches.get(cluster)
        if state is None or cache is None or cache.state is not state or not cache.failures:
            return None
        quiet = 0 if state.events_since_marker else cache.quiet_failures
        return Failing(cache.failures, quiet, cache.failed_at)

    def _stands(self, state: ClusterState, instant: datetime | None) -> bool:
        """For ``handle``'s echoes: whether the outcome of the last cycle over ``state`` stands at
        ``instant``, a Volcano cycle's (``standstill``); with Workloads never."""
        if instant is None or state.objects.get("Workload"):
            return False
        return seconds(instant) < standstill.of(self.cache(state).volcano)

    def next_deadline(self, cluster: str) -> datetime | None:
        """The earliest scheduler-clock instant after the cluster's clock at which a cycle would
        act although no event came (``domain.kueue.deadlines``), or None. Only Kueue steps wait
        for the clock: ``sla`` and ``reservation`` read the instant of the next marker, whenever
        it comes, and no Volcano action waits for one."""
        state = self.clusters.get(cluster)
        if state is None or not state.objects.get("Workload"):
            return None
        cache = self.cache(state)
        cache.kueue = workloads.renew(cache.kueue, state, cache.changes)
        return deadlines.next_deadline(state, self.config.kueue, cache.kueue)
