"""Eviction and requeue: the workload lifecycle steps the cycle takes before admission.

Quota is released in two phases, as in Kueue: an eviction sets Evicted=True and keeps the
quota; once none of the workload's pods runs, one write clears the admission, sets
QuotaReserved=False and Requeued. Preempted, NodeFailures and ClusterQueueStopped requeue at
once; PodsReadyTimeout backs off exponentially on the scheduler clock (``requeueState``);
Deactivated waits for reactivation. Evictions here: ``spec.active: false`` (Deactivated), a
HoldAndDrain ClusterQueue (ClusterQueueStopped), and ``waitForPodsReady`` (PodsReadyTimeout).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.reasons import KueueReason as R
from domain.kueue.settings import KueueSettings
from domain.kueue.tas import WORKLOAD_ANNOTATION
from domain.kueue.workload_status import Outbox, Update, released, with_conditions
from domain.kueue.workloads import WorkloadInfo
from domain.lifecycle.workload import ConditionType as C
from domain.lifecycle.workload import WorkloadPhase, is_active
from domain.objects.meta import timestamp
from domain.state import ClusterState

_BACKOFF = frozenset({R.PODS_READY_TIMEOUT})


def run(snap: KueueSnapshot, box: Outbox, settings: KueueSettings) -> None:
    # 1. Release the quota of evicted workloads whose pods are gone (phase two).
    for info in snap.holders():
        if info.view.is_true(C.EVICTED) and not _has_running_pods(snap, info):
            _release(snap, box, info, settings)
    # 2. Deactivate inactive workloads; requeue reactivated ones.
    for info in snap.flagged():
        _activation(box, info)
    # 3. Drain HoldAndDrain ClusterQueues.
    for info in snap.holders():
        cq = snap.queues[info.admitted_to]
        if cq.spec.stop_policy == "HoldAndDrain" and not info.view.is_true(C.EVICTED):
            box.evict(info, R.CLUSTER_QUEUE_STOPPED, f"The ClusterQueue {cq.metadata.name} is stopped")
    # 4. Evict admitted workloads whose pods were not ready in time.
    timeout = settings.pods_ready_timeout
    if timeout is not None:
        for info in snap.holders():
            deadline = pods_ready_deadline(snap.state, info, timeout)
            if deadline is not None and snap.clock >= deadline:
                box.evict(info, R.PODS_READY_TIMEOUT, f"Exceeded the PodsReady timeout {info.key}")


def pods_ready_deadline(state: ClusterState, info: WorkloadInfo, timeout: timedelta) -> datetime | None:
    """When an admitted workload whose pods are not ready is evicted (PodsReadyTimeout): ``timeout``
    after its admission on the scheduler clock; None when it is not waiting for its pods."""
    view = info.view
    if view.is_true(C.EVICTED) or view.is_true(C.PODS_READY) or not view.is_true(C.ADMITTED):
        return None
    status = state.status_of(info.obj)
    if status is None or status.phase is not WorkloadPhase.ADMITTED or status.since is None:
        return None
    return status.since + timeout


def _has_running_pods(snap: KueueSnapshot, info: WorkloadInfo) -> bool:
    meta = info.obj.metadata
    owners = {o.uid for o in meta.owner_references if o.uid}
    for pod in snap.state.pods().values():
        if pod.metadata.namespace != meta.namespace or pod.is_finished():
            continue
        mine = pod.metadata.annotations.get(WORKLOAD_ANNOTATION) == meta.name or any(
            o.uid in owners for o in pod.metadata.owner_references
        )
        if mine:
            return True
    return False


def _release(snap: KueueSnapshot, box: Outbox, info: WorkloadInfo, settings: KueueSettings) -> None:
    view = info.view
    evicted = view.condition(C.EVICTED)
    reason = evicted.reason if evicted else ""
    count, at = view.requeue_count, view.requeue_at
    requeued: Update
    if reason == R.DEACTIVATED:
        requeued = ("False", R.DEACTIVATED, "The workload is deactivated")
    elif reason in _BACKOFF:
        base, most = settings.backoff_base_seconds, settings.backoff_max_seconds
        count += 1
        at = snap.clock + timedelta(seconds=min(base * 2 ** (count - 1), most))
        requeued = ("False", reason, f"Requeued after backoff, at {timestamp(at)}")
    else:
        requeued = ("True", reason, f"The workload was requeued after eviction: {reason}")
    snap.charge(info, -1)
    if not box.status(info, released(view, requeued, count, at), R.QUOTA_RELEASED):
        snap.charge(info, +1)


def _activation(box: Outbox, info: WorkloadInfo) -> None:
    view = info.view
    evicted = view.condition(C.EVICTED)
    active = is_active(info.obj.spec.active, view)
    if not active and not view.is_true(C.EVICTED):
        message = "The workload is deactivated"
        if info.holds_quota():
            box.evict(info, R.DEACTIVATED, message)
        else:
            box.status(info, with_conditions(view, Evicted=("True", R.DEACTIVATED, message)), R.DEACTIVATED)
    elif active and evicted is not None and evicted[1:3] == ("True", R.DEACTIVATED) and not info.holds_quota():
        reactivated = with_conditions(
            view,
            Evicted=("False", "Reactivated", "The workload was reactivated"),
            Requeued=("True", "Reactivated", "The workload was reactivated"),
        )
        box.status(info, dataclasses.replace(reactivated, requeue_count=0, requeue_at=None), "Reactivated")
