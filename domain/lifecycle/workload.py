"""Kueue Workload lifecycle: the phase its conditions describe (Pending, QuotaReserved,
Admitted, Evicted, Requeued, Finished, Deactivated), plus Deleted.

The phase is read from the conditions in Kueue's precedence: Finished, then inactive
(``spec.active: false``), Evicted, Admitted, QuotaReserved, Requeued. Kueue clears conditions
as a workload moves on, and an informer may coalesce updates, so rows admit the phases a
workload can reach between two observations; Finished ends it. The statuses we decide
(``WorkloadView``) step the machine with the same facts, read the same way.

S3: ``needs_second_pass`` is a pure function of the status (``needs_second_pass``), recomputed
in the same fold that changes the status, so an eviction, a finish or a re-admission clears it
in the very transition that makes it obsolete; no annotation carries it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple

from domain.lifecycle.table import Lifecycle, Row
from domain.objects import topology_assignment
from domain.objects.kueue import Workload

HOSTNAME_LABEL = "kubernetes.io/hostname"


class ConditionType(StrEnum):
    """The Workload condition types the scheduler reads and writes (Kueue's ``WorkloadXxx``)."""

    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    EVICTED = "Evicted"
    PREEMPTED = "Preempted"
    REQUEUED = "Requeued"
    FINISHED = "Finished"
    PODS_READY = "PodsReady"
    DEACTIVATION_TARGET = "DeactivationTarget"


C = ConditionType


class Condition(NamedTuple):
    """One status condition of a Workload (equal to the plain 4-tuple it is read from)."""

    type: str
    status: str
    reason: str
    message: str


Conditions = tuple[tuple[str, str, str, str], ...]
"""((type, status, reason, message), ...) in a fixed order, compared for change detection; a view
``WorkloadView.condition`` reads one as a ``Condition``, by its field names."""


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
        Row(P.EVICTED, F.OBSERVED_ADMITTED, P.ADMITTED),  # requeued and admitted again
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
        Row(P.DEACTIVATED, F.OBSERVED_EVICTED, P.EVICTED),  # reactivated, eviction still on record
        Row(P.DEACTIVATED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.DEACTIVATED, F.DELETED, P.DELETED),
        Row(P.FINISHED, F.OBSERVED_FINISHED, P.FINISHED),
        Row(P.FINISHED, F.DELETED, P.DELETED),
    ),
)

HOLDS_QUOTA = frozenset({P.QUOTA_RESERVED, P.ADMITTED})
"""Phases in which a workload may get a second pass (S3)."""

WAITS = frozenset({P.PENDING, P.QUOTA_RESERVED, P.EVICTED, P.REQUEUED})
"""Phases in which a later cycle may change a workload without a new event (admission, release, requeue)."""

_PRECEDENCE = (
    (C.EVICTED, F.OBSERVED_EVICTED),
    (C.ADMITTED, F.OBSERVED_ADMITTED),
    (C.QUOTA_RESERVED, F.OBSERVED_QUOTA_RESERVED),
    (C.REQUEUED, F.OBSERVED_REQUEUED),
)


