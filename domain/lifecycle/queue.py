"""Volcano Queue lifecycle: Open, Closing, Closed as the cluster reports them, Rejected when
we refuse the queue (SEEDS S2: a child that may not be created), and Deleted.

A refused queue stays Rejected whatever state its status claims, so it never receives jobs;
the queue rules of S2 decide ``CreationRefused``. A ``deletionTimestamp`` closes a queue.
"""

from __future__ import annotations

from enum import StrEnum

from domain.lifecycle.table import Lifecycle, Row
from domain.objects.volcano import Queue


class QueuePhase(StrEnum):
    """Volcano's queue states, then ours; Deleted is terminal."""

    OPEN = "Open"  # accepts jobs
    CLOSING = "Closing"  # closed, but still holds running jobs; or being deleted
    CLOSED = "Closed"  # accepts no jobs, holds none
    REJECTED = "Rejected"  # refused by us (S2): never receives jobs
    DELETED = "Deleted"  # the DELETED event arrived


class QueueFact(StrEnum):
    """The state a watch event's Queue shows (status.state), our refusal, deletion."""

    OBSERVED_OPEN = "ObservedOpen"  # also an empty state: a new queue
    OBSERVED_CLOSING = "ObservedClosing"
    OBSERVED_CLOSED = "ObservedClosed"
    CREATION_REFUSED = "CreationRefused"  # we decided: Reject (S2)
    DELETION_STARTED = "DeletionStarted"
    DELETED = "Deleted"


P, F = QueuePhase, QueueFact

QUEUE = Lifecycle(
    kind="Queue",
    phases=QueuePhase,
    triggers=QueueFact,
    initial=P.OPEN,
    rows=(
        Row(P.OPEN, F.OBSERVED_OPEN, P.OPEN),
        Row(P.OPEN, F.OBSERVED_CLOSING, P.CLOSING),
        Row(P.OPEN, F.OBSERVED_CLOSED, P.CLOSED),
        Row(P.OPEN, F.CREATION_REFUSED, P.REJECTED),
        Row(P.OPEN, F.DELETION_STARTED, P.CLOSING),
        Row(P.OPEN, F.DELETED, P.DELETED),
        Row(P.CLOSING, F.OBSERVED_OPEN, P.OPEN),  # reopened before its jobs drained
        Row(P.CLOSING, F.OBSERVED_CLOSING, P.CLOSING),
        Row(P.CLOSING, F.OBSERVED_CLOSED, P.CLOSED),
        Row(P.CLOSING, F.DELETION_STARTED, P.CLOSING),
        Row(P.CLOSING, F.DELETED, P.DELETED),
        Row(P.CLOSED, F.OBSERVED_OPEN, P.OPEN),
        Row(P.CLOSED, F.OBSERVED_CLOSED, P.CLOSED),
        Row(P.CLOSED, F.DELETION_STARTED, P.CLOSED),  # holds no jobs: nothing to drain
        Row(P.CLOSED, F.DELETED, P.DELETED),
        Row(P.REJECTED, F.OBSERVED_OPEN, P.REJECTED),  # our refusal outlives its reported state
        Row(P.REJECTED, F.OBSERVED_CLOSING, P.REJECTED),
        Row(P.REJECTED, F.OBSERVED_CLOSED, P.REJECTED),
        Row(P.REJECTED, F.CREATION_REFUSED, P.REJECTED),
        Row(P.REJECTED, F.DELETION_STARTED, P.REJECTED),
        Row(P.REJECTED, F.DELETED, P.DELETED),
    ),
)

_BY_STATUS = {"Closing": F.OBSERVED_CLOSING, "Closed": F.OBSERVED_CLOSED}


def observe(queue: Queue) -> QueueFact:
    if queue.metadata.deletion_timestamp is not None:
        return F.DELETION_STARTED
    return _BY_STATUS.get(queue.status.state, F.OBSERVED_OPEN)


DECIDED = {"Open": F.OBSERVED_OPEN, "Closing": F.OBSERVED_CLOSING, "Closed": F.OBSERVED_CLOSED}
"""The fact a QueueStatus decision folds in: it reports the state the queue already has."""
