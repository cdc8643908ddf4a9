"""The discrete-event loop of the closed-loop simulation.

Arrivals and task completions are timed actions; a SCHEDULE marker closes every period (on
the grid k * ``period`` seconds) in which the cluster changed, and the marker's decisions are
applied at its time, which changes the cluster again (so the next period gets a marker too).
A period in which nothing changed gets no marker: a cycle over an unchanged state decides
nothing new (statuses are written only on change), so skipping it only saves time; this is
what lets months of trace run in seconds. The run ends when no action is left and the last
marker changed nothing; pods with unknown durations are still running then.
"""

from __future__ import annotations

from functools import partial
from typing import Any, BinaryIO

from domain.scheduler.config import SchedulerConfig
from services.progress import Report, silent
from services.simulate import quota
from services.simulate.clock import marker_after
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
    flavors and queues are ``kueue_objects``, by default ``quota.derived`` from those jobs.
    ``progress`` hears after each marker how many jobs have arrived, and the simulated time."""
    if not period > 0:
        raise ValueError(f"period must be > 0, not {period!r}")
    cluster = SimCluster(nodes, config, events_out, decisions_out, scheduler=scheduler)
    cluster.add_nodes()
    kueue_jobs = [job for job in trace.jobs if cluster.is_kueue(job)]
    cluster.add_queues(sorted({"default", *(job.queue for job in trace.jobs if not cluster.is_kueue(job))}))
    if kueue_jobs or kueue_objects:
        objects = quota.derived(kueue_jobs, nodes) if kueue_objects is None else kueue_objects
        pods_ready = bool((config.kueue.get("waitForPodsReady") or {}).get("enable"))
        cluster.workloads = SimWorkloads(
            cluster, config.scheduler_name, config.ib_cluster_label, objects, pods_ready=pods_ready
        )
        cluster.add_objects(objects)
    for job in trace.jobs:
        cluster.queue.at(job.submit, partial(cluster.submit, job))
    while True:
        upcoming = cluster.queue.next_time()
        if cluster.changed_since is not None:
            marker = marker_after(cluster.changed_since, period)
            if upcoming is None or marker <= upcoming:
                cluster.schedule(marker)
                progress(len(cluster.outcome.jobs), f"simulated {marker:,.1f} s")
                continue
        if upcoming is None:
            return cluster
        cluster.now, action = cluster.queue.pop()
        action()