@dataclass(frozen=True, slots=True)
class WorkloadView:
    """A workload's status as the scheduler sees it: observed from the cluster, or decided by us.

    ``admission`` is the contract's JSON form (clusterQueue, podSetAssignments); checks are
    (name, state) pairs; ``requeue_at`` is a scheduler-clock instant.
    """

    conditions: Conditions = ()
    admission: Mapping[str, Any] | None = None
    unhealthy_nodes: tuple[str, ...] = ()
    admission_checks: tuple[tuple[str, str], ...] = ()
    requeue_count: int = 0
    requeue_at: datetime | None = None
    _by_type: dict[str, Condition] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_type: dict[str, Condition] = {}
        for c in self.conditions:
            by_type.setdefault(c[0], c if isinstance(c, Condition) else Condition(*c))
        object.__setattr__(self, "_by_type", by_type)

    def is_true(self, condition: str) -> bool:
        found = self._by_type.get(condition)
        return found is not None and found.status == "True"

    def condition(self, condition: str) -> Condition | None:
        return self._by_type.get(condition)

    def to_dict(self) -> dict[str, Any]:
        return {
            "conditions": [list(c) for c in self.conditions],
            "admission": self.admission,
            "unhealthyNodes": list(self.unhealthy_nodes),
            "admissionChecks": [list(c) for c in self.admission_checks],
            "requeueCount": self.requeue_count,
            "requeueAt": self.requeue_at.isoformat() if self.requeue_at else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkloadView:
        return cls(
            conditions=tuple((t, s, r, m) for t, s, r, m in data["conditions"]),
            admission=data["admission"],
            unhealthy_nodes=tuple(data["unhealthyNodes"]),
            admission_checks=tuple((n, s) for n, s in data["admissionChecks"]),
            requeue_count=data["requeueCount"],
            requeue_at=datetime.fromisoformat(data["requeueAt"]) if data["requeueAt"] else None,
        )


def view_of(workload: Workload) -> WorkloadView:
    """The status the cluster holds for ``workload`` (its topology assignments in the v1beta1 form)."""
    status = workload.status
    requeue = status.requeue_state or {}
    requeue_at = requeue.get("requeueAt")
    return WorkloadView(
        conditions=tuple((c.type, c.status, c.reason, c.message) for c in status.conditions),
        admission=_with_domains(status.admission),
        unhealthy_nodes=tuple(str(n.get("name", "")) for n in status.unhealthy_nodes),
        admission_checks=tuple((str(c.get("name", "")), str(c.get("state", ""))) for c in status.admission_checks),
        requeue_count=int(requeue.get("count") or 0),
        requeue_at=datetime.fromisoformat(requeue_at) if isinstance(requeue_at, str) else None,
    )


def _with_domains(admission: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``admission`` with every topology assignment in the v1beta1 form (v1beta2 sends slices)."""
    psas = (admission or {}).get("podSetAssignments") or ()
    if not any("slices" in (p.get("topologyAssignment") or {}) for p in psas):
        return admission
    assignments = [
        {**p, "topologyAssignment": topology_assignment.to_domains(p["topologyAssignment"])}
        if p.get("topologyAssignment")
        else p
        for p in psas
    ]
    return {**(admission or {}), "podSetAssignments": assignments}


def is_active(active: bool, view: WorkloadView) -> bool:
    """``spec.active``, unless the status asks for deactivation (``DeactivationTarget=True``,
    e.g. a rejected admission check): Kueue would set spec.active=false, which we cannot write,
    so the condition stands for it until the cluster shows a status without it."""
    return active and not view.is_true(ConditionType.DEACTIVATION_TARGET)


def fact_of(active: bool, view: WorkloadView) -> WorkloadFact:
    """The fact a status shows, in Kueue's precedence."""
    if view.is_true(C.FINISHED):
        return F.OBSERVED_FINISHED
    if not is_active(active, view):
        return F.OBSERVED_DEACTIVATED
    for condition, fact in _PRECEDENCE:
        if view.is_true(condition):
            return fact
    return F.OBSERVED_PENDING


def observe(workload: Workload) -> WorkloadFact:
    return fact_of(workload.spec.active, view_of(workload))


def assigned_hosts(admission: Mapping[str, Any] | None) -> frozenset[str]:
    """Hostnames (the lowest topology level) named by the admission's topology assignments."""
    hosts: set[str] = set()
    for psa in (admission or {}).get("podSetAssignments", ()):
        assignment = psa.get("topologyAssignment") or {}
        levels = assignment.get("levels") or []
        if levels and levels[-1] == HOSTNAME_LABEL:
            hosts.update(d["values"][-1] for d in assignment.get("domains", ()) if d.get("values"))
    return frozenset(hosts)


def topology_pending(admission: Mapping[str, Any] | None) -> bool:
    """A podSet's topology assignment was delayed (ProvisioningRequest) and is not made yet."""
    psas = (admission or {}).get("podSetAssignments", ())
    return any(p.get("delayedTopologyRequest") == "Pending" and not p.get("topologyAssignment") for p in psas)


def needs_second_pass(view: WorkloadView) -> bool:
    """S3, Kueue's rule after #5585: only a workload that holds quota (so is not on hold,
    which is QuotaReserved=False/OnHold), is not Finished and not Evicted, and either waits for
    its delayed topology with every admission check Ready, or is Admitted with a node of its
    topology assignment unhealthy."""
    if view.is_true(C.FINISHED) or view.is_true(C.EVICTED) or not view.is_true(C.QUOTA_RESERVED):
        return False
    admitted = view.is_true(C.ADMITTED)
    delayed = (
        not admitted
        and bool(view.admission_checks)
        and all(state == "Ready" for _, state in view.admission_checks)
        and topology_pending(view.admission)
    )
    failed = admitted and bool(set(view.unhealthy_nodes) & assigned_hosts(view.admission))
    return delayed or failed
