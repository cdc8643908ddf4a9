"""``schedstream simulate``: load a trace, run it closed-loop under our scheduler and under the
baselines, and write the run's directory:

* ``events.jsonl``: every line of the stream the simulated cluster produced (nodes, queues,
  jobs, status write-backs, completions, deletions, SCHEDULE markers); ``schedstream replay``
  of it gives exactly ``decisions.jsonl``;
* ``decisions.jsonl``: the scheduler's decisions, as replay writes them;
* ``metrics.json``: the trace, the run's counts, and ``metrics.compute`` per policy;
* ``report.html``: ``report.render`` of the same numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from domain.scheduler.config import SchedulerConfig
from services.progress import Report, silent
from services.simulate import metrics, report, share
from services.simulate.baselines import BASELINES
from services.simulate.cluster import POLICY
from services.simulate.loop import run_closed_loop
from services.traces.dlrm import read_dlrm, sized_nodes
from services.traces.model import Node, Trace, TraceError, with_arrival_scale, with_estimates
from services.traces.native import read_native, read_nodes
from services.traces.openb import read_openb
from services.traces.swf import read_swf

Format = Literal["native", "openb", "dlrm", "swf"]
FORMATS: tuple[Format, ...] = ("native", "openb", "dlrm", "swf")


def load(
    path: Path, fmt: Format, nodes: Path | None, *, arrival_scale: float = 1.0, estimates: str = "none"
) -> tuple[Trace, tuple[Node, ...]]:
    """The trace and the nodes to run it on: ``nodes`` is the openb node CSV for openb, a native
    node list otherwise (for SWF it replaces the header's nodes; DLRM without it runs on
    ``dlrm.sized_nodes``). ``arrival_scale`` compresses the arrivals (``with_arrival_scale``);
    DLRM's sized nodes are sized for the trace as read, before the compression. ``estimates``
    says which runtime estimates the scheduler is told (``with_estimates``)."""
    trace, on = _load(path, fmt, nodes)
    return with_estimates(with_arrival_scale(trace, arrival_scale), estimates), on


def _load(path: Path, fmt: Format, nodes: Path | None) -> tuple[Trace, tuple[Node, ...]]:
    if fmt == "openb":
        trace = read_openb(path, nodes)
        return trace, trace.nodes
    if fmt == "native":
        trace = read_native(path, nodes)
        return trace, trace.nodes
    if fmt == "dlrm":
        trace = read_dlrm(path)
        return trace, read_nodes(nodes) if nodes is not None else sized_nodes(trace)
    trace = read_swf(path)
    return trace, read_nodes(nodes) if nodes is not None else trace.nodes


@dataclass(frozen=True)
class Result:
    metrics: dict[str, dict[str, Any]]
    lines: int
    decisions: dict[str, int]


def simulate(
    trace: Trace,
    nodes: tuple[Node, ...],
    config: SchedulerConfig,
    out_dir: Path,
    *,
    period: float = 1.0,
    scheduler: str = "volcano",
    kueue_objects: list[dict[str, Any]] | None = None,
    progress: Report = silent,
    baselines: tuple[str, Trace] | None = None,
) -> Result:
    """Run every policy on the trace and write ``out_dir``'s four files (``run_closed_loop``
    says what ``scheduler``, ``kueue_objects`` and ``progress`` do). ``baselines``: the
    estimates the baselines are told instead of the scheduler's (``simulate
    --baseline-estimates``) and the trace with them, recorded in ``metrics.json``."""
    if not nodes:
        raise TraceError("no nodes to simulate on: give a node list with --nodes")
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "events.jsonl").open("wb") as events, (out_dir / "decisions.jsonl").open("wb") as decisions:
        cluster = run_closed_loop(
            trace,
            nodes,
            config,
            events,
            decisions,
            period=period,
            scheduler=scheduler,
            kueue_objects=kueue_objects,
            progress=progress,
        )
    told = trace if baselines is None else baselines[1]
    outcomes = {POLICY: cluster.outcome} | {name: run(told, nodes) for name, run in BASELINES.items()}
    capacity = cluster.outcome.capacity
    used = {job.queue for job in trace.jobs}
    deserved = share.volcano({job.queue for job in trace.jobs if not cluster.is_kueue(job)}, capacity)
    if cluster.workloads is not None:
        deserved |= {q: s for q, s in share.kueue(cluster.workloads.objects, capacity).items() if q in used}
    computed = {name: metrics.compute(outcome, deserved) for name, outcome in outcomes.items()}
    document = {
        "trace": {"jobs": len(trace.jobs), "tasks": sum(job.tasks for job in trace.jobs), "nodes": len(nodes)},
        "simulation": {
            "period": period,
            "scheduler": scheduler,
            "lines": cluster.lines,
            "decisions": dict(sorted(cluster.decided.items())),
            "decisions_not_applied": dict(sorted(cluster.ignored.items())),
            "end": cluster.outcome.end,
        },
        "policies": computed,
    }
    if baselines is not None:
        document["simulation"]["baseline_estimates"] = baselines[0]
    (out_dir / "metrics.json").write_text(json.dumps(document, indent=1) + "\n")
    waits = {name: metrics.waits(outcome.jobs.values()) for name, outcome in outcomes.items()}
    page = report.render(f"schedstream simulate: {len(trace.jobs)} jobs on {len(nodes)} nodes", computed, waits)
    (out_dir / "report.html").write_text(page)
    return Result(computed, cluster.lines, dict(cluster.decided))
