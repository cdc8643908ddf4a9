"""History: one object's past, folded to a point of its cluster's stream (``--at``).

The cluster's events are folded by the same ``Engine`` as replay and the worker, up to and
including the cut (a seq, or the last SCHEDULE marker at or before a time), which leaves the
domain state the explanation reads; on the way, the watch events and decisions that touched the
object become its timeline, each with its seq, the scheduler clock then, and what changed.
From event files everything is folded; from the store, folding starts at the cluster's latest
snapshot when that lies before the cut (``lookup``), and the timeline is read by object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from domain.decisions import Decision
from domain.engine import Engine
from domain.events import InvalidEvent, ScheduleMarker, WatchEvent, parse_event
from domain.objects.meta import ObjectKey, timestamp
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from services.diff import summary
from services.pipeline import Record, encode_decision
from services.record_files import marker_clusters

KINDS = {
    "pod": "Pod",
    "podgroup": "PodGroup",
    "job": "Job",
    "queue": "Queue",
    "workload": "Workload",
    "clusterqueue": "ClusterQueue",
    "localqueue": "LocalQueue",
    "node": "Node",
}
CLUSTER_SCOPED = {"Queue", "ClusterQueue", "Node"}
IGNORED_PATHS = ("metadata.resourceVersion", "metadata.managedFields", "metadata.generation")
MAX_CHANGES = 6


class NotFound(LookupError):
    """The object never appears in the stream (up to the cut), or in more than one cluster."""


@dataclass(frozen=True, slots=True)
class Target:
    kind: str  # the Kubernetes kind
    namespace: str
    name: str

    @classmethod
    def parse(cls, kind: str, ref: str) -> Target:
        """``kind`` as on the command line (pod, podgroup, ...); ``ref`` NAMESPACE/NAME, or NAME
        for the cluster-scoped kinds."""
        real = KINDS[kind.lower()]
        namespace, _, name = ref.rpartition("/")
        if real in CLUSTER_SCOPED:
            namespace = ""
        return cls(real, namespace, name)

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(f"{self.namespace}/{self.name}" if self.namespace else self.name)

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"

    def is_event_of(self, event: WatchEvent) -> bool:
        meta = event.obj.metadata
        return event.obj.kind == self.kind and meta.name == self.name and meta.namespace == self.namespace

    def is_target_of(self, decision: Mapping[str, Any]) -> bool:
        target = decision["target"]
        return (target["kind"], target.get("namespace", ""), target["name"]) == (self.kind, self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class Cut:
    """Where to stop: after event ``seq``, or before the first SCHEDULE marker later than ``time``
    (None, None: the end of the stream)."""

    seq: int | None = None
    time: datetime | None = None

    @classmethod
    def parse(cls, value: str | None) -> Cut:
        if value is None:
            return cls()
        if value.isdigit():
            return cls(seq=int(value))
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))  # ValueError: a usage error
        if moment.tzinfo is None:
            raise ValueError(f"--at {value}: give a time zone (e.g. Z)")
        return cls(time=moment)

    def stops_before(self, state: ClusterState, event: object) -> bool:
        if self.seq is not None:
            return state.next_seq > self.seq
        return self.time is not None and isinstance(event, ScheduleMarker) and event.time > self.time


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the timeline."""

    seq: int
    time: str | None  # the scheduler clock at that point (None before the first marker)
    source: str  # "event" or "decision"
    what: str  # the watch event type, or the decision kind
    change: str  # what changed

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "time": self.time, "source": self.source, "what": self.what, "change": self.change}


@dataclass
class History:
    cluster: str
    at: int  # the last seq folded (-1: none)
    state: ClusterState
    timeline: list[Entry] = field(default_factory=list)


def flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A JSON value as {dotted path: leaf}."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flat(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and not all(isinstance(v, str | int | float) for v in value):
        out = {}
        for index, item in enumerate(value):
            out.update(flat(item, f"{prefix}[{index}]"))
        return out
    return {prefix: value}


def changes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
    """What a watch event changed in the object ("status.phase: Pending -> Running, ...")."""
    if old is None:
        return "first seen"
    before, after = flat(old), flat(new)
    paths = [
        p for p in sorted(set(before) | set(after)) if before.get(p) != after.get(p) and not p.startswith(IGNORED_PATHS)
    ]
    if not paths:
        return "no change"
    shown = [f"{p}: {_short(before.get(p))} -> {_short(after.get(p))}" for p in paths[:MAX_CHANGES]]
    more = f", and {len(paths) - MAX_CHANGES} more" if len(paths) > MAX_CHANGES else ""
    return ", ".join(shown) + more


