"""Decisions: what the scheduler tells the cluster (CONTRACT section 2), as typed values with
deterministic ids.

Each kind is a msgspec Struct: the cycle makes one, ``ClusterState.record`` folds it into the
state (the same object, which tells whether it takes effect now), and the services emit it
(``to_dict``: the contract's JSON, keys in the documented order). ``schema()`` is the JSON Schema
of a decision line for consumers of the decisions topic (``docs/decisions.schema.json``).

An id is a hash of the cluster, the seq of the event or marker that produced the decision,
the decision kind and the target's identity, so the same events always give the same ids and
a re-processed batch can never mint a second id for the same decision.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Self

import msgspec

from domain.kinds import KubeObject
from domain.objects import topology_assignment

V1BETA2 = "kueue.x-k8s.io/v1beta2"


class DecisionKind(StrEnum):
    """The decision kinds of the contract."""

    BIND = "Bind"
    POD_GROUP_STATUS = "PodGroupStatus"
    JOB_STATUS = "JobStatus"
    QUEUE_STATUS = "QueueStatus"
    WORKLOAD_STATUS = "WorkloadStatus"
    EVICT = "Evict"
    REJECT = "Reject"
    POD_STATUS = "PodStatus"  # a lone pod of ours that could not be placed: PodScheduled=False


class ObjectRef(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    api_version: str
    kind: str
    namespace: str = ""  # absent for cluster-scoped objects
    name: str = ""
    uid: str = ""

    @classmethod
    def of(cls, obj: KubeObject) -> ObjectRef:
        meta = obj.metadata
        return cls(obj.api_version, obj.kind, meta.namespace, meta.name, meta.uid)

    @property
    def key(self) -> str:
        """The object's key in ``ClusterState`` (``namespace/name``, or the name alone)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def to_dict(self) -> dict[str, str]:
        out = {"apiVersion": self.api_version, "kind": self.kind}
        if self.namespace:
            out["namespace"] = self.namespace
        out["name"] = self.name
        out["uid"] = self.uid
        return out


class Condition(msgspec.Struct, frozen=True):
    type: str
    status: str
    reason: str
    message: str

    def as_tuple(self) -> tuple[str, str, str, str]:
        return (self.type, self.status, self.reason, self.message)


def conditions_of(conditions: tuple[tuple[str, str, str, str], ...]) -> list[Condition]:
    return [Condition(t, s, r, m) for t, s, r, m in conditions]


class Decision(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", omit_defaults=True):
    """The fields every decision has; a kind adds its own after them."""

    kind: ClassVar[DecisionKind]
    id: str
    cluster: str
    seq: int
    target: ObjectRef
    reason: str

    @classmethod
    def make(cls, cluster: str, seq: int, target: ObjectRef, reason: str, **fields: Any) -> Self:
        return cls(
            id=decision_id(cluster, seq, cls.kind, target), cluster=cluster, seq=seq, target=target, reason=reason,
            **fields,
        )  # fmt: skip

    @property
    def fields(self) -> dict[str, Any]:
        """The kind's own fields as JSON values, in the contract's order (absent ones left out)."""
        return {k: v for k, v in msgspec.to_builtins(self).items() if k not in _COMMON}

    def to_dict(self) -> dict[str, Any]:
        """The contract's JSON object, keys in the documented order."""
        return {
            "id": self.id,
            "cluster": self.cluster,
            "seq": self.seq,
            "kind": self.kind.value,
            "target": self.target.to_dict(),
            "reason": self.reason,
            **self.fields,
        }


_COMMON = frozenset({"id", "cluster", "seq", "kind", "target", "reason"})


class Bind(Decision, frozen=True, kw_only=True, tag=DecisionKind.BIND.value):
    kind: ClassVar[DecisionKind] = DecisionKind.BIND
    node: str


class PodGroupStatus(Decision, frozen=True, kw_only=True, tag=DecisionKind.POD_GROUP_STATUS.value):
    kind: ClassVar[DecisionKind] = DecisionKind.POD_GROUP_STATUS
    phase: str
    conditions: list[Condition]


class JobStatus(Decision, frozen=True, kw_only=True, tag=DecisionKind.JOB_STATUS.value):
    kind: ClassVar[DecisionKind] = DecisionKind.JOB_STATUS
    phase: str


class QueueStatus(Decision, frozen=True, kw_only=True, tag=DecisionKind.QUEUE_STATUS.value):
    kind: ClassVar[DecisionKind] = DecisionKind.QUEUE_STATUS
    state: str
    allocated: dict[str, str]


class AdmissionCheckState(msgspec.Struct, frozen=True):
    name: str
    state: str


class UnhealthyNode(msgspec.Struct, frozen=True):
    name: str


class RequeueState(msgspec.Struct, frozen=True, rename="camel"):
    count: int
    requeue_at: str | None


class WorkloadStatus(Decision, frozen=True, kw_only=True, tag=DecisionKind.WORKLOAD_STATUS.value, rename="camel"):
    """``admission`` is held in the form a v1beta1 Workload spells it; a v1beta2 target gets its
    topology assignments compressed into slices when written (``fields``)."""

    kind: ClassVar[DecisionKind] = DecisionKind.WORKLOAD_STATUS
    conditions: list[Condition]
    admission: dict[str, Any] | None
    admission_checks: list[AdmissionCheckState] | None = None
    unhealthy_nodes: list[UnhealthyNode] | None = None
    requeue_state: RequeueState | None = None

    @property
    def fields(self) -> dict[str, Any]:
        out = super().fields
        if self.admission is not None and self.target.api_version == V1BETA2:
            out["admission"] = _v1beta2(out["admission"])
        return out

    @property
    def requeue_at(self) -> datetime | None:
        at = self.requeue_state.requeue_at if self.requeue_state is not None else None
        return datetime.fromisoformat(at) if at else None


def _v1beta2(admission: dict[str, Any]) -> dict[str, Any]:
    """The admission as v1beta2 spells it: topology assignments compressed into slices."""
    assignments = [
        {**p, "topologyAssignment": topology_assignment.to_slices(p["topologyAssignment"])}
        if p.get("topologyAssignment")
        else p
        for p in admission.get("podSetAssignments") or ()
    ]
    return {**admission, "podSetAssignments": assignments}


class Evict(Decision, frozen=True, kw_only=True, tag=DecisionKind.EVICT.value):
    """A pod (Volcano: preempt, reclaim) or a Workload (Kueue: ``message``, and the workload
    that preempted it, if one did)."""

    kind: ClassVar[DecisionKind] = DecisionKind.EVICT
    message: str | None = None
    preemptor: str | None = None


class Reject(Decision, frozen=True, kw_only=True, tag=DecisionKind.REJECT.value):
    kind: ClassVar[DecisionKind] = DecisionKind.REJECT
    message: str


class PodStatus(Decision, frozen=True, kw_only=True, tag=DecisionKind.POD_STATUS.value):
    kind: ClassVar[DecisionKind] = DecisionKind.POD_STATUS
    conditions: list[Condition]


AnyDecision = Bind | PodGroupStatus | JobStatus | QueueStatus | WorkloadStatus | Evict | Reject | PodStatus


def decision_id(cluster: str, seq: int, kind: DecisionKind, target: ObjectRef) -> str:
    identity = "\x1f".join(
        (cluster, str(seq), kind.value, target.api_version, target.kind, target.namespace, target.name, target.uid)
    )
    return hashlib.blake2b(identity.encode(), digest_size=16).hexdigest()


def schema() -> dict[str, Any]:
    """The JSON Schema of one decision line (any kind), for consumers of the decisions topic."""
    return msgspec.json.schema(AnyDecision)
