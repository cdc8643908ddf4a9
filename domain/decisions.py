"""Decisions: what the scheduler tells the cluster (CONTRACT section 2), with deterministic ids.

An id is a hash of the cluster, the seq of the event or marker that produced the decision,
the decision kind and the target's identity, so the same events always give the same ids and
a re-processed batch can never mint a second id for the same decision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from domain.kinds import KubeObject


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


@dataclass(frozen=True, slots=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, obj: KubeObject) -> ObjectRef:
        meta = obj.metadata
        return cls(obj.api_version, obj.kind, meta.namespace, meta.name, meta.uid)

    def to_dict(self) -> dict[str, str]:
        out = {"apiVersion": self.api_version, "kind": self.kind}
        if self.namespace:
            out["namespace"] = self.namespace
        out["name"] = self.name
        out["uid"] = self.uid
        return out


@dataclass(frozen=True, slots=True)
class Decision:
    id: str
    cluster: str
    seq: int
    kind: DecisionKind
    target: ObjectRef
    reason: str
    fields: Mapping[str, Any] = field(default_factory=dict)

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


def decision_id(cluster: str, seq: int, kind: DecisionKind, target: ObjectRef) -> str:
    identity = "\x1f".join(
        (cluster, str(seq), kind.value, target.api_version, target.kind, target.namespace, target.name, target.uid)
    )
    return hashlib.blake2b(identity.encode(), digest_size=16).hexdigest()


def make(cluster: str, seq: int, kind: DecisionKind, target: ObjectRef, reason: str, **fields: Any) -> Decision:
    return Decision(decision_id(cluster, seq, kind, target), cluster, seq, kind, target, reason, fields)