def _short(value: Any) -> str:
    text = "-" if value is None else msgspec.json.encode(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


class Timeline:
    """Builds one object's timeline as its events and decisions go by."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.entries: list[Entry] = []
        self.last: Mapping[str, Any] | None = None

    def event(self, seq: int, clock: datetime | None, event_type: str, payload: Mapping[str, Any]) -> None:
        obj = payload.get("object") or {}
        what = "removed" if event_type == "DELETED" else changes(self.last, obj)
        self.last = None if event_type == "DELETED" else obj
        self.entries.append(Entry(seq, iso(clock), "event", event_type, what))

    def decision(self, clock: datetime | None, decision: Mapping[str, Any]) -> None:
        change = summary(decision, head=False)
        self.entries.append(Entry(decision["seq"], iso(clock), "decision", decision["kind"], change))

    def member(self, clock: datetime | None, decision: Mapping[str, Any]) -> None:
        """A decision about one of a gang's pods (its Bind, its eviction)."""
        change = f"{decision['target']['name']} {summary(decision, head=False)}"
        self.entries.append(Entry(decision["seq"], iso(clock), "member", decision["kind"], change))

    def in_order(self) -> list[Entry]:
        """The entries by seq; at one seq, the object's own before its members'."""
        return sorted(self.entries, key=lambda entry: entry.seq)


def members_of(state: ClusterState, target: Target) -> set[str]:
    """A PodGroup's pods at the cut: their decisions belong to the gang's timeline."""
    if target.kind != "PodGroup":
        return set()
    return {
        pod.metadata.name
        for pod in state.pods().values()
        if pod.metadata.namespace == target.namespace and pod.group_name() == target.name
    }


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else timestamp(moment)


def _decisions(decisions: Iterable[Decision]) -> list[dict[str, Any]]:
    return [msgspec.json.decode(encode_decision(d)) for d in decisions]


def from_records(
    records: list[Record], config: SchedulerConfig, target: Target, cut: Cut, cluster: str | None
) -> History:
    """Fold event-file records (as replay does, rejects skipped) to the cut of each cluster."""
    markers = marker_clusters(records)
    engine = Engine(config, on_markers=lambda c: c in markers)
    timelines: dict[str, Timeline] = {}
    pod_decisions: dict[str, list[tuple[datetime | None, dict[str, Any]]]] = {}  # maybe a gang member's
    stopped: set[str] = set()
    for record in records:
        try:
            event = parse_event(record.value)
        except InvalidEvent:
            continue
        name = event.cluster
        if name in stopped or (cluster is not None and name != cluster):
            continue
        state = engine.state(name)
        if cut.stops_before(state, event):
            stopped.add(name)
            continue
        processed = engine.handle(event)
        touched = isinstance(event, WatchEvent) and target.is_event_of(event)
        decisions = _decisions(processed.decisions)
        own = [d for d in decisions if target.is_target_of(d)]
        if touched or own:
            timeline = timelines.setdefault(name, Timeline(target))
            if touched:
                timeline.event(processed.seq, state.clock, event.type.value, msgspec.json.decode(record.value or b"{}"))
            for decision in own:
                timeline.decision(state.clock, decision)
        if target.kind == "PodGroup":
            pods = pod_decisions.setdefault(name, [])
            pods.extend((state.clock, d) for d in decisions if _is_pod_in(d, target.namespace))
    chosen = choose_cluster(target, sorted(timelines), cluster)
    state = engine.state(chosen)
    timeline = timelines.get(chosen, Timeline(target))
    members = members_of(state, target)
    for clock, decision in pod_decisions.get(chosen, []):
        if decision["target"]["name"] in members:
            timeline.member(clock, decision)
    return History(chosen, state.next_seq - 1, state, timeline.in_order())


def _is_pod_in(decision: Mapping[str, Any], namespace: str) -> bool:
    target = decision["target"]
    return bool(target["kind"] == "Pod" and target.get("namespace") == namespace)


def choose_cluster(target: Target, found: list[str], asked: str | None) -> str:
    """The cluster to explain: the one asked for, else the only one where the object appears."""
    if asked is not None:
        if asked not in found:
            raise NotFound(f"{target} does not appear in cluster {asked} (up to the cut)")
        return asked
    if not found:
        raise NotFound(f"{target} does not appear in the stream (up to the cut)")
    if len(found) > 1:
        raise NotFound(f"{target} appears in clusters {', '.join(found)}: choose one with --cluster")
    return found[0]
