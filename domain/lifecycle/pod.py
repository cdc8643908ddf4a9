"""Pod lifecycle: Pending until bound (by us or by the cluster), then the kubelet's phases.

``Bound`` holds while our bind is not yet confirmed by a ``spec.nodeName``: a watch event that
still shows the pod unbound does not undo our decision. A ``deletionTimestamp`` moves any pod
to Terminating, whatever phase its status reports during graceful shutdown.
"""

from __future__ import annotations

from enum import StrEnum

from domain.lifecycle.table import Lifecycle, Row
from domain.objects.core import Pod


class PodPhase(StrEnum):
    """Phases in the order a pod usually moves through them; Deleted is terminal."""

    PENDING = "Pending"  # waiting for a node
    BOUND = "Bound"  # has a node (ours, or the cluster's spec.nodeName), not running yet
    RUNNING = "Running"  # the kubelet runs it
    SUCCEEDED = "Succeeded"  # all containers exited 0; its resources are free
    FAILED = "Failed"  # a container failed for good; its resources are free
    TERMINATING = "Terminating"  # deletionTimestamp set, waiting for DELETED
    DELETED = "Deleted"  # the DELETED event arrived


class PodFact(StrEnum):
    """Facts about a pod: what a watch event shows, and what we decided."""

    OBSERVED_PENDING = "ObservedPending"  # phase Pending, no spec.nodeName
    OBSERVED_BOUND = "ObservedBound"  # phase Pending with spec.nodeName
    OBSERVED_RUNNING = "ObservedRunning"
    OBSERVED_SUCCEEDED = "ObservedSucceeded"
    OBSERVED_FAILED = "ObservedFailed"
    BIND_DECIDED = "BindDecided"  # a cycle emitted a Bind decision for it
    DELETION_STARTED = "DeletionStarted"  # metadata.deletionTimestamp is set
    DELETED = "Deleted"  # DELETED watch event


P, F = PodPhase, PodFact

POD = Lifecycle(
    kind="Pod",
    phases=PodPhase,
    triggers=PodFact,
    initial=P.PENDING,
    rows=(
        Row(P.PENDING, F.OBSERVED_PENDING, P.PENDING),
        Row(P.PENDING, F.BIND_DECIDED, P.BOUND),
        Row(P.PENDING, F.OBSERVED_BOUND, P.BOUND),
        Row(P.PENDING, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.PENDING, F.OBSERVED_SUCCEEDED, P.SUCCEEDED),
        Row(P.PENDING, F.OBSERVED_FAILED, P.FAILED),
        Row(P.PENDING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.PENDING, F.DELETED, P.DELETED),
        Row(P.BOUND, F.OBSERVED_PENDING, P.BOUND),  # our bind, not confirmed yet
        Row(P.BOUND, F.OBSERVED_BOUND, P.BOUND),
        Row(P.BOUND, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.BOUND, F.OBSERVED_SUCCEEDED, P.SUCCEEDED),
        Row(P.BOUND, F.OBSERVED_FAILED, P.FAILED),
        Row(P.BOUND, F.DELETION_STARTED, P.TERMINATING),
        Row(P.BOUND, F.DELETED, P.DELETED),
        Row(P.RUNNING, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.RUNNING, F.OBSERVED_SUCCEEDED, P.SUCCEEDED),
        Row(P.RUNNING, F.OBSERVED_FAILED, P.FAILED),
        Row(P.RUNNING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.RUNNING, F.DELETED, P.DELETED),
        Row(P.SUCCEEDED, F.OBSERVED_SUCCEEDED, P.SUCCEEDED),
        Row(P.SUCCEEDED, F.DELETION_STARTED, P.TERMINATING),
        Row(P.SUCCEEDED, F.DELETED, P.DELETED),
        Row(P.FAILED, F.OBSERVED_FAILED, P.FAILED),
        Row(P.FAILED, F.DELETION_STARTED, P.TERMINATING),
        Row(P.FAILED, F.DELETED, P.DELETED),
        Row(P.TERMINATING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.TERMINATING, F.DELETED, P.DELETED),
    ),
)

_BY_STATUS = {
    "Running": F.OBSERVED_RUNNING,
    "Succeeded": F.OBSERVED_SUCCEEDED,
    "Failed": F.OBSERVED_FAILED,
}


def observe(pod: Pod) -> PodFact:
    """The fact a watch event's pod shows; an unknown status phase counts as Pending."""
    if pod.metadata.deletion_timestamp is not None:
        return F.DELETION_STARTED
    fact = _BY_STATUS.get(pod.status.phase)
    if fact is not None:
        return fact
    return F.OBSERVED_BOUND if pod.spec.node_name else F.OBSERVED_PENDING
