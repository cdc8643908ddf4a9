"""Queues: which ClusterQueue a workload waits in (through its LocalQueue), whether that queue
can admit it (exists, active, namespace selector), and each queue's waiting workloads in
Kueue's order (priority, then creation, then name; with Admission Fair Sharing, the
LocalQueue's usage first)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime

from domain.kueue import admission_fair_sharing
from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.reasons import KueueReason as R
from domain.kueue.settings import AdmissionFairSharing
from domain.kueue.workload_status import Outbox, waiting
from domain.kueue.workloads import LocalQueueRef, WorkloadInfo
from domain.objects.kueue import ClusterQueue, LabelSelector
from domain.objects.meta import ObjectKey

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


def resolve(snap: KueueSnapshot, local_queue: LocalQueueRef) -> ClusterQueue | str:
    """The ClusterQueue that may admit the workloads of ``local_queue``, or why none may."""
    namespace, name = local_queue
    lq = snap.local_queues.get(ObjectKey(f"{namespace}/{name}"))
    if lq is None:
        return f"LocalQueue {name} doesn't exist"
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


def backing_off(snap: KueueSnapshot, info: WorkloadInfo) -> bool:
    """Requeued with a backoff that has not ended: not in its queue yet."""
    return info.view.requeue_at is not None and info.view.requeue_at > snap.clock


def waiting_by_queue(
    snap: KueueSnapshot, box: Outbox, afs: AdmissionFairSharing | None = None
) -> dict[str, Iterator[WorkloadInfo]]:
    """Each ClusterQueue's workloads without quota, in queue order, to be walked before any is
    admitted (some may be backing off); those whose LocalQueue cannot admit them are told why,
    in key order. With Admission Fair Sharing on a ClusterQueue, its LocalQueues' workloads are
    merged by their LocalQueue's usage first."""
    by_queue: dict[str, list[Iterator[WorkloadInfo]]] = {}
    refused: list[tuple[WorkloadInfo, str]] = []
    for local_queue, infos in snap.queued():
        found = resolve(snap, local_queue)
        if isinstance(found, str):
            refused.extend((info, found) for info in infos)
        else:
            by_queue.setdefault(found.metadata.name, []).append(infos)
    for info, why in sorted(refused, key=lambda item: item[0].key):
        if info.key not in box.touched and not backing_off(snap, info):
            box.status(info, waiting(info.view, R.INADMISSIBLE, why), R.INADMISSIBLE)
    return {name: its[0] if len(its) == 1 else _merge(snap, name, its, afs) for name, its in by_queue.items()}


def _merge(
    snap: KueueSnapshot, name: str, its: list[Iterator[WorkloadInfo]], afs: AdmissionFairSharing | None
) -> Iterator[WorkloadInfo]:
    if afs is None or not admission_fair_sharing.applies(snap.queues[name]):
        return heapq.merge(*its, key=_order)
    usage: dict[LocalQueueRef, float] = {}

    def by_usage(info: WorkloadInfo) -> tuple[float, int, datetime, str]:
        ref = info.local_queue
        if ref not in usage:
            usage[ref] = admission_fair_sharing.weighted_usage(snap, afs, ref)
        return (usage[ref], *info.order)

    return heapq.merge(*its, key=by_usage)


def _order(info: WorkloadInfo) -> tuple[int, datetime, str]:
    return info.order
