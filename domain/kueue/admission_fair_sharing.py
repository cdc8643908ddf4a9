"""Admission Fair Sharing (KEP-4136, ``kueue: {admissionFairSharing: {...}}``): inside a
ClusterQueue whose ``admissionScope.admissionMode`` is UsageBasedAdmissionFairSharing, waiting
workloads are ordered by their LocalQueue's decayed historical usage over its
``fairSharing.weight`` (lower first), and only then by priority, creation and name.

Each LocalQueue's usage (``LocalQueueUsage``) is kept in the cluster state, as Kueue keeps it
in the LocalQueue's ``status.fairSharing.admissionFairSharingStatus``, and moves only on the
scheduler clock:

* sample: once ``usageSamplingInterval`` has passed since the last sample, the usage becomes
  old x (1 - a) + admitted x a + the entry penalties since, where a = 1 - 0.5^(elapsed /
  ``usageHalfLifeTime``) and admitted is what its Admitted workloads hold now (summed over
  flavors); a half-life of 0 keeps no usage at all;
* entry penalty: each admission adds a(sampling interval) x the quota it reserves at once, so a
  LocalQueue cannot take admission after admission on one stale sample;
* a LocalQueue seen first starts from the usage its own status reports, or from nothing.

Usage compares as the sum over resources of ``resourceWeights`` (1 for a resource not named)
x usage, divided by the LocalQueue's weight (default 1; weight 0 always goes last).
"""

from __future__ import annotations

import math
from datetime import datetime

from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.settings import AdmissionFairSharing
from domain.kueue.workloads import LocalQueueRef, WorkloadInfo
from domain.lifecycle.status import LocalQueueUsage
from domain.lifecycle.workload import ConditionType as C
from domain.objects.kueue import ClusterQueue, LocalQueue
from domain.objects.meta import ObjectKey
from domain.recorded import LocalQueueSample

USAGE_BASED = "UsageBasedAdmissionFairSharing"
_DIGITS = 3  # usage is kept to a thousandth of a milli-unit, so a long half-life still moves it


def applies(cq: ClusterQueue) -> bool:
    scope = cq.spec.admission_scope
    return scope is not None and scope.admission_mode == USAGE_BASED


def sample(snap: KueueSnapshot, afs: AdmissionFairSharing) -> None:
    """Start or sample the usage of the LocalQueues of ClusterQueues with Admission Fair Sharing."""
    now, state = snap.clock, snap.state
    admitted: dict[LocalQueueRef, dict[str, int]] = {}
    for info in snap.holders():
        if info.view.is_true(C.ADMITTED):
            held = admitted.setdefault(info.local_queue, {})
            for (_, resource), amount in info.usage().items():
                held[resource] = held.get(resource, 0) + amount
    for key, lq in sorted(snap.local_queues.items()):
        cq = snap.queues.get(lq.spec.cluster_queue)
        if cq is None or not applies(cq):
            continue
        usage = state.local_queue_usage.get(key)
        if usage is None or usage.uid != lq.metadata.uid:
            state.record(LocalQueueSample(key, _observed(lq, now)))
            continue
        elapsed = (now - usage.last_update).total_seconds()
        if elapsed < afs.sampling:
            continue
        alpha = afs.alpha(elapsed)
        current = admitted.get((lq.metadata.namespace, lq.metadata.name), {})
        consumed: dict[str, float] = {}
        if afs.half_life > 0:
            for resource in sorted({*usage.consumed, *current, *usage.penalty}):
                old = usage.consumed.get(resource, 0.0) * (1 - alpha)
                value = old + current.get(resource, 0) * alpha + usage.penalty.get(resource, 0.0)
                consumed[resource] = round(value, _DIGITS)
        state.record(LocalQueueSample(key, LocalQueueUsage(lq.metadata.uid, now, consumed, {})))


def _observed(lq: LocalQueue, now: datetime) -> LocalQueueUsage:
    fair = lq.status.fair_sharing
    status = fair.admission_fair_sharing_status if fair is not None else None
    if status is None:
        return LocalQueueUsage(lq.metadata.uid, now, {}, {})
    consumed = {r: float(q) for r, q in sorted(status.consumed_resources.items())}
    return LocalQueueUsage(lq.metadata.uid, status.last_update or now, consumed, {})


def weighted_usage(snap: KueueSnapshot, afs: AdmissionFairSharing, ref: LocalQueueRef) -> float:
    """The LocalQueue's usage as admission compares it: resource-weighted, over its weight."""
    key = ObjectKey(f"{ref[0]}/{ref[1]}")
    usage = snap.state.local_queue_usage.get(key)
    lq = snap.local_queues.get(key)
    fair = lq.spec.fair_sharing if lq is not None else None
    weight = 1.0 if fair is None or fair.weight is None else int(fair.weight) / 1000
    if weight == 0:
        return math.inf
    if usage is None:
        return 0.0
    weights = afs.resource_weights
    total = sum(
        weights.get(r, 1.0) * (usage.consumed.get(r, 0.0) + usage.penalty.get(r, 0.0))
        for r in sorted({*usage.consumed, *usage.penalty})
    )
    return total / weight


def penalize(snap: KueueSnapshot, afs: AdmissionFairSharing, info: WorkloadInfo) -> None:
    """Add the entry penalty of ``info``, just admitted, to its LocalQueue's usage."""
    key = ObjectKey(f"{info.local_queue[0]}/{info.local_queue[1]}")
    usage = snap.state.local_queue_usage[key]  # sampled (started) before admission
    alpha = afs.alpha(afs.sampling)
    penalty = dict(usage.penalty)
    for (_, resource), amount in sorted(info.usage().items()):
        penalty[resource] = round(penalty.get(resource, 0.0) + amount * alpha, _DIGITS)
    snap.state.record(LocalQueueSample(key, LocalQueueUsage(usage.uid, usage.last_update, usage.consumed, penalty)))
