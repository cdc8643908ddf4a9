"""Workload status: the conditions Kueue writes (QuotaReserved, Admitted, Evicted, Preempted,
Requeued), the status each step of the cycle gives a workload, and the ``WorkloadStatus`` and
``Evict`` decisions, emitted only when the status changes and at most once per workload and
cycle (one decision id per target and seq)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.decisions import (
    AdmissionCheckState,
    Decision,
    Evict,
    ObjectRef,
    RequeueState,
    UnhealthyNode,
    WorkloadStatus,
    conditions_of,
)
from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.reasons import KueueReason as R
from domain.kueue.workloads import WorkloadInfo
from domain.lifecycle.workload import ConditionType as C
from domain.lifecycle.workload import WorkloadView
from domain.objects.kueue import Workload
from domain.objects.meta import ObjectKey, timestamp
from domain.state import ClusterState

Update = tuple[str, str, str]
"""(status, reason, message) of one condition."""


def with_conditions(view: WorkloadView, **updates: Update | None) -> WorkloadView:
    """``view`` with the named conditions set (or removed, for None); others keep their order."""
    conditions: list[tuple[str, str, str, str]] = []
    for condition in view.conditions:
        if condition[0] in updates:
            update = updates.pop(condition[0])
            if update is not None:
                conditions.append((condition[0], *update))
        else:
            conditions.append(condition)
    conditions.extend((type_, *update) for type_, update in updates.items() if update is not None)
    return dataclasses.replace(view, conditions=tuple(conditions))


def _previously(view: WorkloadView, condition: str) -> Update | None:
    """Kueue resets an active Evicted/Preempted to False when quota is reserved again."""
    current = view.condition(condition)
    if current is None or current.status != "True":
        return None if current is None else (current.status, current.reason, current.message)
    return ("False", R.QUOTA_RESERVED, f"Previously: {current.message}")


def admitted(
    view: WorkloadView, cluster_queue: str, admission: Mapping[str, Any], requeued: bool, checks: list[str]
) -> WorkloadView:
    """Quota reserved, and admitted in the same write unless admission ``checks`` must pass
    first (they start Pending); ``requeued`` when a backoff just ended."""
    updates: dict[str, Update | None] = {
        C.QUOTA_RESERVED: ("True", R.QUOTA_RESERVED, f"Quota reserved in ClusterQueue {cluster_queue}"),
        C.EVICTED: _previously(view, C.EVICTED),
        C.PREEMPTED: _previously(view, C.PREEMPTED),
    }
    if not checks:
        updates[C.ADMITTED] = ("True", R.ADMITTED, f"The workload is admitted in ClusterQueue {cluster_queue}")
    if requeued:
        updates[C.REQUEUED] = ("True", R.BACKOFF_FINISHED, "The workload backoff was finished")
    updated = with_conditions(view, **updates)
    pending = tuple((name, "Pending") for name in checks)
    return dataclasses.replace(updated, admission=dict(admission), unhealthy_nodes=(), admission_checks=pending)


def waiting(view: WorkloadView, reason: str, message: str) -> WorkloadView:
    """Not admitted this cycle: QuotaReserved=False with why (``view`` itself if it says so already)."""
    if view.condition(C.QUOTA_RESERVED) == (C.QUOTA_RESERVED, "False", reason, message):
        return view
    return with_conditions(view, QuotaReserved=("False", reason, message))


def evicted(view: WorkloadView, reason: str, message: str, **conditions: Update | None) -> WorkloadView:
    """Phase one of a release: Evicted=True, and the other ``conditions`` given (those that are
    not None) that tell its cause; the quota stays reserved until the pods are gone."""
    causes = {name: update for name, update in conditions.items() if update is not None}
    updated = with_conditions(view, Evicted=("True", reason, message), **causes)
    return dataclasses.replace(updated, unhealthy_nodes=())


def released(view: WorkloadView, requeued: Update, count: int, at: datetime | None) -> WorkloadView:
    """Phase two: the pods are gone; the quota and the admission go, in one write."""
    updated = with_conditions(
        view,
        QuotaReserved=("False", R.PENDING, _eviction_message(view)),
        Admitted=("False", "NoReservation", "The workload has no reservation"),
        Requeued=requeued,
    )
    checks = tuple((name, "Pending") for name, _ in view.admission_checks)  # checks start over
    return dataclasses.replace(
        updated, admission=None, unhealthy_nodes=(), admission_checks=checks, requeue_count=count, requeue_at=at
    )


def _eviction_message(view: WorkloadView) -> str:
    condition = view.condition(C.EVICTED)
    return condition.message if condition is not None else "The workload was evicted"


def status_decision(state: ClusterState, seq: int, obj: Workload, view: WorkloadView, reason: str) -> WorkloadStatus:
    """The WorkloadStatus decision that writes ``view`` (what the workload's status says)."""
    requeue = None
    if view.requeue_count or view.requeue_at:
        requeue = RequeueState(view.requeue_count, timestamp(view.requeue_at) if view.requeue_at else None)
    return WorkloadStatus.make(
        state.name, seq, ObjectRef.of(obj), reason,
        conditions=conditions_of(view.conditions),
        admission=view.admission,
        admission_checks=[AdmissionCheckState(n, s) for n, s in view.admission_checks] or None,
        unhealthy_nodes=[UnhealthyNode(n) for n in view.unhealthy_nodes] or None,
        requeue_state=requeue,
    )  # fmt: skip


@dataclass
class Outbox:
    """The decisions of one Kueue cycle, and the workloads that already got a status."""

    snap: KueueSnapshot
    seq: int
    out: list[Decision] = field(default_factory=list)
    touched: set[ObjectKey] = field(default_factory=set)

    def status(self, info: WorkloadInfo, view: WorkloadView, reason: str) -> bool:
        """Write ``view`` if it differs from the workload's status; True if written."""
        if view is info.view or view == info.view or info.key in self.touched:
            return False
        decision = status_decision(self.snap.state, self.seq, info.obj, view, reason)
        if not self.snap.state.record(decision):
            return False
        self.touched.add(info.key)
        info.view = view  # the only write of a view: ``status_changed`` refiles it (and so moves quiet runs)
        self.snap.status_changed(info)
        self.out.append(decision)
        return True

    def evict(
        self,
        info: WorkloadInfo,
        reason: str,
        message: str,
        preempted: Update | None = None,
        cause: tuple[str, Update] | None = None,
        *,
        preemptor: str | None = None,
    ) -> bool:
        """Evict a workload that holds quota: its Evicted status (with ``Preempted``, or the
        condition named by ``cause``, in the same write), then the ``Evict`` decision."""
        conditions = {C.PREEMPTED: preempted, **dict([cause] if cause else [])}
        if not self.status(info, evicted(info.view, reason, message, **conditions), reason):
            return False
        evict = Evict.make(self.snap.state.name, self.seq, ObjectRef.of(info.obj), reason, message=message,
                           preemptor=preemptor)  # fmt: skip
        if self.snap.state.record(evict):  # a Workload's eviction is in the status just written
            self.out.append(evict)
        return True
