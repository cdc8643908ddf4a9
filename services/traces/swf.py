"""Importer for the Standard Workload Format (SWF 2.2) of the Parallel Workloads Archive,
Feitelson et al.: https://www.cs.huji.ac.il/labs/parallel/workload/swf.html.

A file (plain, or gzipped as the archive ships it: ``.swf.gz``) is header comments (lines
starting with ``;``, e.g. ``; MaxNodes: 128``, or ``; MaxNodes: 338 (batch partition; 512
total)``: the leading integer counts, the rest is a note) then one job
per line of 18 whitespace-separated numbers, -1 when unknown: 1 job number, 2 submit time,
3 wait time, 4 run time, 5 allocated processors, 6 average CPU time, 7 used memory,
8 requested processors, 9 requested time, 10 requested memory, 11 status, 12 user, 13 group,
14 executable, 15 queue, 16 partition, 17 preceding job, 18 think time.

A job uses its allocated processors (the requested ones when unknown) on nodes of
``procs_per_node`` cores (given, or ``MaxProcs / MaxNodes`` from the header, else 1): it
becomes a gang of ``ceil(procs / procs_per_node)`` pods, all required (``min_member`` =
tasks), each asking for ``ceil(procs / pods)`` cpus; it runs for its run time, and its
requested time (when given) is its runtime estimate (``Job.estimate``). Jobs that
never held processors (run time -1 or no processor count, e.g. cancelled before they
started) are skipped. Queue n becomes queue ``queue-n`` (-1: ``default``); user,
partition and status become labels. With ``MaxNodes`` (or ``MaxProcs``) in the header the
trace gets that many identical nodes ``swf-node-NNNN`` of ``procs_per_node`` cpus. Memory
fields are not mapped: the header does not give a node's memory.
"""

from __future__ import annotations

import gzip
import math
import re
from pathlib import Path

from services.traces.model import Job, Node, Trace, TraceError

FIELDS = 18
USER_LABEL = "swf/user"
PARTITION_LABEL = "swf/partition"
STATUS_LABEL = "swf/status"
_HEADER = re.compile(r";\s*(\w+)\s*:\s*(.*)")
_LEADING_INT = re.compile(r"-?\d+(?![.\d])")
_GZIP_MAGIC = b"\x1f\x8b"


def _header(lines: list[str]) -> dict[str, str]:
    header: dict[str, str] = {}
    for line in lines:
        match = _HEADER.match(line.strip())
        if match:
            header[match.group(1)] = match.group(2).strip()
    return header


def _header_int(path: Path, header: dict[str, str], key: str) -> int | None:
    text = header.get(key)
    if text is None:
        return None
    match = _LEADING_INT.match(text)
    if match is None:
        raise TraceError(f"{path}: header {key}: does not start with an integer: {text!r}")
    value = int(match.group())
    return value if value > 0 else None


def _text(path: Path) -> list[str]:
    """The file's lines, gunzipped when it is gzip (by its magic bytes, whatever its name)."""
    data = path.read_bytes()
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise TraceError(f"{path}: not a readable gzip file: {exc}") from None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _job(fields: list[float], ppn: int) -> Job | None:
    number, submit, _wait, runtime, allocated = fields[:5]
    requested_time = fields[8]
    procs = int(allocated if allocated > 0 else fields[7])
    if runtime < 0 or procs <= 0:
        return None
    tasks = math.ceil(procs / ppn)
    queue, partition = int(fields[14]), int(fields[15])
    return Job(
        id=f"swf-{int(number)}",
        submit=submit,
        duration=runtime,
        tasks=tasks,
        requests={"cpu": str(math.ceil(procs / tasks))},
        queue=f"queue-{queue}" if queue >= 0 else "default",
        labels={USER_LABEL: str(int(fields[11])), PARTITION_LABEL: str(partition), STATUS_LABEL: str(int(fields[10]))},
        estimate=requested_time if requested_time > 0 else None,
    )


def read_swf(path: Path, *, procs_per_node: int | None = None) -> Trace:
    """The jobs of an SWF log, on the identical nodes its header describes."""
    text = _text(path)
    header = _header([line for line in text if line.lstrip().startswith(";")])
    max_nodes, max_procs = _header_int(path, header, "MaxNodes"), _header_int(path, header, "MaxProcs")
    ppn = procs_per_node or (max_procs // max_nodes if max_nodes and max_procs else 1)
    if ppn < 1:
        raise TraceError(f"{path}: procs_per_node must be >= 1, not {ppn}")
    jobs: list[Job] = []
    for number, line in enumerate(text, start=1):
        if not line.strip() or line.lstrip().startswith(";"):
            continue
        where = f"{path}:{number}"
        try:
            fields = [float(value) for value in line.split()]
        except ValueError as exc:
            raise TraceError(f"{where}: {exc}") from None
        if len(fields) != FIELDS:
            raise TraceError(f"{where}: expected {FIELDS} fields, found {len(fields)}")
        try:
            job = _job(fields, ppn)
        except TraceError as exc:
            raise TraceError(f"{where}: {exc}") from None
        if job is not None:
            jobs.append(job)
    node_count = max_nodes or (max_procs // ppn if max_procs else 0)
    nodes = tuple(Node(f"swf-node-{index:04d}", {"cpu": str(ppn)}) for index in range(node_count))
    return Trace(tuple(jobs), nodes)
