"""The numbers of a run, per policy, as JSON-ready dicts and a printed table.

* utilisation: time-weighted mean share of the cluster's capacity allocated to running pods,
  per resource (cpu, memory, nvidia.com/gpu, those the nodes have), over the horizon (first
  submit to the last job end or submit); beside it the timeline, resampled to ``SAMPLES``
  buckets (each the bucket's mean);
* wait: start - submit of every job that started (mean, p50, p95, p99), for all jobs, per
  queue and per size class (number of tasks: 1, 2-4, 5-16, 17-64, 65+);
* bounded slowdown: max(1, (wait + run) / max(run, tau)), tau = 10 s, over finished jobs;
* makespan: first submit to the last job end;
* the share of each queue against its deserved share (``share``): per resource, the
  time-weighted mean of what the queue's running pods held, as a share of the capacity, beside
  the deserved share and their ratio (1.0: it got what it was owed on average);
* the waiting-job count over time (resampled too), and the histogram of pending reasons
  (condition reasons of the Unschedulable PodGroup and QuotaReserved=False Workload statuses
  our scheduler wrote).
Percentiles interpolate linearly between closest ranks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from services.simulate.outcome import JobRecord, Outcome, Timeline
from services.simulate.share import Shares

TRACKED = ("cpu", "memory", "nvidia.com/gpu")
TAU = 10.0
SAMPLES = 400
SHARE_ROWS = 8  # queues in the printed table; metrics.json has them all
SIZE_CLASSES = ((1, "1"), (4, "2-4"), (16, "5-16"), (64, "17-64"), (math.inf, "65+"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "mean": sum(values) / len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
    }


def size_class(tasks: int) -> str:
    return next(name for bound, name in SIZE_CLASSES if tasks <= bound)


def horizon(outcome: Outcome) -> tuple[float, float]:
    records = list(outcome.jobs.values())
    if not records:
        return 0.0, 0.0
    first = min(record.job.submit for record in records)
    last = max([record.job.submit for record in records] + [r.end for r in records if r.end is not None])
    return first, last


def resample(timeline: Timeline, begin: float, end: float, scale: float = 1.0) -> list[list[float]]:
    """The step function as ``SAMPLES`` [bucket start, bucket mean / scale] pairs."""
    if end <= begin:
        return [[begin, (timeline.points[-1][1] if timeline.points else 0.0) / scale]]
    width = (end - begin) / SAMPLES
    return [[begin + i * width, mean / scale] for i, mean in enumerate(timeline.means(begin, end, SAMPLES))]


def waits(records: Iterable[JobRecord]) -> list[float]:
    return [record.start - record.job.submit for record in records if record.start is not None]


def _slowdowns(records: Iterable[JobRecord]) -> list[float]:
    out = []
    for record in records:
        if record.start is None or record.end is None:
            continue
        run = record.end - record.start
        out.append(max(1.0, (record.start - record.job.submit + run) / max(run, TAU)))
    return out


def _grouped(records: list[JobRecord], key: str) -> dict[str, dict[str, float | int]]:
    groups: dict[str, list[JobRecord]] = {}
    for record in records:
        name = record.job.queue if key == "queue" else size_class(record.job.tasks)
        groups.setdefault(name, []).append(record)
    return {name: summary(waits(members)) for name, members in sorted(groups.items())}


def _queue_shares(
    outcome: Outcome, deserved: Shares, begin: float, end: float, resources: list[str]
) -> dict[str, dict[str, dict[str, float | None]]]:
    span = end - begin
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for queue in sorted(set(deserved) | set(outcome.queue_usage)):
        usage = outcome.queue_usage.get(queue, {})
        got: dict[str, float | None] = {
            name: usage[name].integral(begin, end) / span / outcome.capacity[name]
            if name in usage and span > 0
            else 0.0
            for name in resources
        }
        owed: dict[str, float | None] = {name: deserved.get(queue, {}).get(name) for name in resources}
        ratio: dict[str, float | None] = {
            name: (got[name] or 0.0) / owed_share if owed_share else None for name, owed_share in owed.items()
        }
        out[queue] = {"allocated": got, "deserved": owed, "ratio": ratio}
    return out


def compute(outcome: Outcome, deserved: Shares | None = None) -> dict[str, Any]:
    """Every metric of one policy's run; ``deserved``: each queue's deserved share."""
    records = list(outcome.jobs.values())
    begin, end = horizon(outcome)
    span = end - begin
    ends = [record.end for record in records if record.end is not None]
    resources = [name for name in TRACKED if outcome.capacity.get(name)]
    utilisation = {
        name: outcome.usage[name].integral(begin, end) / span / outcome.capacity[name] if span > 0 else 0.0
        for name in resources
    }
    return {
        "jobs": len(records),
        "started": sum(1 for record in records if record.start is not None),
        "finished": len(ends),
        "restarts": sum(record.restarts for record in records),
        "wait": {
            "all": summary(waits(records)),
            "by_queue": _grouped(records, "queue"),
            "by_size": _grouped(records, "size"),
        },
        "bounded_slowdown": summary(_slowdowns(records)),
        "makespan": (max(ends) - begin) if ends else None,
        "utilisation": utilisation,
        "utilisation_timeline": {
            name: resample(outcome.usage[name], begin, end, outcome.capacity[name]) for name in resources
        },
        "waiting_timeline": resample(outcome.waiting, begin, end),
        "queues": _queue_shares(outcome, deserved or {}, begin, end, resources),
        "pending_reasons": dict(outcome.pending_reasons.most_common()),
    }


def _cell(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def table(metrics: dict[str, dict[str, Any]]) -> str:
    """The headline numbers, one column per policy."""
    policies = list(metrics)
    rows: list[tuple[str, list[str]]] = [
        ("jobs started / finished", [f"{m['started']} / {m['finished']}" for m in metrics.values()]),
        ("restarts (evictions)", [str(m["restarts"]) for m in metrics.values()]),
    ]
    for stat in ("mean", "p50", "p95", "p99"):
        rows.append((f"wait {stat} (s)", [_cell(m["wait"]["all"].get(stat)) for m in metrics.values()]))
    rows.append(("bounded slowdown mean", [_cell(m["bounded_slowdown"].get("mean"), 2) for m in metrics.values()]))
    rows.append(("makespan (s)", [_cell(m["makespan"]) for m in metrics.values()]))
    for name in next(iter(metrics.values()))["utilisation"]:
        rows.append((f"utilisation {name}", [f"{m['utilisation'][name]:.1%}" for m in metrics.values()]))
    rows.extend(_share_rows(metrics))
    width = max(len(label) for label, _ in rows)
    columns = [max(len(p), *(len(values[i]) for _, values in rows)) for i, p in enumerate(policies)]
    lines = [" " * width + "  " + "  ".join(p.rjust(w) for p, w in zip(policies, columns, strict=True))]
    for label, values in rows:
        lines.append(label.ljust(width) + "  " + "  ".join(v.rjust(w) for v, w in zip(values, columns, strict=True)))
    return "\n".join(lines)


def _share_rows(metrics: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """share / deserved of the first ``SHARE_ROWS`` queues, on the first tracked resource."""
    first = next(iter(metrics.values()))
    if not first["utilisation"]:
        return []
    resource = next(iter(first["utilisation"]))
    queues = list(first["queues"])
    rows = [
        (f"{queue} share/deserved {resource}", [_cell(m["queues"].get(queue, {}).get("ratio", {}).get(resource), 2)
                                                 for m in metrics.values()])
        for queue in queues[:SHARE_ROWS]
    ]  # fmt: skip
    if len(queues) > SHARE_ROWS:
        rows.append((f"({len(queues) - SHARE_ROWS} more queues in metrics.json)", ["" for _ in metrics]))
    return rows
