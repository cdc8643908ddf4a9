"""Kueue Workload lifecycle: the phase its conditions describe (Pending, QuotaReserved,
Admitted, Evicted, Requeued, Finished, Deactivated), plus Deleted.

The phase is read from the conditions in Kueue's precedence: Finished, then inactive
(``spec.active: false``), Evicted, Admitted, QuotaReserved, Requeued. Kueue clears conditions
as a workload moves on, and an informer may coalesce updates, so rows admit the phases a
workload can reach between two observations; Finished ends it. The S3 status fields
(``needs_second_pass``, ``unhealthy_nodes``) are held only while quota is reserved: see
``HOLDS_QUOTA``.
"""

from __future__ import annotations

from enum import StrEnum

from domain.lifecycle.table import Lifecycle, Row
from domain.objects.kueue import Workload


class WorkloadPhase(StrEnum):
    """Kueue's workload states in lifecycle order; Finished and Deleted are terminal."""

    PENDING = "Pending"  # waiting for quota
    QUOTA_RESERVED = "QuotaReserved"  # quota reserved, admission checks pending
    ADMITTED = "Admitted"  # may run
    EVICTED = "Evicted"  # admission withdrawn (preempted, node failures, ...)
    REQUEUED = "Requeued"  # back in its queue after an eviction
    FINISHED = "Finished"  # done; quota released
    DEACTIVATED = "Deactivated"  # spec.active false: not to be admitted
    DELETED = "Deleted"  # the DELETED event arrived


class WorkloadFact(StrEnum):
    """The phase a watch event's Workload shows, and its deletion."""

    OBSERVED_PENDING = "ObservedPending"
    OBSERVED_QUOTA_RESERVED = "ObservedQuotaReserved"
    OBSERVED_ADMITTED = "ObservedAdmitted"
    OBSERVED_EVICTED = "ObservedEvicted"
    OBSERVED_REQUEUED = "ObservedRequeued"
    OBSERVED_FINISHED = "ObservedFinished"
    OBSERVED_DEACTIVATED = "ObservedDeactivated"
    DELETED = "Deleted"


P, F = WorkloadPhase, WorkloadFact

WORKLOAD = Lifecycle(
    kind="Workload",
    phases=WorkloadPhase,
    triggers=WorkloadFact,
    initial=P.PENDING,
    rows=(
        Row(P.PENDING, F.OBSERVED_PENDING, P.PENDING),
        Row(P.PENDING, F.OBSERVED_QUOTA_RESERVED, P.QUOTA_RESERVED),
        Row(P.PENDING, F.OBSERVED_ADMITTED, P.ADMITTED),
        Row(P.PENDING, F.OBSERVED_EVICTED, P.EVICTED),
        Row(P.PENDING, F.OBSERVED_REQUEUED, P.REQUEUED),
        Row(P.PENDING, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.PENDING, F.OBSERVED_DEACTIVATED, P.DEACTIVATED),
        Row(P.PENDING, F.DELETED, P.DELETED),
        Row(P.QUOTA_RESERVED, F.OBSERVED_PENDING, P.PENDING),  # reservation lost
        Row(P.QUOTA_RESERVED, F.OBSERVED_QUOTA_RESERVED, P.QUOTA_RESERVED),
        Row(P.QUOTA_RESERVED, F.OBSERVED_ADMITTED, P.ADMITTED),
        Row(P.QUOTA_RESERVED, F.OBSERVED_EVICTED, P.EVICTED),
        Row(P.QUOTA_RESERVED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.QUOTA_RESERVED, F.OBSERVED_DEACTIVATED, P.DEACTIVATED),
        Row(P.QUOTA_RESERVED, F.DELETED, P.DELETED),
        Row(P.ADMITTED, F.OBSERVED_ADMITTED, P.ADMITTED),
        Row(P.ADMITTED, F.OBSERVED_EVICTED, P.EVICTED),
        Row(P.ADMITTED, F.OBSERVED_REQUEUED, P.REQUEUED),  # evicted and requeued in between
        Row(P.ADMITTED, F.OBSERVED_PENDING, P.PENDING),  # evicted, requeued, conditions cleared
        Row(P.ADMITTED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.ADMITTED, F.OBSERVED_DEACTIVATED, P.DEACTIVATED),
        Row(P.ADMITTED, F.DELETED, P.DELETED),
        Row(P.EVICTED, F.OBSERVED_EVICTED, P.EVICTED),
        Row(P.EVICTED, F.OBSERVED_REQUEUED, P.REQUEUED),
        Row(P.EVICTED, F.OBSERVED_PENDING, P.PENDING),
        Row(P.EVICTED, F.OBSERVED_QUOTA_RESERVED, P.QUOTA_RESERVED),  # requeued and reserved again
        Row(P.EVICTED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.EVICTED, F.OBSERVED_DEACTIVATED, P.DEACTIVATED),
        Row(P.EVICTED, F.DELETED, P.DELETED),
        Row(P.REQUEUED, F.OBSERVED_REQUEUED, P.REQUEUED),
        Row(P.REQUEUED, F.OBSERVED_PENDING, P.PENDING),
        Row(P.REQUEUED, F.OBSERVED_QUOTA_RESERVED, P.QUOTA_RESERVED),
        Row(P.REQUEUED, F.OBSERVED_ADMITTED, P.ADMITTED),
        Row(P.REQUEUED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.REQUEUED, F.OBSERVED_DEACTIVATED, P.DEACTIVATED),
        Row(P.REQUEUED, F.DELETED, P.DELETED),
        Row(P.DEACTIVATED, F.OBSERVED_DEACTIVATED, P.DEACTIVATED),
        Row(P.DEACTIVATED, F.OBSERVED_PENDING, P.PENDING),  # reactivated
        Row(P.DEACTIVATED, F.OBSERVED_REQUEUED, P.REQUEUED),  # reactivated
        Row(P.DEACTIVATED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.DEACTIVATED, F.DELETED, P.DELETED),
        Row(P.FINISHED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.FINISHED, F.DELETED, P.DELETED),
    ),
)

HOLDS_QUOTA = frozenset({P.QUOTA_RESERVED, P.ADMITTED})
"""Phases in which a workload may get a second pass (S3); leaving them clears the need."""

_PRECEDENCE = (
    ("Evicted", F.OBSERVED_EVICTED),
    ("Admitted", F.OBSERVED_ADMITTED),
    ("QuotaReserved", F.OBSERVED_QUOTA_RESERVED),
    ("Requeued", F.OBSERVED_REQUEUED),
)


def observe(workload: Workload) -> WorkloadFact:
    true = {c.type for c in workload.status.conditions if c.status == "True"}
    if "Finished" in true:
        return F.OBSERVED_FINISHED
    if not workload.spec.active:
        return F.OBSERVED_DEACTIVATED
    for condition, fact in _PRECEDENCE:
        if condition in true:
            return fact
    return F.OBSERVED_PENDING
