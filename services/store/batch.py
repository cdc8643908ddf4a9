"""Batch: the rows of one processed batch, written by ``Store.write_batch`` in one transaction.

The store's column names live here and in ``tables``: the pipeline hands over domain values
(events, decisions, rejects, cluster progress, snapshots, outbox messages) and the batch makes
the rows, so no other module spells a column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.decisions import Decision
from domain.events import Inbound, ScheduleMarker, UnknownKind, WatchEvent


@dataclass(frozen=True, slots=True)
class Position:
    """Where a line came from: its Kafka topic, partition and offset (None for a file)."""

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass
class Batch:
    """Rows of one processed batch, written in one transaction."""

    events: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    outbox: list[dict[str, Any]] = field(default_factory=list)
    statuses: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)
    progress: dict[tuple[str, str, int], int] = field(default_factory=dict)

    def add_event(self, event: Inbound, seq: int, payload: str, at: Position) -> None:
        """Event number ``seq`` of its cluster, and its line (``payload``) as it came in."""
        row: dict[str, Any] = {
            "cluster": event.cluster, "seq": seq,
            "type": "SCHEDULE" if isinstance(event, ScheduleMarker) else event.__class__.__name__,
            "api_version": "", "kind": "", "namespace": "", "name": "", "uid": "", "payload": payload,
            "topic": at.topic, "partition": at.partition, "offset": at.offset,
        }  # fmt: skip
        if isinstance(event, WatchEvent):
            meta = event.obj.metadata
            row.update(type=event.type.value, api_version=event.obj.api_version, kind=event.obj.kind)
            row.update(namespace=meta.namespace, name=meta.name, uid=meta.uid)
        elif isinstance(event, UnknownKind):
            row.update(type=event.type.value, api_version=event.api_version, kind=event.kind)
        elif not isinstance(event, ScheduleMarker):
            row["type"] = "BOOKMARK"
        self.events.append(row)

    def event_lines(self, cluster: str) -> list[str]:
        """The lines of this batch's events of ``cluster``, in order."""
        return [row["payload"] for row in self.events if row["cluster"] == cluster]

    def add_decision(self, decision: Decision, ordinal: int, payload: str) -> None:
        """A decision (``payload``, its JSON), number ``ordinal`` of its event's; it is also the
        latest status of its target."""
        target, cluster = decision.target, decision.cluster
        self.decisions.append({
            "id": decision.id, "cluster": cluster, "seq": decision.seq, "ordinal": ordinal,
            "kind": decision.kind.value, "target_kind": target.kind, "namespace": target.namespace,
            "name": target.name, "uid": target.uid, "payload": payload,
        })  # fmt: skip
        self.statuses[(cluster, target.kind, target.namespace, target.name)] = {
            "cluster": cluster, "kind": target.kind, "namespace": target.namespace, "name": target.name,
            "uid": target.uid, "decision_id": decision.id, "seq": decision.seq, "payload": payload,
        }  # fmt: skip

    def add_reject(self, position: str, reason: str, payload: str, at: Position) -> None:
        self.rejects.append({
            "position": position, "reason": reason, "payload": payload,
            "topic": at.topic, "partition": at.partition, "offset": at.offset,
        })  # fmt: skip

    def publish(self, topic: str, key: str, payload: str) -> None:
        """A message for ``topic``, sent once the batch is committed (the outbox)."""
        self.outbox.append({"topic": topic, "key": key, "payload": payload})

    def set_cluster(self, cluster: str, next_seq: int, clock: str, partition: int | None) -> None:
        self.clusters[cluster] = {"cluster": cluster, "next_seq": next_seq, "clock": clock, "partition": partition}

    def next_seq(self, cluster: str) -> int:
        return self.clusters[cluster]["next_seq"]

    def add_snapshot(self, cluster: str, version: int, next_seq: int, payload: str) -> None:
        self.snapshots[cluster] = {"cluster": cluster, "version": version, "next_seq": next_seq, "payload": payload}
