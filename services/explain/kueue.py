"""What a Kueue object waits for: a Workload's conditions, its pending position, and its
ClusterQueue's quota (nominal, used, and what is left through the cohort); a ClusterQueue's or
LocalQueue's pending workloads in admission order."""

from __future__ import annotations

from typing import Any

from domain import quantity
from domain.kueue import cycle_view
from domain.kueue.cohort_tree import QuotaNode
from domain.lifecycle.workload import ConditionType as C
from domain.objects.kueue import LocalQueue, Workload
from domain.objects.meta import ObjectKey
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from services.explain.position import PendingPosition, pending_positions


def quota(node: QuotaNode | None) -> list[dict[str, Any]]:
    """Per (flavor, resource): nominal quota, usage, and what more may be used through the tree."""
    if node is None:
        return []
    keys = sorted(set(node.nominal) | set(node.usage))
    return [
        {
            "flavor": flavor,
            "resource": resource,
            "nominal": quantity.format_milli(resource, node.nominal.get((flavor, resource), 0)),
            "used": quantity.format_milli(resource, node.usage.get((flavor, resource), 0)),
            "available": quantity.format_milli(resource, max(node.available((flavor, resource)), 0)),
        }
        for flavor, resource in keys
    ]


def _pending(positions: dict[ObjectKey, PendingPosition], queue: str, *, local: bool) -> list[dict[str, Any]]:
    rows = [(p.in_local_queue if local else p.in_cluster_queue, key) for key, p in positions.items()]
    chosen = [(i, k) for i, k in rows if (positions[k].local_queue if local else positions[k].cluster_queue) == queue]
    return [{"position": i, "workload": k} for i, k in sorted(chosen)]


def workload(state: ClusterState, config: SchedulerConfig, wl: Workload, key: ObjectKey) -> dict[str, Any]:
    view = state.workload_view(wl)
    waiting = view.condition(C.QUOTA_RESERVED)
    evicted = view.condition(C.EVICTED)
    admission = view.admission or {}
    snap = cycle_view.fresh(state)
    position = pending_positions(state, config.kueue).get(key)
    queue_name = admission.get("clusterQueue") or (position.cluster_queue if position else "")
    if not queue_name:
        lq = snap.local_queues.get(ObjectKey(f"{wl.metadata.namespace}/{wl.spec.queue_name}"))
        queue_name = lq.spec.cluster_queue if lq is not None else ""
    return {
        "localQueue": f"{wl.metadata.namespace}/{wl.spec.queue_name}",
        "clusterQueue": queue_name or None,
        "conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in view.conditions],
        "admission": view.admission,
        "waiting": None
        if waiting is None or waiting.status == "True"
        else {"reason": waiting.reason, "message": waiting.message},
        "evicted": None
        if evicted is None or evicted.status != "True"
        else {"reason": evicted.reason, "message": evicted.message},
        "position": None if position is None else position.to_dict(),
        "requeueAt": view.requeue_at.isoformat() if view.requeue_at else None,
        "unhealthyNodes": list(view.unhealthy_nodes),
        "quota": quota(snap.tree.queues.get(queue_name)),
    }


def cluster_queue(state: ClusterState, config: SchedulerConfig, name: str) -> dict[str, Any]:
    snap = cycle_view.fresh(state)
    node = snap.tree.queues.get(name)
    holders = sorted(i.key for i in snap.holders() if i.admitted_to == name)
    return {
        "cohort": node.parent.name if node is not None and node.parent is not None else None,
        "quota": quota(node),
        "admitted": holders,
        "pending": _pending(pending_positions(state, config.kueue), name, local=False),
    }


def local_queue(state: ClusterState, config: SchedulerConfig, lq: LocalQueue, key: ObjectKey) -> dict[str, Any]:
    return {
        "clusterQueue": lq.spec.cluster_queue,
        "pending": _pending(pending_positions(state, config.kueue), key, local=True),
    }
