"""Node lifecycle: Ready, Unschedulable (cordoned), NotReady, and Deleted.

A node moves freely between the first three as its Ready condition and ``spec.unschedulable``
change. NotReady and Deleted are the node failures that S3's second pass reacts to.
"""

from __future__ import annotations

from enum import StrEnum

from domain.lifecycle.table import Lifecycle, Row
from domain.objects.core import Node


class NodePhase(StrEnum):
    """Healthiest first; Deleted is terminal."""

    READY = "Ready"  # takes new pods
    UNSCHEDULABLE = "Unschedulable"  # cordoned: runs its pods, takes no new ones
    NOT_READY = "NotReady"  # Ready condition False or Unknown: failed for S3
    DELETED = "Deleted"  # the DELETED event arrived: failed for S3


class NodeFact(StrEnum):
    """What a watch event's Node shows, and its deletion."""

    OBSERVED_READY = "ObservedReady"
    OBSERVED_UNSCHEDULABLE = "ObservedUnschedulable"  # Ready, but spec.unschedulable
    OBSERVED_NOT_READY = "ObservedNotReady"
    DELETED = "Deleted"


P, F = NodePhase, NodeFact

NODE = Lifecycle(
    kind="Node",
    phases=NodePhase,
    triggers=NodeFact,
    initial=P.READY,
    rows=(
        Row(P.READY, F.OBSERVED_READY, P.READY),
        Row(P.READY, F.OBSERVED_UNSCHEDULABLE, P.UNSCHEDULABLE),
        Row(P.READY, F.OBSERVED_NOT_READY, P.NOT_READY),
        Row(P.READY, F.DELETED, P.DELETED),
        Row(P.UNSCHEDULABLE, F.OBSERVED_READY, P.READY),
        Row(P.UNSCHEDULABLE, F.OBSERVED_UNSCHEDULABLE, P.UNSCHEDULABLE),
        Row(P.UNSCHEDULABLE, F.OBSERVED_NOT_READY, P.NOT_READY),
        Row(P.UNSCHEDULABLE, F.DELETED, P.DELETED),
        Row(P.NOT_READY, F.OBSERVED_READY, P.READY),
        Row(P.NOT_READY, F.OBSERVED_UNSCHEDULABLE, P.UNSCHEDULABLE),
        Row(P.NOT_READY, F.OBSERVED_NOT_READY, P.NOT_READY),
        Row(P.NOT_READY, F.DELETED, P.DELETED),
    ),
)


def observe(node: Node) -> NodeFact:
    if not node.is_ready():
        return F.OBSERVED_NOT_READY
    return F.OBSERVED_UNSCHEDULABLE if node.spec.unschedulable else F.OBSERVED_READY
