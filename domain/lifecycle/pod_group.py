"""PodGroup lifecycle: Volcano's phases (Pending, Inqueue, Running, Unknown, Completed) as the
cluster reports them and as our status decisions set them, plus Terminating and Deleted.

Observed and decided facts are distinct so the table shows who may move a gang where: the
cycle reports a gang waiting (Pending with Unschedulable), scheduled (Running) or completed,
and never touches one that is Terminating or Completed (SEEDS S1).
"""

from __future__ import annotations

from enum import StrEnum

from domain.lifecycle.table import Lifecycle, Row
from domain.objects.volcano import PodGroup


class PodGroupPhase(StrEnum):
    """Volcano's PodGroup phases, then ours for deletion; Completed and Deleted end a gang."""

    PENDING = "Pending"  # not enough members placed (or not yet enqueued)
    INQUEUE = "Inqueue"  # its queue reserved the minimum resources
    RUNNING = "Running"  # at least minMember members placed
    UNKNOWN = "Unknown"  # some members placed, some lost (Volcano's partial state)
    COMPLETED = "Completed"  # enough members succeeded, all finished
    TERMINATING = "Terminating"  # deletionTimestamp set: no status writes any more
    DELETED = "Deleted"  # the DELETED event arrived


class PodGroupFact(StrEnum):
    """Facts about a PodGroup: the phase a watch event shows, our status decisions, deletion."""

    OBSERVED_PENDING = "ObservedPending"  # status.phase Pending or empty
    OBSERVED_INQUEUE = "ObservedInqueue"
    OBSERVED_RUNNING = "ObservedRunning"
    OBSERVED_UNKNOWN = "ObservedUnknown"
    OBSERVED_COMPLETED = "ObservedCompleted"
    GANG_UNSCHEDULABLE = "GangUnschedulable"  # we decided: Pending, with the reason it waits
    GANG_ENQUEUED = "GangEnqueued"  # we decided: Inqueue (its queue reserved its minimum), maybe waiting
    GANG_SCHEDULED = "GangScheduled"  # we decided: Running
    GANG_COMPLETED = "GangCompleted"  # we decided: Completed
    DELETION_STARTED = "DeletionStarted"
    DELETED = "Deleted"


P, F = PodGroupPhase, PodGroupFact

POD_GROUP = Lifecycle(
    kind="PodGroup",
    phases=PodGroupPhase,
    triggers=PodGroupFact,
    initial=P.PENDING,
    rows=(
        Row(P.PENDING, F.OBSERVED_PENDING, P.PENDING),
        Row(P.PENDING, F.OBSERVED_INQUEUE, P.INQUEUE),
        Row(P.PENDING, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.PENDING, F.OBSERVED_UNKNOWN, P.UNKNOWN),
        Row(P.PENDING, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.PENDING, F.GANG_UNSCHEDULABLE, P.PENDING),
        Row(P.PENDING, F.GANG_ENQUEUED, P.INQUEUE),
        Row(P.PENDING, F.GANG_SCHEDULED, P.RUNNING),
        Row(P.PENDING, F.GANG_COMPLETED, P.COMPLETED),
        Row(P.PENDING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.PENDING, F.DELETED, P.DELETED),
        Row(P.INQUEUE, F.OBSERVED_PENDING, P.PENDING),
        Row(P.INQUEUE, F.OBSERVED_INQUEUE, P.INQUEUE),
        Row(P.INQUEUE, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.INQUEUE, F.OBSERVED_UNKNOWN, P.UNKNOWN),
        Row(P.INQUEUE, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.INQUEUE, F.GANG_UNSCHEDULABLE, P.PENDING),
        Row(P.INQUEUE, F.GANG_ENQUEUED, P.INQUEUE),  # same phase, new conditions
        Row(P.INQUEUE, F.GANG_SCHEDULED, P.RUNNING),
        Row(P.INQUEUE, F.GANG_COMPLETED, P.COMPLETED),
        Row(P.INQUEUE, F.DELETION_STARTED, P.TERMINATING),
        Row(P.INQUEUE, F.DELETED, P.DELETED),
        Row(P.RUNNING, F.OBSERVED_PENDING, P.PENDING),  # members lost below minMember
        Row(P.RUNNING, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.RUNNING, F.OBSERVED_UNKNOWN, P.UNKNOWN),
        Row(P.RUNNING, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.RUNNING, F.GANG_UNSCHEDULABLE, P.PENDING),
        Row(P.RUNNING, F.GANG_SCHEDULED, P.RUNNING),  # same phase, new conditions
        Row(P.RUNNING, F.GANG_COMPLETED, P.COMPLETED),
        Row(P.RUNNING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.RUNNING, F.DELETED, P.DELETED),
        Row(P.UNKNOWN, F.OBSERVED_PENDING, P.PENDING),
        Row(P.UNKNOWN, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.UNKNOWN, F.OBSERVED_UNKNOWN, P.UNKNOWN),
        Row(P.UNKNOWN, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.UNKNOWN, F.GANG_UNSCHEDULABLE, P.PENDING),
        Row(P.UNKNOWN, F.GANG_SCHEDULED, P.RUNNING),
        Row(P.UNKNOWN, F.GANG_COMPLETED, P.COMPLETED),
        Row(P.UNKNOWN, F.DELETION_STARTED, P.TERMINATING),
        Row(P.UNKNOWN, F.DELETED, P.DELETED),
        Row(P.COMPLETED, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.COMPLETED, F.DELETION_STARTED, P.TERMINATING),
        Row(P.COMPLETED, F.DELETED, P.DELETED),
        Row(P.TERMINATING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.TERMINATING, F.DELETED, P.DELETED),
    ),
)

_BY_STATUS = {
    "Inqueue": F.OBSERVED_INQUEUE,
    "Running": F.OBSERVED_RUNNING,
    "Unknown": F.OBSERVED_UNKNOWN,
    "Completed": F.OBSERVED_COMPLETED,
}

DECIDED = {
    PodGroupPhase.PENDING: F.GANG_UNSCHEDULABLE,
    PodGroupPhase.INQUEUE: F.GANG_ENQUEUED,
    PodGroupPhase.RUNNING: F.GANG_SCHEDULED,
    PodGroupPhase.COMPLETED: F.GANG_COMPLETED,
}
"""The fact a PodGroupStatus decision of each phase folds into the machine."""


def observe(group: PodGroup) -> PodGroupFact:
    if group.metadata.deletion_timestamp is not None:
        return F.DELETION_STARTED
    return _BY_STATUS.get(group.status.phase, F.OBSERVED_PENDING)
