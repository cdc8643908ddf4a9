"""A trace's arrivals as CONTRACT section-1 lines: the open-loop event stream of a trace.

The nodes are ADDED first (with the kubelet's default ``pods: 110`` unless they say otherwise:
traces do not record a pod limit, and the scheduler counts pods). Then every job is ADDED at
its submit time, as a Volcano PodGroup (``minMember`` = the gang minimum, its queue,
annotation ``volcano.sh/network-topology`` for a topology request) followed by its pending
Pods (annotation ``scheduling.k8s.io/group-name``), or as a Kueue Workload with one pod set
(``count`` = tasks, ``minCount`` when the gang minimum is smaller, ``topologyRequest.required``
for a topology request). A SCHEDULE marker closes each ``period`` of simulated time that had
arrivals (or, with ``skip_idle=False``, every period from the first arrival on), its time
``start`` + the end of that period. Nothing finishes here: completions, bindings and
evictions are the simulator's part.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.objects.meta import timestamp
from domain.objects.volcano import NETWORK_TOPOLOGY_ANNOTATION
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.runtimes import ESTIMATE
from services.traces.model import IB_CLUSTER, SCHEDULERS, Job, Node, Trace

START = datetime(2026, 1, 1, tzinfo=UTC)
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
WORKLOAD_API = "kueue.x-k8s.io/v1beta1"
POD_SET = "main"  # the one pod set a job's Workload has
KUBELET_MAX_PODS = "110"  # the kubelet's default, for nodes whose trace gives no pod limit
_UIDS = uuid.UUID("6f1c2f0e-5b1a-4c2e-9a57-7d3c0b9e1a40")


class _Renderer:
    def __init__(self, cluster: str, namespace: str, start: datetime) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.start = start
        self.lines: list[str] = []

    def meta(self, kind: str, name: str, submit: float, *, namespaced: bool = True) -> dict[str, Any]:
        namespace = self.namespace if namespaced else ""
        meta: dict[str, Any] = {
            "name": name,
            "uid": str(uuid.uuid5(_UIDS, f"{self.cluster}/{kind}/{namespace}/{name}")),
            "resourceVersion": str(len(self.lines) + 1),
            "creationTimestamp": timestamp(self.start + timedelta(seconds=submit)),
        }
        if namespaced:
            meta["namespace"] = namespace
        return meta

    def added(self, obj: dict[str, Any]) -> None:
        line = {"type": "ADDED", "cluster": self.cluster, "object": obj}
        self.lines.append(json.dumps(line, separators=(",", ":")))

    def marker(self, seconds: float) -> None:
        at = timestamp(self.start + timedelta(seconds=seconds))
        line = {"type": "SCHEDULE", "cluster": self.cluster, "time": at}
        self.lines.append(json.dumps(line, separators=(",", ":")))

    def node(self, node: Node) -> None:
        self.added(node_manifest(node, self.meta("Node", node.name, 0, namespaced=False)))

    def volcano(self, job: Job) -> None:
        self.added(pod_group_manifest(job, self.meta("PodGroup", job.id, job.submit)))
        for index in range(job.tasks):
            self.added(pod_manifest(job, self.meta("Pod", pod_name(job, index), job.submit)))

    def kueue(self, job: Job, ib_label: str) -> None:
        self.added(workload_manifest(job, self.meta("Workload", job.id, job.submit), ib_label))


def node_manifest(node: Node, meta: dict[str, Any]) -> dict[str, Any]:
    """A Ready v1 Node with the trace node's labels and allocatable (``pods: 110`` unless given)."""
    meta["labels"] = {"kubernetes.io/hostname": node.name, **node.labels}
    allocatable = {"pods": KUBELET_MAX_PODS, **node.allocatable}
    status = {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {}, "status": status}


def pod_group_manifest(job: Job, meta: dict[str, Any]) -> dict[str, Any]:
    """The job's Volcano PodGroup (no status yet) under ``meta``."""
    meta["labels"] = job.labels
    if job.topology:
        meta["annotations"] = {NETWORK_TOPOLOGY_ANNOTATION: job.topology}
    if job.estimate is not None:
        meta.setdefault("annotations", {})[ESTIMATE] = go_duration(job.estimate)
    spec = {"minMember": job.gang, "queue": job.queue}
    return {"apiVersion": PODGROUP_API, "kind": "PodGroup", "metadata": meta, "spec": spec, "status": {}}


def workload_manifest(job: Job, meta: dict[str, Any], ib_label: str) -> dict[str, Any]:
    """The job's Kueue Workload (no status yet) under ``meta``: one pod set of all its tasks."""
    meta["labels"] = job.labels
    pod_set: dict[str, Any] = {"name": POD_SET, "count": job.tasks, "template": {"spec": pod_spec(job)}}
    if job.gang < job.tasks:
        pod_set["minCount"] = job.gang
    if job.topology:
        pod_set["topologyRequest"] = {"required": ib_label if job.topology == IB_CLUSTER else job.topology}
    spec = {"queueName": job.queue, "priority": job.priority, "podSets": [pod_set]}
    return {"apiVersion": WORKLOAD_API, "kind": "Workload", "metadata": meta, "spec": spec}


def go_duration(seconds: float) -> str:
    """``seconds`` as a Go duration: ``3600`` -> ``"3600s"``, ``2.5`` -> ``"2.5s"``."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"


def pod_name(job: Job, index: int) -> str:
    return f"{job.id}-{index}"


def pod_manifest(job: Job, meta: dict[str, Any]) -> dict[str, Any]:
    """One pending task of the job's gang under ``meta``: Volcano's, in the job's PodGroup."""
    meta["labels"] = job.labels
    meta["annotations"] = {GROUP_ANNOTATION: job.id}
    spec = {"schedulerName": "volcano", "priority": job.priority, **pod_spec(job)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def pod_spec(job: Job) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": job.requests}}]}
    if job.node_affinity:
        expressions = [
            {"key": label, "operator": "In", "values": list(values)} for label, values in job.node_affinity.items()
        ]
        required = {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return spec


def to_events(
    trace: Trace,
    nodes: Sequence[Node] | None = None,
    *,
    cluster: str = "default",
    scheduler: str = "volcano",
    period: float = 1.0,
    skip_idle: bool = True,
    namespace: str = "default",
    start: datetime = START,
    ib_label: str = SchedulerConfig().ib_cluster_label,
) -> list[str]:
    """Lines for ``nodes`` (default: the trace's own) and the trace's job arrivals.

    ``scheduler`` renders jobs that do not name their own; markers close each ``period``
    seconds of simulated time that had arrivals, or every period from the first arrival on
    with ``skip_idle=False``.
    """
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, not {scheduler!r}")
    if not period > 0:
        raise ValueError(f"period must be > 0, not {period!r}")
    out = _Renderer(cluster, namespace, start)
    for node in trace.nodes if nodes is None else nodes:
        out.node(node)
    arrived: int | None = None  # the last period with arrivals; marker t closes period t - 1
    for job in trace.jobs:
        current = math.floor(job.submit / period)
        if arrived is not None and arrived < current:
            last = current if not skip_idle else arrived + 1
            for tick in range(arrived + 1, last + 1):
                out.marker(tick * period)
        arrived = current
        if (job.scheduler or scheduler) == "kueue":
            out.kueue(job, ib_label)
        else:
            out.volcano(job)
    if arrived is not None:
        out.marker((arrived + 1) * period)
    return out.lines
