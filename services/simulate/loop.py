"""The discrete-event loop of the closed-loop simulation.

Arrivals and task completions are timed actions; a SCHEDULE marker closes every period (on
the grid k * ``period`` seconds) in which the cluster changed, and the marker's decisions are
applied at its time, which changes the cluster again (so the next period gets a marker too).
A period in which nothing changed gets a marker only when a deadline falls in it: an instant at
which the scheduler acts with no new event (``Engine.next_deadline``: Kueue's PodsReady
timeouts, requeue and second-pass backoffs); the marker is the first grid time at or after the
deadline, and later than the last marker. Any other cycle over an unchanged state decides
nothing new (statuses are written only on change), so skipping it only saves time; this is
what lets months of trace run in seconds. The cluster writing back PodGroup statuses we decided
is no change in that sense unless a plugin reads the cycle's instant
(``registry.reads_clock``): the next cycle would see the same jobs, nodes and time-free
rules, and decide nothing (``SimCluster._group_status``). Where one does, such a period's
marker is written, and its cycle runs only if what the last cycle read of its instant may read
otherwise by then (``Engine.handle``'s ``echoes``, ``domain.scheduler.standstill``).

The run ends when no action is left, the last marker changed nothing and no deadline is left
to wake for. Once no action is left, deadlines may go on for ever without progress (a workload
whose pods never fit is evicted at its timeout, requeued, admitted again, and so on; a second
pass is retried in vain), so there a woken marker that decides nothing that woken markers have
not decided since the last Bind ends the waking, until a Bind. Pods with unknown durations are
still running at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO

from domain.decisions import Decision, DecisionKind, ObjectRef
from domain.scheduler.config import SchedulerConfig
from services.progress import Report, silent
from services.simulate import kueue_quota
from services.simulate.clock import marker_after, marker_at, simulated
from services.simulate.cluster import SimCluster
from services.simulate.workloads import SimWorkloads
from services.traces.model import Node, Trace


def run_closed_loop(
    trace: Trace,
    nodes: tuple[Node, ...],
    config: SchedulerConfig,
    events_out: BinaryIO,
    decisions_out: BinaryIO,
    *,
    period: float = 1.0,
    scheduler: str = "volcano",
    kueue_objects: list[dict[str, Any]] | None = None,
    progress: Report = silent,
) -> SimCluster:
    """Simulate the trace on ``nodes`` under ``config``; returns the cluster with its outcome.

    ``scheduler`` (volcano or kueue) takes the jobs that do not name their own; Kueue's
    flavors and queues are ``kueue_objects``, by default ``kueue_quota.derived`` from those jobs.
    ``progress`` hears after each marker how many jobs have arrived, and the simulated time."""
    if not period > 0:
        raise ValueError(f"period must be > 0, not {period!r}")
    cluster = SimCluster(nodes, config, events_out, decisions_out, scheduler=scheduler)
    cluster.add_nodes()
    kueue_jobs = [job for job in trace.jobs if cluster.is_kueue(job)]
    cluster.add_queues(sorted({"default", *(job.queue for job in trace.jobs if not cluster.is_kueue(job))}))
    if kueue_jobs or kueue_objects:
        objects = kueue_quota.derived(kueue_jobs, nodes) if kueue_objects is None else kueue_objects
        pods_ready = config.kueue.pods_ready_timeout is not None
        cluster.workloads = SimWorkloads(
            cluster, config.scheduler_name, config.ib_cluster_label, objects, pods_ready=pods_ready
        )
        cluster.add_objects(objects)
    for job in trace.jobs:
        cluster.queue.at(job.submit, partial(cluster.submit, job))
    wakes = _Wakes(cluster, period)
    while True:
        upcoming = cluster.queue.next_time()
        if cluster.changed_since is not None:
            marker = marker_after(cluster.changed_since, period)
            if upcoming is None or marker <= upcoming:
                wakes.progressed(cluster.schedule(marker))
                progress(len(cluster.outcome.jobs), f"simulated {marker:,.1f} s")
                continue
        elif (wake := wakes.next(idle=upcoming is None)) is not None and (upcoming is None or wake <= upcoming):
            wakes.woken(cluster.schedule(wake), idle=upcoming is None)
            progress(len(cluster.outcome.jobs), f"simulated {wake:,.1f} s")
            continue
        if upcoming is None:
            return cluster
        cluster.now, action = cluster.queue.pop()
        action()


@dataclass
class _Wakes:
    """Markers for deadlines in periods without a change, and whether waking still makes progress."""

    cluster: SimCluster
    period: float
    decided: set[tuple[DecisionKind, ObjectRef, str]] = field(default_factory=set)  # woken, since the last Bind
    stalled: bool = False  # with no action left, a woken marker decided nothing new

    def next(self, *, idle: bool) -> float | None:
        """The marker for the next deadline, or None: there is none, or waking has stalled and no
        action is left (``idle``)."""
        cluster = self.cluster
        deadline = None if idle and self.stalled else cluster.engine.next_deadline(cluster.cluster)
        if deadline is None:
            return None
        wake = marker_at(simulated(deadline), self.period)
        if cluster.last_marker is not None and wake <= cluster.last_marker:
            wake = marker_after(cluster.last_marker, self.period)  # rounding: no second marker at one instant
        return wake

    def woken(self, decisions: list[Decision], *, idle: bool) -> None:
        """A marker put for a deadline decided ``decisions``."""
        made = {(d.kind, d.target, d.reason) for d in decisions}
        if idle and made <= self.decided:
            self.stalled = True
        self.decided |= made
        self.progressed(decisions)

    def progressed(self, decisions: Iterable[Decision]) -> None:
        """Any marker's decisions: a Bind is progress, and waking starts afresh."""
        if any(d.kind is DecisionKind.BIND for d in decisions):
            self.decided.clear()
            self.stalled = False
