"""MachineStatus: the status our machines hold for one object, beside the object as watched.

Everything the scheduler derives about an object lives here, never in annotations (SEEDS
S3): its machine phase and when it last changed (the seq and the scheduler clock), the last
illegal fact it refused, the node we bound a pod to until the cluster confirms it (or the node
it is pipelined onto while preemption releases room there), the last
PodGroup status we decided, the most tasks a gang ever had (S1), the last Workload status we
decided, and a workload's need for a second pass with the nodes that failed under it (S3),
derived from that status, with the failed attempts of that second pass and when it may be
tried again (its backoff on the scheduler clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from domain.lifecycle.workload import WorkloadView

PodGroupStatusView = tuple[str, tuple[tuple[str, str, str, str], ...]]
"""(phase, ((type, status, reason, message), ...)) as compared for change detection."""

QueueStatusView = tuple[str, tuple[tuple[str, str], ...]]
"""(state, ((resource, allocated quantity), ...)) as compared for change detection."""


@dataclass(slots=True)
class MachineStatus:
    kind: str
    uid: str
    phase: StrEnum
    since_seq: int  # seq of the event or decision that moved it into ``phase``
    since: datetime | None = None  # the scheduler clock then (None before the first marker)
    illegal: str = ""  # reason of the last IllegalTransition refused for this object
    node: str = ""  # Pod: the node we bound it to, until spec.nodeName confirms it
    reported: PodGroupStatusView | None = None  # PodGroup (and lone Pod: PodScheduled): the last status we decided
    peak_tasks: int = 0  # PodGroup: the most tasks it ever had (S1)
    needs_second_pass: bool = False  # Workload: TAS re-placement wanted (S3)
    unhealthy_nodes: tuple[str, ...] = ()  # Workload: failed nodes it has pods on (S3)
    evicted: bool = False  # Pod: we decided to evict it; it holds its node until it is gone
    rejected: str = ""  # the reason of the Reject decision in force for it (S2), until it no longer applies
    queue_reported: QueueStatusView | None = None  # Queue: the last status we decided
    workload: WorkloadView | None = None  # Workload: the last status we decided, until the cluster shows a newer one
    nominated: str = ""  # Pod: pipelined onto this node, whose resources preemption is releasing, until it binds
    second_pass_failures: int = 0  # Workload: failed second-pass attempts since it needs one (S3)
    second_pass_at: datetime | None = None  # Workload: the next second pass waits for this clock (backoff)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (snapshot format version 1)."""
        return {
            "kind": self.kind,
            "uid": self.uid,
            "phase": self.phase.value,
            "sinceSeq": self.since_seq,
            "since": self.since.isoformat() if self.since else None,
            "illegal": self.illegal,
            "node": self.node,
            "reported": None if self.reported is None else [self.reported[0], [list(c) for c in self.reported[1]]],
            "peakTasks": self.peak_tasks,
            "needsSecondPass": self.needs_second_pass,
            "unhealthyNodes": list(self.unhealthy_nodes),
            "workload": None if self.workload is None else self.workload.to_dict(),
            "evicted": self.evicted,
            "rejected": self.rejected,
            "queueReported": None if self.queue_reported is None else [self.queue_reported[0], self.queue_reported[1]],
            "nominated": self.nominated,
            "secondPassFailures": self.second_pass_failures,
            "secondPassAt": self.second_pass_at.isoformat() if self.second_pass_at else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], phases: type[StrEnum]) -> MachineStatus:
        reported, decided, queue_view = data["reported"], data.get("workload"), data.get("queueReported")
        return cls(
            kind=data["kind"],
            uid=data["uid"],
            phase=phases(data["phase"]),
            since_seq=data["sinceSeq"],
            since=datetime.fromisoformat(data["since"]) if data["since"] else None,
            illegal=data["illegal"],
            node=data["node"],
            reported=None if reported is None else (reported[0], tuple((t, s, r, m) for t, s, r, m in reported[1])),
            peak_tasks=data["peakTasks"],
            needs_second_pass=data["needsSecondPass"],
            unhealthy_nodes=tuple(data["unhealthyNodes"]),
            workload=None if decided is None else WorkloadView.from_dict(decided),
            # Keys added within version 1 (a snapshot without them held their defaults).
            evicted=data.get("evicted", False),
            rejected=data.get("rejected", ""),
            queue_reported=None if queue_view is None else (queue_view[0], tuple((n, a) for n, a in queue_view[1])),
            nominated=data.get("nominated", ""),
            second_pass_failures=data.get("secondPassFailures", 0),
            second_pass_at=datetime.fromisoformat(data["secondPassAt"]) if data.get("secondPassAt") else None,
        )


@dataclass(slots=True)
class LocalQueueUsage:
    """A LocalQueue's Admission Fair Sharing usage (KEP-4136), as Kueue keeps it in the
    LocalQueue's ``status.fairSharing.admissionFairSharingStatus``: the decayed usage sampled at
    ``last_update`` and the entry penalties of the workloads admitted since, in milli-units."""

    uid: str
    last_update: datetime
    consumed: dict[str, float]
    penalty: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (snapshot format version 1); floats keep their exact value in JSON."""
        return {
            "uid": self.uid,
            "lastUpdate": self.last_update.isoformat(),
            "consumed": dict(sorted(self.consumed.items())),
            "penalty": dict(sorted(self.penalty.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LocalQueueUsage:
        return cls(
            uid=data["uid"],
            last_update=datetime.fromisoformat(data["lastUpdate"]),
            consumed={k: float(v) for k, v in data["consumed"].items()},
            penalty={k: float(v) for k, v in data["penalty"].items()},
        )
