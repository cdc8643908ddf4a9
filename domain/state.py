"""ClusterState: everything the scheduler knows about one cluster, folded from its events.

This is the informer cache of the scheduler, with a lifecycle machine per object: whole
objects by kind and key, beside each one the status our machine holds for it (its phase and
the fields derived from it, see ``MachineStatus``), and the uids that were deleted
(tombstones). Informer semantics:

* a duplicate (same uid and resourceVersion) or an older resourceVersion changes nothing;
* DELETED removes the object and leaves a tombstone, also for an object we never saw, so a
  late ADDED or MODIFIED of that uid cannot resurrect it;
* a new uid under a known name is a new object, and the old uid is tombstoned;
* a relist (ADDED of a known object) is an ordinary update, idempotent when nothing changed;
* BOOKMARK only advances progress (a counter).

Every watch event and every decision is a fact stepped through the kind's ``Lifecycle``;
an ``IllegalTransition`` is recorded on the object and counted, and the event or decision is
not applied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from domain.events import Bookmark, EventType, Inbound, ScheduleMarker, UnknownKind, WatchEvent
from domain.kinds import KubeObject
from domain.lifecycle import workload
from domain.lifecycle.catalog import MACHINES
from domain.lifecycle.status import LocalQueueUsage, MachineStatus
from domain.lifecycle.table import IllegalTransition
from domain.lifecycle.workload import WorkloadView
from domain.objects.core import Pod
from domain.objects.kueue import Workload
from domain.objects.meta import ObjectKey, key_of
from domain.recorded import HeldRoom, Recording
from domain.runtime_history import RuntimeHistory


def _newer_or_equal(old: str, new: str) -> bool:
    """True if ``new`` is not older than ``old``; resourceVersions compare only when numeric."""
    if old.isdigit() and new.isdigit():
        return int(new) >= int(old)
    return True


@dataclass
class ClusterState(Recording):
    name: str
    next_seq: int = 0
    clock: datetime | None = None
    on_markers: bool = False
    objects: dict[str, dict[ObjectKey, KubeObject]] = field(default_factory=dict)
    machines: dict[str, dict[ObjectKey, MachineStatus]] = field(default_factory=dict)
    tombstones: set[str] = field(default_factory=set)
    counters: Counter[str] = field(default_factory=Counter)
    events_since_marker: int = 0  # watch events since the last marker (a bookmark or a kind we skip reads nothing)
    # Admission Fair Sharing: each LocalQueue's decayed usage, sampled by Kueue cycles.
    local_queue_usage: dict[ObjectKey, LocalQueueUsage] = field(default_factory=dict)
    # Each user's last runtimes (``runtime_history``), kept when the config names a user label.
    runtime_history: RuntimeHistory = field(default_factory=RuntimeHistory)
    # The room gangs past their waiting bound held in the last cycle (``HeldRooms``): for
    # operators (metrics, the status page); it decides nothing, so it is not snapshotted.
    held: tuple[HeldRoom, ...] = field(default=(), compare=False)
    # Who hears of each change this state folds (an object added, changed or deleted by a watch
    # event, or its machine status changed by a recorded decision): the Engine attaches its
    # cache's ``Changes`` here. Not a fact: not compared, printed or snapshotted.
    listener: Callable[[str, ObjectKey], None] | None = field(default=None, repr=False, compare=False)

    def of_kind(self, kind: str) -> dict[ObjectKey, KubeObject]:
        return self.objects.setdefault(kind, {})

    def pods(self) -> dict[ObjectKey, Pod]:
        return self.of_kind("Pod")  # type: ignore[return-value]

    def status_of(self, obj: KubeObject) -> MachineStatus | None:
        return self.machines.get(obj.kind, {}).get(key_of(obj.metadata))

    def phase_of(self, kind: str, key: ObjectKey) -> StrEnum | None:
        status = self.machines.get(kind, {}).get(key)
        return None if status is None else status.phase

    def node_of(self, pod: Pod, key: ObjectKey | None = None) -> str:
        """The node a pod runs on: its own spec, else the bind we decided for it. ``key``, the
        pod's key when the caller has it, saves building it again (a hot path in snapshots)."""
        if pod.spec.node_name:
            return pod.spec.node_name
        status = self.status_of(pod) if key is None else self.machines.get("Pod", {}).get(key)
        return status.node if status is not None and status.uid == pod.metadata.uid else ""

    def wants_cycle(self) -> bool:
        """Whether a marker now could change anything: new events, pods or workloads still waiting."""
        return (
            self.events_since_marker > 0
            or any(p.status.phase == "Pending" and not self.node_of(p) for p in self.pods().values())
            or any(s.needs_second_pass or s.phase in workload.WAITS for s in self.machines.get("Workload", {}).values())
        )

    def apply(self, event: Inbound, *, seq: int, history_label: str = "") -> None:
        """Fold one event (number ``seq`` of this cluster) into the state; ``history_label``, when
        given, names the pod label whose values are users in the runtime history."""
        if isinstance(event, WatchEvent):
            self.events_since_marker += 1
            self._apply_watch(event, seq, history_label)
        elif isinstance(event, ScheduleMarker):
            self.events_since_marker = 0
            self.on_markers = True
            if self.clock is None or event.time > self.clock:
                self.clock = event.time
            if self.runtime_history.ended:
                self.runtime_history.settle(self.clock)
        elif isinstance(event, Bookmark):
            self.counters["bookmarks"] += 1
        elif isinstance(event, UnknownKind):
            self.counters[f"unknown_kind:{event.api_version}/{event.kind}"] += 1

    def workload_view(self, wl: Workload) -> WorkloadView:
        """The status a workload has now: the one we last decided, else the cluster's."""
        status = self.status_of(wl)
        decided = status.workload if status is not None else None
        return decided if decided is not None else workload.view_of(wl)

    @staticmethod
    def _sync_second_pass(status: MachineStatus, view: WorkloadView) -> None:
        # S3: derived in the same fold as the status it depends on, never carried over.
        holds = status.phase in workload.HOLDS_QUOTA
        status.unhealthy_nodes = view.unhealthy_nodes if holds else ()
        status.needs_second_pass = holds and workload.needs_second_pass(view)
        if not status.needs_second_pass:  # its backoff ends with the need
            status.second_pass_failures, status.second_pass_at = 0, None

    def _step(self, status: MachineStatus, fact: StrEnum, seq: int) -> bool:
        lifecycle = MACHINES[status.kind].lifecycle
        try:
            target = lifecycle.step(status.phase, fact)
        except IllegalTransition as exc:
            status.illegal = exc.reason
            self.counters["illegal_transition"] += 1
            self.counters[f"illegal_transition:{status.kind}"] += 1
            return False
        if target != status.phase:
            status.phase, status.since_seq, status.since = target, seq, self.clock
        return True

    def _forget(self, kind: str, key: ObjectKey, uid: str) -> None:
        self._note_change(kind, key)
        self.of_kind(kind).pop(key, None)
        self.machines.get(kind, {}).pop(key, None)
        if kind == "LocalQueue":
            self.local_queue_usage.pop(key, None)
        if uid:
            self.tombstones.add(uid)

    def _note_change(self, kind: str, key: ObjectKey) -> None:
        if self.listener is not None:
            self.listener(kind, key)

    def _apply_watch(self, event: WatchEvent, seq: int, history_label: str) -> None:
        obj = event.obj
        uid, key, kind = obj.metadata.uid, key_of(obj.metadata), obj.kind
        if uid and uid in self.tombstones:
            self.counters["stale_after_delete"] += 1
            return
        current = self.of_kind(kind).get(key)
        same = current is not None and (not uid or current.metadata.uid in ("", uid))
        machine = MACHINES.get(kind)
        status = self.machines.get(kind, {}).get(key) if same else None
        if event.type is EventType.DELETED:
            if status is not None and machine is not None and not self._step(status, machine.deleted, seq):
                return
            if same:
                self._forget(kind, key, uid)
            else:
                self.counters["deleted_unknown"] += 1
                if uid:
                    self.tombstones.add(uid)
            return
        if current is not None and same:
            old, new = current.metadata.resource_version, obj.metadata.resource_version
            if old and old == new:
                self.counters["duplicate"] += 1
                return
            if not _newer_or_equal(old, new):
                self.counters["stale_version"] += 1
                return
        elif current is not None:
            self.counters["recreated"] += 1
            self._forget(kind, key, current.metadata.uid)
        if machine is not None:
            if status is None:
                status = MachineStatus(kind, uid, machine.lifecycle.initial, since_seq=seq, since=self.clock)
            if not self._step(status, machine.observe(obj), seq):
                return
            self.machines.setdefault(kind, {})[key] = status
            if isinstance(obj, Workload):
                if isinstance(current, Workload) and current.status != obj.status:
                    status.workload = None  # the cluster's newer status supersedes the one we decided
                self._sync_second_pass(status, status.workload or workload.view_of(obj))
        self._note_change(kind, key)
        if history_label and self.on_markers and isinstance(obj, Pod):  # runtimes need the markers' time
            last = current if same and isinstance(current, Pod) else None
            self.runtime_history.saw(last, obj, history_label)
        self.of_kind(kind)[key] = obj
        if isinstance(obj, Pod) and obj.spec.node_name and status is not None:
            status.node = ""
        if isinstance(obj, Pod) and (group := obj.group_name()):
            # A PodGroup that had a pod is not new any more (SEEDS S1): enqueue leaves it alone.
            pg_status = self.machines.get("PodGroup", {}).get(ObjectKey(f"{obj.metadata.namespace}/{group}"))
            if pg_status is not None:
                pg_status.peak_tasks = max(pg_status.peak_tasks, 1)
