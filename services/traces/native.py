"""schedstream's native trace format: JSON lines, one job per line, and a node list beside it.

A job line holds the fields of ``model.Job`` under the same (snake_case) names, e.g.
``{"id": "train-7", "submit": 3600, "duration": 5400, "tasks": 4, "min_member": 4,
"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}, "queue": "research",
"priority": 100, "topology": "ib-cluster", "scheduler": "volcano"}``; a node line holds
``name``, ``allocatable`` and ``labels``. Unknown keys, wrong types and invalid quantities
are errors naming the file and line. The full description is in services/traces/README.md.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from services.traces.model import Job, Node, Trace, TraceError

T = TypeVar("T", Job, Node)
_REQUIRED_JOB_KEYS = ("id", "submit", "duration")


def _records(path: Path, kind: type[T]) -> Iterator[T]:
    known = {f.name for f in dataclasses.fields(kind)}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TraceError(f"{where}: not JSON: {exc}") from None
            if not isinstance(raw, dict):
                raise TraceError(f"{where}: expected a JSON object")
            unknown = sorted(set(raw) - known)
            if unknown:
                raise TraceError(f"{where}: unknown key(s) {', '.join(unknown)}")
            if kind is Job and (missing := [key for key in _REQUIRED_JOB_KEYS if key not in raw]):
                raise TraceError(f"{where}: missing key(s) {', '.join(missing)}")
            try:
                yield msgspec.convert(raw, kind)
            except (msgspec.ValidationError, TraceError) as exc:
                raise TraceError(f"{where}: {exc}") from None


def read_jobs(path: Path) -> tuple[Job, ...]:
    return tuple(_records(path, Job))


def read_nodes(path: Path) -> tuple[Node, ...]:
    return tuple(_records(path, Node))


def read_native(jobs_path: Path, nodes_path: Path | None = None) -> Trace:
    """A trace from a jobs file and, optionally, a node list file."""
    nodes = read_nodes(nodes_path) if nodes_path is not None else ()
    try:
        return Trace(read_jobs(jobs_path), nodes)
    except TraceError as exc:
        raise TraceError(f"{jobs_path}: {exc}") from None


def _seconds(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _job_record(job: Job) -> dict[str, Any]:
    """A job as its native line's object: required keys always, optional ones when set."""
    record: dict[str, Any] = {
        "id": job.id,
        "submit": _seconds(job.submit),
        "duration": None if job.duration is None else _seconds(job.duration),
        "tasks": job.tasks,
        "min_member": job.gang,
        "requests": job.requests,
        "queue": job.queue,
        "priority": job.priority,
    }
    optional = {
        "topology": job.topology,
        "scheduler": job.scheduler,
        "node_affinity": {label: list(values) for label, values in job.node_affinity.items()},
        "labels": job.labels,
    }
    record.update((key, value) for key, value in optional.items() if value)
    return record


def _node_record(node: Node) -> dict[str, Any]:
    return {"name": node.name, "allocatable": node.allocatable, "labels": node.labels}


def write_native(trace: Trace, jobs_path: Path, nodes_path: Path | None = None) -> None:
    """Write the jobs (and, given a path, the nodes) as native JSON lines."""
    with jobs_path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(_job_record(job), separators=(",", ":")) + "\n" for job in trace.jobs)
    if nodes_path is not None:
        with nodes_path.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(_node_record(node), separators=(",", ":")) + "\n" for node in trace.nodes)
