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
from domain.lifecycle import job, pod_group, queue, workload
from domain.lifecycle.catalog import MACHINES
from domain.lifecycle.pod import PodFact
from domain.lifecycle.status import LocalQueueUsage, MachineStatus, PodGroupStatusView, QueueStatusView
from domain.lifecycle.table import IllegalTransition
from domain.lifecycle.workload import WorkloadView
from domain.objects.core import Pod
from domain.objects.kueue import Workload
from domain.objects.meta import ObjectKey, key_of


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
    machines: dict[str, dict[ObjectKey, MachineStatus]] = field(default_factory=dict)
    tombstones: set[str] = field(default_factory=set)
    counters: Counter[str] = field(default_factory=Counter)
    events_since_marker: int = 0
    # Admission Fair Sharing: each LocalQueue's decayed usage, sampled by Kueue cycles.
    local_queue_usage: dict[ObjectKey, LocalQueueUsage] = field(default_factory=dict)
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

    @property
    def assumed(self) -> dict[str, str]:
        """uid -> node of the binds we decided that the cluster has not confirmed yet."""
        return {s.uid: s.node for s in self.machines.get("Pod", {}).values() if s.node}

    @property
    def pod_group_status(self) -> dict[str, PodGroupStatusView]:
        """uid -> the last status we decided for each PodGroup."""
        return {s.uid: s.reported for s in self.machines.get("PodGroup", {}).values() if s.reported is not None}

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

    def apply(self, event: Inbound, *, seq: int) -> None:
        """Fold one event (number ``seq`` of this cluster) into the state."""
        self.events_since_marker = 0 if isinstance(event, ScheduleMarker) else self.events_since_marker + 1
        if isinstance(event, WatchEvent):
            self._apply_watch(event, seq)
        elif isinstance(event, ScheduleMarker):
            self.on_markers = True
            if self.clock is None or event.time > self.clock:
                self.clock = event.time
        elif isinstance(event, Bookmark):
            self.counters["bookmarks"] += 1
        elif isinstance(event, UnknownKind):
            self.counters[f"unknown_kind:{event.api_version}/{event.kind}"] += 1

    def decide_bind(self, pod: Pod, node: str, seq: int) -> bool:
        """Fold a Bind decision: the pod is Bound to ``node`` until the cluster confirms it."""
        status = self.status_of(pod)
        if status is None or not self._step(status, PodFact.BIND_DECIDED, seq):
            return False
        status.node = node
        status.nominated = ""
        self._note_change("Pod", key_of(pod.metadata))
        return True

    def decide_pipeline(self, pod: Pod, node: str) -> bool:
        """Record that a pod is pipelined onto ``node`` (or, with "", no longer is); False if unchanged."""
        status = self.status_of(pod)
        if status is None or status.nominated == node:
            return False
        status.nominated = node
        self._note_change("Pod", key_of(pod.metadata))
        return True

    def nominated_node(self, pod: Pod) -> str:
        """The node a pending pod is pipelined onto, waiting for preemption to release room there."""
        status = self.status_of(pod)
        return status.nominated if status is not None and status.uid == pod.metadata.uid else ""

    def decide_pod_group_status(self, group: KubeObject, view: PodGroupStatusView, seq: int) -> bool:
        """Fold a PodGroupStatus decision; False (recorded) if its phase is illegal now."""
        status = self.status_of(group)
        fact = pod_group.DECIDED[pod_group.PodGroupPhase(view[0])]
        if status is None or not self._step(status, fact, seq):
            return False
        status.reported = view
        self._note_change("PodGroup", key_of(group.metadata))
        return True

    def decide_job_status(self, obj: KubeObject, phase: job.JobPhase, seq: int) -> bool:
        """Fold a JobStatus decision; False when the job may not take ``phase`` from where it is."""
        status = self.status_of(obj)
        if status is None or status.phase not in job.DECIDED.get(phase, ()):
            return False
        return self._step(status, job.FACT_OF[phase], seq)

    def decide_workload_status(self, wl: Workload, view: WorkloadView, seq: int) -> bool:
        """Fold a WorkloadStatus decision; False (recorded) if the phase it shows is illegal now."""
        status = self.status_of(wl)
        if status is None or not self._step(status, workload.fact_of(wl.spec.active, view), seq):
            return False
        status.workload = view
        self._sync_second_pass(status, view)
        return True

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

    def decide_second_pass_backoff(self, wl: Workload, failures: int, at: datetime) -> None:
        """Fold a failed second pass (S3): ``failures`` so far; the next waits for ``at``."""
        status = self.status_of(wl)
        if status is not None and status.needs_second_pass:
            status.second_pass_failures, status.second_pass_at = failures, at

    def decide_evict(self, pod: Pod) -> bool:
        """Record an Evict decision; False when the pod was evicted already."""
        status = self.status_of(pod)
        if status is None or status.evicted:
            return False
        status.evicted = True
        self._note_change("Pod", key_of(pod.metadata))
        return True

    def decide_queue_status(self, obj: KubeObject, view: QueueStatusView, seq: int) -> bool:
        """Fold a QueueStatus decision: it reports the state the queue is in, and what it holds."""
        status = self.status_of(obj)
        fact = queue.DECIDED.get(view[0])
        if status is None or fact is None or not self._step(status, fact, seq):
            return False
        status.queue_reported = view
        return True

    def decide_queue_refused(self, obj: KubeObject, seq: int) -> bool:
        """Fold a Reject of a queue (S2); False when it was refused already, or cannot be now."""
        status = self.status_of(obj)
        if status is None or status.phase is queue.QueuePhase.REJECTED:
            return False
        return self._step(status, queue.QueueFact.CREATION_REFUSED, seq)

    def decide_reject(self, obj: KubeObject, reason: str, seq: int) -> bool:
        """Record a Reject decision (S2); False when the same reason is already in force."""
        status = self.status_of(obj)
        if status is None or status.rejected == reason:
            return False
        status.rejected = reason
        return True

    def withdraw_reject(self, obj: KubeObject) -> None:
        """The reason for a Reject no longer applies (its queue became a leaf, or it moved)."""
        status = self.status_of(obj)
        if status is not None:
            status.rejected = ""

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

    def decide_local_queue_usage(self, key: ObjectKey, usage: LocalQueueUsage) -> None:
        """Fold a LocalQueue's new Admission Fair Sharing usage (a sample or an entry penalty)."""
        self.local_queue_usage[key] = usage

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

    def _apply_watch(self, event: WatchEvent, seq: int) -> None:
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
        self.of_kind(kind)[key] = obj
        if isinstance(obj, Pod) and obj.spec.node_name and status is not None:
            status.node = ""
        if isinstance(obj, Pod) and (group := obj.group_name()):
            # A PodGroup that had a pod is not new any more (SEEDS S1): enqueue leaves it alone.
            pg_status = self.machines.get("PodGroup", {}).get(ObjectKey(f"{obj.metadata.namespace}/{group}"))
            if pg_status is not None:
                pg_status.peak_tasks = max(pg_status.peak_tasks, 1)
