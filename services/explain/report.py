"""Explanation: an object's status and reason at the cut, what it waits for, and its timeline,
as one JSON-able dict (``--json`` prints it; ``render`` turns it into text)."""

from __future__ import annotations

from typing import Any

from domain.lifecycle.workload import ConditionType as C
from domain.objects.core import Pod
from domain.objects.kueue import LocalQueue, Workload
from domain.objects.meta import ObjectKey, key_of, timestamp
from domain.scheduler import snapshot as scheduler_snapshot
from domain.scheduler import volcano_cycle
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from services.explain import kueue, volcano
from services.explain.history import History, Target


def explain(history: History, target: Target, config: SchedulerConfig) -> dict[str, Any]:
    state = history.state
    obj = state.of_kind(target.kind).get(target.key)
    out: dict[str, Any] = {
        "cluster": history.cluster,
        "at": history.at,
        "clock": timestamp(state.clock) if state.clock else None,
        "object": {"kind": target.kind, "namespace": target.namespace or None, "name": target.name},
        "exists": obj is not None,
        "status": None,
        "reason": None,
        "details": None,
        "timeline": [entry.to_dict() for entry in history.timeline],
    }
    if obj is None:
        return out
    out["object"]["uid"] = obj.metadata.uid
    out["status"], out["reason"] = _status(state, obj)
    out["details"] = _details(state, config, target, obj)
    return out


def _status(state: ClusterState, obj: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The machine's phase with when it began, and the reason in force (a Reject, a waiting
    PodGroup's or Workload's condition, a pending pod's)."""
    machine = state.status_of(obj)
    status: dict[str, Any] = {}
    reason: dict[str, Any] | None = None
    if machine is not None:
        status = {
            "phase": machine.phase.value,
            "sinceSeq": machine.since_seq,
            "since": timestamp(machine.since) if machine.since else None,
        }
        if machine.illegal:
            status["lastRefused"] = machine.illegal
        if machine.rejected:
            reason = {"reason": "Rejected", "message": machine.rejected}
        if machine.reported is not None:
            phase, conditions = machine.reported
            status["reported"] = phase
            for kind, value, why, message in conditions:
                if reason is None and kind == "Unschedulable" and value == "True":
                    reason = {"reason": why, "message": message}
        if machine.queue_reported is not None:
            status["state"] = machine.queue_reported[0]
    if isinstance(obj, Pod):
        status["podPhase"] = obj.status.phase or None
        status["node"] = state.node_of(obj) or None
        group = state.of_kind("PodGroup").get(ObjectKey(f"{obj.metadata.namespace}/{obj.group_name()}"))
        if reason is None and group is not None and not status["node"]:
            _, reason = _status(state, group)  # a member waits for the reason its gang waits
    if isinstance(obj, Workload) and reason is None:
        waiting = state.workload_view(obj).condition(C.QUOTA_RESERVED)
        if waiting is not None and waiting.status != "True":
            reason = {"reason": waiting.reason, "message": waiting.message}
    return status, reason


def _details(state: ClusterState, config: SchedulerConfig, target: Target, obj: Any) -> dict[str, Any] | None:
    kind, key = target.kind, target.key
    if isinstance(obj, Workload):
        return kueue.workload(state, config, obj, key)
    if kind == "ClusterQueue":
        return kueue.cluster_queue(state, config, target.name)
    if isinstance(obj, LocalQueue):
        return kueue.local_queue(state, config, obj, key)
    snap = scheduler_snapshot.fresh(state, config)
    if kind == "Queue":
        return volcano.queue_share(snap, target.name)
    if kind == "Node":
        return volcano.node(state, snap, volcano_cycle.dry_run(state, config, frozenset()), target.name)
    if kind in ("PodGroup", "Job"):
        groups = [key] if kind == "PodGroup" else [key_of(g.metadata) for g in _groups_of(state, target, obj)]
        seen = volcano_cycle.dry_run(state, config, frozenset(groups))  # what the next cycle shows them
        gangs = {str(group): volcano.gang(state, snap, seen, group) for group in groups}
        return gangs[str(key)] if kind == "PodGroup" else {"podGroups": gangs}
    if isinstance(obj, Pod):
        task = volcano.tasks(snap).get(key)
        if task is None or task.status is not scheduler_snapshot.TaskStatus.PENDING:
            return {"group": obj.group_name() or None, "where": volcano.member(state, obj, task), "waitingFor": None}
        seen = volcano_cycle.dry_run(state, config, frozenset([task.job]))
        idle, held = volcano.seen_room(snap, seen, task.job)
        return {
            "group": obj.group_name() or None,
            "where": volcano.member(state, obj, task),
            "waitingFor": volcano.node_fit(snap, task, idle, held),
            "heldFrom": volcano.held_from(seen, task.job),
        }
    return None


def _groups_of(state: ClusterState, target: Target, job: Any) -> list[Any]:
    """The PodGroups a Volcano Job owns."""
    return [
        g
        for g in state.of_kind("PodGroup").values()
        if g.metadata.namespace == target.namespace
        and any(o.kind == "Job" and o.uid == job.metadata.uid for o in g.metadata.owner_references)
    ]
