"""ClusterState: everything the scheduler knows about one cluster, folded from its events.

This is the informer cache of the scheduler: whole objects by kind and key, the uids that were
deleted (tombstones, so a late event cannot resurrect them), the binds we decided but the
cluster has not confirmed yet (assumed), and the last PodGroup status we emitted. Explicit
per-kind lifecycle machines replace the plain upserts here as they land (issue 3).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from domain.events import Bookmark, EventType, Inbound, ScheduleMarker, UnknownKind, WatchEvent
from domain.kinds import KubeObject
from domain.objects.core import Pod
from domain.objects.meta import ObjectKey, key_of

PodGroupStatusView = tuple[str, tuple[tuple[str, str, str, str], ...]]
"""(phase, ((type, status, reason, message), ...)) as compared for change detection."""


def _newer_or_equal(old: str, new: str) -> bool:
    """True if ``new`` is not older than ``old``; resourceVersions compare only when numeric."""
    if old.isdigit() and new.isdigit():
        return int(new) >= int(old)
    return True


@dataclass
class ClusterState:
    name: str
    next_seq: int = 0
    clock: datetime | None = None
    on_markers: bool = False
    objects: dict[str, dict[ObjectKey, KubeObject]] = field(default_factory=dict)
    tombstones: set[str] = field(default_factory=set)
    assumed: dict[str, str] = field(default_factory=dict)
    pod_group_status: dict[str, PodGroupStatusView] = field(default_factory=dict)
    gang_peak: dict[str, int] = field(default_factory=dict)
    counters: Counter[str] = field(default_factory=Counter)
    events_since_marker: int = 0

    def of_kind(self, kind: str) -> dict[ObjectKey, KubeObject]:
        return self.objects.setdefault(kind, {})

    def pods(self) -> dict[ObjectKey, Pod]:
        return self.of_kind("Pod")  # type: ignore[return-value]

    def node_of(self, pod: Pod) -> str:
        """The node a pod runs on: its own spec, else the bind we decided for it."""
        return pod.spec.node_name or self.assumed.get(pod.metadata.uid, "")

    def wants_cycle(self) -> bool:
        """Whether a marker now could change anything: new events, or pods still waiting."""
        return self.events_since_marker > 0 or any(
            p.status.phase == "Pending" and not self.node_of(p) for p in self.pods().values()
        )

    def apply(self, event: Inbound) -> None:
        """Fold one event into the state (a SCHEDULE marker only moves the clock)."""
        self.events_since_marker = 0 if isinstance(event, ScheduleMarker) else self.events_since_marker + 1
        if isinstance(event, WatchEvent):
            self._apply_watch(event)
        elif isinstance(event, ScheduleMarker):
            self.on_markers = True
            if self.clock is None or event.time > self.clock:
                self.clock = event.time
        elif isinstance(event, Bookmark):
            self.counters["bookmarks"] += 1
        elif isinstance(event, UnknownKind):
            self.counters[f"unknown_kind:{event.api_version}/{event.kind}"] += 1

    def _apply_watch(self, event: WatchEvent) -> None:
        obj = event.obj
        uid, key = obj.metadata.uid, key_of(obj.metadata)
        store = self.of_kind(obj.kind)
        if uid and uid in self.tombstones:
            self.counters["stale_after_delete"] += 1
            return
        current = store.get(key)
        if event.type is EventType.DELETED:
            if current is not None and (not uid or current.metadata.uid in ("", uid)):
                del store[key]
            if uid:
                self.tombstones.add(uid)
                self.assumed.pop(uid, None)
            return
        if current is not None and current.metadata.uid == uid:
            if not _newer_or_equal(current.metadata.resource_version, obj.metadata.resource_version):
                self.counters["stale_version"] += 1
                return
        elif current is not None and current.metadata.uid:
            # A new object under an old name: the old one is gone for good.
            self.tombstones.add(current.metadata.uid)
            self.assumed.pop(current.metadata.uid, None)
        store[key] = obj
        if isinstance(obj, Pod) and obj.spec.node_name:
            self.assumed.pop(uid, None)
