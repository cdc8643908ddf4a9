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
unlimited; a spreading rule we do not enforce) become labels; the instance id has ``_``
replaced by ``-`` to be a valid Kubernetes name. The trace has no node list.
"""

from __future__ import annotations

from pathlib import Path

from services.traces.model import Job, Trace, decimal_quantity
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
            labels={
                ROLE_LABEL: row.text("role"),
                APP_LABEL: row.text("app_name"),
                MAX_PER_NODE_LABEL: row.text("max_instance_per_node"),
            },
        )


def read_dlrm(path: Path) -> Trace:
    """The instances of the DLRM trace as jobs (no nodes)."""
    return Trace(tuple(_job(row) for row in csv_rows(path, COLUMNS)))
