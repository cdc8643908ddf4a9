"""Importer for the Alibaba disaggregated DLRM inference trace (cluster-trace-gpu-v2025),
Yang et al., NSDI'25 (Prism): github.com/alibaba/clusterdata,
``cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv``.

Every instance becomes a single-task job. Requests: ``cpu_request`` cores, ``gpu_request``
as ``nvidia.com/gpu``, ``memory_request`` and ``disk_request`` (GiB) as ``memory`` and
``ephemeral-storage``, and ``rdma_request`` (percent of a node's RDMA NIC bandwidth) as the
extended resource ``alibaba.com/rdma`` (a node offers 100 per NIC). Limits are not used.
Empty or NaN times mean outside the trace window: an instance without ``creation_time``
already existed when the trace began and is submitted at 0 (its scheduled time is 0 too);
one without ``deletion_time`` still ran when the trace ended, and one created in the window
but never scheduled did not run: both have duration None.
``role`` (CN = CPU node, HN = GPU node), ``app_name`` and ``max_instance_per_node`` (-1 =
unlimited; a spreading rule we do not enforce) become labels, and the role also a node
affinity (the instance runs on its kind of node); the instance id has ``_`` replaced by ``-``
to be a valid Kubernetes name.

The trace has no node list. ``sized_nodes`` gives one: nodes of each role (``NODE_SHAPES``,
large enough for the largest instance of the role: an HN node 8 GPUs, 128 cpu, 1 TiB, 4 RDMA
NICs; a CN node 192 cpu, 1 TiB, 2 NICs) just enough of them for the role's peak demand,
counting each instance from its creation to its deletion (to the end of the simulation when
the trace has no deletion).
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path

from domain.quantity import ResourceList, parse_milli
from services.traces.model import Job, Node, Trace, decimal_quantity
from services.traces.tabular import Row, csv_rows

RDMA = "alibaba.com/rdma"
ROLE_LABEL = "alibaba.com/role"
APP_LABEL = "alibaba.com/app"
MAX_PER_NODE_LABEL = "alibaba.com/max-instance-per-node"

COLUMNS = (
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "gpu_request",
    "rdma_request",
    "memory_request",
    "disk_request",
    "max_instance_per_node",
    "creation_time",
    "scheduled_time",
    "deletion_time",
)
_RESOURCES = (
    ("cpu", "cpu_request", ""),
    ("memory", "memory_request", "Gi"),
    ("nvidia.com/gpu", "gpu_request", ""),
    (RDMA, "rdma_request", ""),
    ("ephemeral-storage", "disk_request", "Gi"),
)


def _job(row: Row) -> Job:
    requests = {}
    for resource, column, suffix in _RESOURCES:
        amount = row.convert(column, lambda text, unit=suffix: decimal_quantity(text, unit))
        if amount != f"0{suffix}":
            requests[resource] = amount
    created = row.optional("creation_time", float)
    scheduled = row.optional("scheduled_time", float)
    deleted = row.optional("deletion_time", float)
    start = 0.0 if created is None else scheduled  # None: created in the window, never scheduled
    with row.context():
        return Job(
            id=row.text("instance_sn").replace("_", "-"),
            submit=0.0 if created is None else created,
            duration=None if deleted is None or start is None else deleted - start,
            requests=requests,
            node_affinity={ROLE_LABEL: (row.text("role"),)},
            labels={
                ROLE_LABEL: row.text("role"),
                APP_LABEL: row.text("app_name"),
                MAX_PER_NODE_LABEL: row.text("max_instance_per_node"),
            },
        )


def read_dlrm(path: Path) -> Trace:
    """The instances of the DLRM trace as jobs (no nodes)."""
    return Trace(tuple(_job(row) for row in csv_rows(path, COLUMNS)))


NODE_SHAPES = {
    "HN": {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8", RDMA: "400", "ephemeral-storage": "8Ti"},
    "CN": {"cpu": "192", "memory": "1Ti", RDMA: "200", "ephemeral-storage": "4Ti"},
}


def _peak(jobs: list[Job]) -> ResourceList:
    """The most of each resource the jobs hold at once, each from submit to submit + duration."""
    running: list[tuple[float, int]] = []  # (end, job index)
    held: ResourceList = {}
    peak: ResourceList = {}
    totals = [job.total() for job in jobs]
    for index, job in enumerate(jobs):  # jobs are sorted by submit
        while running and running[0][0] <= job.submit:
            for name, amount in totals[heapq.heappop(running)[1]].items():
                held[name] -= amount
        for name, amount in totals[index].items():
            held[name] = held.get(name, 0) + amount
            peak[name] = max(peak.get(name, 0), held[name])
        heapq.heappush(running, (math.inf if job.duration is None else job.submit + job.duration, index))
    return peak


def sized_nodes(trace: Trace) -> tuple[Node, ...]:
    """Nodes of each role's shape, as many as its peak demand needs on the tightest resource."""
    nodes: list[Node] = []
    for role, shape in NODE_SHAPES.items():
        peak = _peak([job for job in trace.jobs if job.labels.get(ROLE_LABEL) == role])
        size = {name: parse_milli(amount) for name, amount in shape.items()}
        count = max((math.ceil(amount / size[name]) for name, amount in peak.items() if name in size), default=0)
        labels = {ROLE_LABEL: role}
        nodes.extend(Node(f"dlrm-{role.lower()}-{n:04d}", dict(shape), dict(labels)) for n in range(count))
    return tuple(nodes)
