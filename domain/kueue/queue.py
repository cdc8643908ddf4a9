"""Queues: which ClusterQueue a workload waits in (through its LocalQueue), whether that queue
can admit it (exists, active, namespace selector), and each queue's waiting workloads in
Kueue's order (priority, then creation, then name)."""

from __future__ import annotations

from datetime import datetime

from domain.kueue.snapshot import KueueSnapshot, WorkloadInfo
from domain.kueue.workload_status import Outbox, waiting
from domain.objects.kueue import ClusterQueue, LabelSelector
from domain.objects.meta import ObjectKey

INADMISSIBLE = "Inadmissible"
NAME_LABEL = "kubernetes.io/metadata.name"


def selects(selector: LabelSelector | None, labels: dict[str, str]) -> bool:
    """A label selector; null selects nothing and ``{}`` everything, as in Kueue."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for req in selector.match_expressions:
        present, value = req.key in labels, labels.get(req.key)
        ok = {
            "In": present and value in req.values,
            "NotIn": not present or value not in req.values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(req.operator, False)
        if not ok:
            return False
    return True


def inactive_reason(snap: KueueSnapshot, cq: ClusterQueue) -> str:
    """Why a ClusterQueue admits nothing now ('' when it is active)."""
    if cq.spec.stop_policy in ("Hold", "HoldAndDrain"):
        return f"ClusterQueue {cq.metadata.name} is stopped"
    missing = sorted({f.name for g in cq.spec.resource_groups for f in g.flavors} - set(snap.flavors))
    if missing:
        return f"ClusterQueue {cq.metadata.name} is inactive: flavor {missing[0]} not found"
    return ""


def resolve(snap: KueueSnapshot, info: WorkloadInfo) -> ClusterQueue | str:
    """The ClusterQueue that may admit ``info``, or why none may."""
    namespace = info.obj.metadata.namespace
    lq = snap.local_queues.get(ObjectKey(f"{namespace}/{info.obj.spec.queue_name}"))
    if lq is None:
        return f"LocalQueue {info.obj.spec.queue_name} doesn't exist"
    cq = snap.queues.get(lq.spec.cluster_queue)
    if cq is None:
        return f"ClusterQueue {lq.spec.cluster_queue} doesn't exist"
    reason = inactive_reason(snap, cq)
    if reason:
        return reason
    labels = {NAME_LABEL: namespace, **snap.namespaces.get(namespace, {})}
    if not selects(cq.spec.namespace_selector, labels):
        return "Workload namespace doesn't match ClusterQueue selector"
    return cq


def is_waiting(snap: KueueSnapshot, info: WorkloadInfo) -> bool:
    """In a queue: active, without quota, and not backing off (the snapshot holds no finished workload)."""
    view = info.view
    if not info.obj.spec.active or view.is_true("QuotaReserved"):
        return False
    return view.requeue_at is None or view.requeue_at <= snap.clock


def _order(info: WorkloadInfo) -> tuple[int, datetime, str]:
    return info.order


def waiting_by_queue(snap: KueueSnapshot, box: Outbox) -> dict[str, list[WorkloadInfo]]:
    """Each ClusterQueue's waiting workloads in queue order; those with no usable queue are told why."""
    queues: dict[str, list[WorkloadInfo]] = {}
    resolved: dict[tuple[str, str], ClusterQueue | str] = {}  # (namespace, LocalQueue) -> resolve()
    for info in snap.workloads:
        if info.key in box.touched or not is_waiting(snap, info):
            continue
        where = (info.obj.metadata.namespace, info.obj.spec.queue_name)
        found = resolved.get(where)
        if found is None:
            found = resolved[where] = resolve(snap, info)
        if isinstance(found, str):
            box.status(info, waiting(info.view, INADMISSIBLE, found), INADMISSIBLE)
            continue
        queues.setdefault(found.metadata.name, []).append(info)
    for infos in queues.values():
        infos.sort(key=_order)
    return queues
