"""The numbers of a run, per policy, as JSON-ready dicts and a printed table.

* utilisation: time-weighted mean share of the cluster's capacity allocated to running pods,
  per resource (cpu, memory, nvidia.com/gpu, those the nodes have), over the horizon (first
  submit to the last job end or submit); beside it the timeline, resampled to ``SAMPLES``
  buckets (each the bucket's mean);
* wait: start - submit of every job that started (mean, p50, p95, p99, max), for all jobs, per
  queue and per size class: a gang's nodes (tasks: 1, 2-8, 9-32, 33+), or on a GPU trace (one
  where any job asks for ``nvidia.com/gpu``) its GPUs (0, up to 1, 2-4, 5-8, 9+);
* censored: jobs that never started, and their waits up to the end of the run (the outcome's
  last instant), in all and per size class: a policy that starves a job is not flattered by
  leaving it out of the waits; ``wait_with_censored`` is the wait summary with them counted;
* bounded slowdown: max(1, (wait + run) / max(run, tau)), tau = 10 s, over finished jobs, in
  all and per size class;
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

from domain.quantity import MILLI, parse_milli
from services.simulate.outcome import JobRecord, Outcome, Timeline
from services.simulate.share import Shares

TRACKED = ("cpu", "memory", "nvidia.com/gpu")
TAU = 10.0
SAMPLES = 400
SHARE_ROWS = 8  # queues in the printed table; metrics.json has them all
SIZE_CLASSES = ((1, "1"), (8, "2-8"), (32, "9-32"), (math.inf, "33+"))  # tasks (a gang's nodes)
GPU_CLASSES = ((0, "0 gpu"), (1, "<=1 gpu"), (4, "2-4 gpu"), (8, "5-8 gpu"), (math.inf, "9+ gpu"))  # whole GPUs
GPU = "nvidia.com/gpu"
GPU_MILLI = "alibaba.com/gpu-milli"  # openb's shared GPUs: thousandths of one, asked for alone


def percentile(values: list[float], q: float) -> float:
    return percentiles(values, [q])[0]


def percentiles(values: list[float], qs: list[float]) -> list[float]:
    """Each percentile ``q`` of ``values`` (linear between ranks), sorting them once."""
    ordered = sorted(values)
    found = []
    for q in qs:
        rank = (len(ordered) - 1) * q / 100
        low = math.floor(rank)
        high = min(low + 1, len(ordered) - 1)
        found.append(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))
    return found


def summary(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "mean": sum(values) / len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values),
    }


def size_class(tasks: int) -> str:
    return next(name for bound, name in SIZE_CLASSES if tasks <= bound)


def gpu_class(gpus: float) -> str:
    return next(name for bound, name in GPU_CLASSES if gpus <= bound)


def _gpus(record: JobRecord) -> float:
    """GPUs of one task: whole ones, else the thousandths of a shared one."""
    requests = record.job.requests
    if GPU in requests:
        return parse_milli(requests[GPU]) / MILLI
    return parse_milli(requests.get(GPU_MILLI, "0")) / MILLI / MILLI


def is_gpu_trace(records: Iterable[JobRecord]) -> bool:
    return any(_gpus(record) > 0 for record in records)


def class_of(record: JobRecord, by_gpu: bool) -> str:
    """The job's size class: its GPUs in all on a GPU trace, else its tasks."""
    return gpu_class(_gpus(record) * record.job.tasks) if by_gpu else size_class(record.job.tasks)


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


def censored(records: Iterable[JobRecord], end: float) -> list[float]:
    """The waits, up to ``end``, of the jobs that never started."""
    return [max(0.0, end - record.job.submit) for record in records if record.start is None]


def _censored_summary(records: list[JobRecord], end: float) -> dict[str, float | int]:
    values = censored(records, end)
    return {"count": len(values), "mean": sum(values) / len(values), "max": max(values)} if values else {"count": 0}


def _slowdowns(records: Iterable[JobRecord]) -> list[float]:
    out = []
    for record in records:
        if record.start is None or record.end is None:
            continue
        run = record.end - record.start
        out.append(max(1.0, (record.start - record.job.submit + run) / max(run, TAU)))
    return out


def _by_queue(records: list[JobRecord]) -> dict[str, dict[str, float | int]]:
    groups: dict[str, list[JobRecord]] = {}
    for record in records:
        groups.setdefault(record.job.queue, []).append(record)
    return {name: summary(waits(members)) for name, members in sorted(groups.items())}


def _by_class(records: list[JobRecord], end: float) -> dict[str, dict[str, Any]]:
    """Per size class, in class order: waits of the started jobs, bounded slowdown of the
    finished ones, and the censored waits of those never started."""
    by_gpu = is_gpu_trace(records)
    order = [name for _, name in (GPU_CLASSES if by_gpu else SIZE_CLASSES)]
    groups: dict[str, list[JobRecord]] = {}
    for record in records:
        groups.setdefault(class_of(record, by_gpu), []).append(record)
    return {
        name: {
            "jobs": len(groups[name]),
            "wait": summary(waits(groups[name])),
            "bounded_slowdown": summary(_slowdowns(groups[name])),
            "censored": _censored_summary(groups[name], end),
        }
        for name in order
        if name in groups
    }


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
            "by_queue": _by_queue(records),
        },
        "wait_with_censored": summary(waits(records) + censored(records, outcome.end)),
        "censored": _censored_summary(records, outcome.end),
        "by_size": _by_class(records, outcome.end),
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
    rows.append(("never started (censored)", [str(m["censored"]["count"]) for m in metrics.values()]))
    rows.append(("wait mean, censored too (s)", [_cell(m["wait_with_censored"].get("mean")) for m in metrics.values()]))
    rows.extend(_class_rows(metrics))
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


def _class_rows(metrics: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """Per size class: mean and max wait, mean bounded slowdown, and jobs never started."""
    classes = list(dict.fromkeys(name for m in metrics.values() for name in m["by_size"]))
    rows = []
    for name in classes:
        cells = [m["by_size"].get(name, {}) for m in metrics.values()]
        rows.append((f"[{name}] jobs", [str(c.get("jobs", 0)) for c in cells]))
        rows.append((f"[{name}] wait mean (s)", [_cell(c.get("wait", {}).get("mean")) for c in cells]))
        rows.append((f"[{name}] wait max (s)", [_cell(c.get("wait", {}).get("max")) for c in cells]))
        rows.append((f"[{name}] bounded slowdown mean", [_cell(c.get("bounded_slowdown", {}).get("mean"), 2)
                                                        for c in cells]))  # fmt: skip
        rows.append((f"[{name}] never started", [str(c.get("censored", {}).get("count", 0)) for c in cells]))
    return rows


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
