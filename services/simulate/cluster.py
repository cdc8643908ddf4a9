"""The simulated cluster: the API server and kubelets the scheduler talks to, on simulated time.

It holds the objects it created (nodes, Volcano Queues, each job's PodGroup and Pods), writes
every change as a watch event into the stream and feeds it to an in-process ``Engine`` (the
same domain code as replay, given each event as ``parse_event`` reads its line: ``parse_watch``,
without decoding what was just encoded), and applies the decisions of each SCHEDULE marker as
a cluster would:

* ``Bind``: the pod gets ``spec.nodeName`` and phase Running (one MODIFIED); it finishes
  ``duration`` seconds later (MODIFIED Succeeded), or never when the trace does not know. Its
  ``status.startTime`` is written only when the scheduler reads it: for a job with a runtime
  estimate, or for every pod when the config keeps a runtime history (the rest of the streams
  stay as they were);
* ``PodGroupStatus``: the PodGroup's status becomes the decided phase and conditions; once
  it is Completed the job is deleted, pods first and then the PodGroup (the garbage
  collector's order);
* ``QueueStatus``: the Queue's status (state, allocated) is written back;
* ``Evict``: the pod is deleted (MODIFIED with ``deletionTimestamp``, then DELETED) and its
  controller recreates it under the same name with a new uid: the task starts over.

Jobs for Kueue are Workloads instead, and ``WorkloadStatus`` and a Workload's ``Evict`` act on
them as ``workloads`` describes, through the cluster's public methods (``meta``, ``emit``,
``pod_object``, ``release``, ``track``, ``delete_group``) and attributes. Other decisions (Job
statuses, Rejects) have no object here to act on; they are counted in ``ignored``.
"""

from __future__ import annotations

import functools
import uuid
from collections import Counter
from typing import Any, BinaryIO

import msgspec

from domain.decisions import Bind, Decision, DecisionKind, PodGroupStatus, QueueStatus
from domain.engine import Engine
from domain.events import parse_event, parse_watch
from domain.quantity import ResourceList, add, parse_milli
from domain.scheduler import registry
from domain.scheduler.config import SchedulerConfig
from services.pipeline import encode_decision
from services.simulate.clock import EventQueue, wall
from services.simulate.objects import KueueSide, SimGroup, SimPod
from services.simulate.outcome import JobRecord, Outcome
from services.traces.events import PODGROUP_API, node_manifest, pod_group_manifest, pod_manifest
from services.traces.model import Job, Node

POLICY = "schedstream"
_UIDS = uuid.UUID("0b7e3c52-3f5e-4d8a-9a4b-5e2f6c1d7a90")


# An object's uid and each timestamp are made once (``SimCluster.meta``, ``_wall``): a PodGroup's
# status and each move of a pod write the object again, and many objects move at one instant.
_wall = functools.lru_cache(maxsize=1 << 16)(wall)


@functools.lru_cache(maxsize=1 << 16)
def _uid(path: str) -> str:
    return str(uuid.uuid5(_UIDS, path))


_ENCODE = msgspec.json.Encoder()


class SimCluster:
    """One cluster's objects, its event stream and the scheduler that watches it."""

    def __init__(
        self,
        nodes: tuple[Node, ...],
        config: SchedulerConfig,
        events_out: BinaryIO,
        decisions_out: BinaryIO,
        *,
        cluster: str = "default",
        namespace: str = "default",
        scheduler: str = "volcano",
    ) -> None:
        self.engine = Engine(config, on_markers=lambda _: True)
        self.echo_is_change = registry.reads_clock(config)  # see ``_group_status``
        self.start_times = bool(config.runtime_history_label)  # every running pod's startTime (see above)
        self.events_out = events_out
        self.decisions_out = decisions_out
        self.cluster = cluster
        self.namespace = namespace
        self.nodes = nodes
        self.scheduler = scheduler  # renders the jobs that do not name their own
        self.workloads: KueueSide | None = None  # set before the first Kueue job arrives
        self.now = 0.0
        self.changed_since: float | None = None  # earliest change the scheduler has not cycled over
        self.last_marker: float | None = None  # time of the last SCHEDULE marker
        self.only_echoes = False  # since it, no event but echoes (``Engine.handle``'s ``echoes``)
        self.queue = EventQueue()
        self.groups: dict[str, SimGroup] = {}
        self.pods: dict[str, SimPod] = {}
        self.allocated: ResourceList = {}
        self.queue_allocated: dict[str, ResourceList] = {}  # per job queue (Volcano Queue or LocalQueue)
        self.waiting = 0
        self.ignored: Counter[str] = Counter()
        capacity: ResourceList = {}
        for node in nodes:
            add(capacity, {name: parse_milli(amount) for name, amount in node.allocatable.items()})
        self.outcome = Outcome(POLICY, capacity, {})
        self._resource_version = 0
        self.lines = 0  # events and markers written
        self.decided: Counter[str] = Counter()

    # -- the stream -------------------------------------------------------------------------

    def meta(
        self, kind: str, name: str, created: float, attempt: int = 0, *, namespaced: bool = True, uid: str = ""
    ) -> dict[str, Any]:
        """An object's metadata: ``name``, a uid fixed by (cluster, kind, namespace, name,
        ``attempt``; ``uid`` when it was made before), ``creationTimestamp`` at simulated second
        ``created``, and our namespace unless the kind is cluster-scoped."""
        namespace = self.namespace if namespaced else ""
        uid = uid or _uid(f"{self.cluster}/{kind}/{namespace}/{name}/{attempt}")
        meta: dict[str, Any] = {"name": name, "uid": uid, "creationTimestamp": _wall(created)}
        if namespaced:
            meta["namespace"] = namespace
        return meta

    def pod_meta(self, pod: SimPod) -> dict[str, Any]:
        """``meta`` of the pod's current attempt. Its uid is kept on the pod for that attempt: a
        pod is written at least three times (created, bound, finished), often too far apart for
        ``_uid``'s cache to still hold it."""
        kept = pod.uid
        uid = kept[1] if kept is not None and kept[0] == pod.attempt else ""
        meta = self.meta("Pod", pod.name, pod.created, pod.attempt, uid=uid)
        pod.uid = (pod.attempt, meta["uid"])
        return meta

    def emit(self, event_type: str, obj: dict[str, Any], *, echo: bool = False) -> None:
        """Write ``obj`` as a watch event of ``event_type`` (with the next resourceVersion) into
        the stream and fold it into the scheduler's state; the period now has a change, unless
        it is an ``echo`` (the cluster writing back a status the scheduler decided) and no
        plugin reads the instant (``_group_status``)."""
        self._resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self._resource_version)
        line = _ENCODE.encode({"type": event_type, "cluster": self.cluster, "object": obj})
        self.events_out.write(line + b"\n")
        self.lines += 1
        self.engine.handle(parse_watch(self.cluster, event_type, obj))  # decides nothing by itself
        if echo and not self.echo_is_change:
            return
        if not echo:
            self.only_echoes = False
        if self.changed_since is None:
            self.changed_since = self.now

    def schedule(self, time: float) -> list[Decision]:
        """A SCHEDULE marker at ``time``: one cycle; its decisions are applied at that time."""
        self.now = self.last_marker = time
        self.changed_since = None
        line = _ENCODE.encode({"type": "SCHEDULE", "cluster": self.cluster, "time": _wall(time)})
        self.events_out.write(line + b"\n")
        self.lines += 1
        decisions = self.engine.handle(parse_event(line), echoes=self.only_echoes).decisions
        self.only_echoes = True
        for decision in decisions:
            self.decisions_out.write(encode_decision(decision) + b"\n")
            self.decided[decision.kind.value] += 1
        for decision in decisions:
            self._apply(decision)
        self.track()
        return decisions

    def track(self) -> None:
        """Record the allocation and the waiting jobs at the current time in the outcome."""
        self.outcome.track(self.now, self.allocated, self.waiting, self.queue_allocated)

    # -- objects ----------------------------------------------------------------------------

    def add_nodes(self) -> None:
        for node in self.nodes:
            self.emit("ADDED", node_manifest(node, self.meta("Node", node.name, 0, namespaced=False)))
        self.track()

    def add_queues(self, names: list[str]) -> None:
        for name in names:
            self.emit("ADDED", self._queue_object(name, {"state": "Open"}))

    def _queue_object(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        meta = self.meta("Queue", name, 0, namespaced=False)
        return {"apiVersion": PODGROUP_API, "kind": "Queue", "metadata": meta, "spec": {"weight": 1}, "status": status}

    def add_objects(self, objects: list[dict[str, Any]]) -> None:
        """Cluster policy objects (Kueue's flavors and queues), namespaced ones in ours."""
        for obj in objects:
            namespaced = obj["kind"] == "LocalQueue"
            meta = {**self.meta(obj["kind"], obj["metadata"]["name"], 0, namespaced=namespaced), **obj["metadata"]}
            self.emit("ADDED", {**obj, "metadata": meta})

    def is_kueue(self, job: Job) -> bool:
        return (job.scheduler or self.scheduler) == "kueue"

    def submit(self, job: Job) -> None:
        """The job's PodGroup, then its pending Pods, at the current time (its submit time);
        for Kueue, its Workload (pods come with the admission)."""
        requests = {name: parse_milli(amount) for name, amount in job.requests.items()}
        kueue = self.is_kueue(job)
        pods = [] if kueue else [SimPod(job, index, requests, created=self.now) for index in range(job.tasks)]
        group = SimGroup(job, JobRecord(job), pods)
        self.groups[job.id] = group
        self.outcome.jobs[job.id] = group.record
        if kueue:
            assert self.workloads is not None
            self.emit("ADDED", self.workloads.workload_object(group))
            self.waiting += 1
            self.track()
            return
        self.emit("ADDED", self._group_object(group))
        for pod in pods:
            self.pods[pod.name] = pod
            self.emit("ADDED", self.pod_object(pod))
        self.waiting += 1
        self.track()

    def _group_object(self, group: SimGroup) -> dict[str, Any]:
        job = group.job
        manifest = pod_group_manifest(job, self.meta("PodGroup", job.id, job.submit))
        manifest["status"] = dict(group.status)
        return manifest

    def pod_object(self, pod: SimPod, *, deleting: bool = False) -> dict[str, Any]:
        """The pod as the API server holds it now (its node and phase), ``deleting`` with a
        ``deletionTimestamp``: a Kueue job's pod as ``workloads`` renders it, else its PodGroup's."""
        if pod.admitted is not None and self.workloads is not None:
            manifest = self.workloads.pod_object(pod, pod.admitted)
        else:
            manifest = pod_manifest(pod.job, self.pod_meta(pod))
        if pod.node:
            manifest["spec"]["nodeName"] = pod.node
        manifest["status"] = {"phase": pod.phase}
        if pod.node and (self.start_times or pod.job.estimate is not None):
            manifest["status"]["startTime"] = _wall(pod.started)
        if deleting:
            manifest["metadata"]["deletionTimestamp"] = _wall(self.now)
        return manifest

    # -- decisions --------------------------------------------------------------------------

    def _apply(self, decision: Decision) -> None:
        # A kind's fields are read from the decision itself: ``decision.fields`` converts all of it.
        target = decision.target
        if isinstance(decision, Bind) and target.name in self.pods:
            self._bind(self.pods[target.name], decision.node)
        elif isinstance(decision, PodGroupStatus) and target.name in self.groups:
            self._group_status(self.groups[target.name], decision)
        elif isinstance(decision, QueueStatus):
            status = {"state": decision.state, "allocated": decision.allocated}
            self.emit("MODIFIED", self._queue_object(target.name, status))
        elif decision.kind is DecisionKind.EVICT and target.kind == "Pod" and target.name in self.pods:
            self._evict(self.pods[target.name])
        elif self.workloads is not None and target.kind == "Workload" and target.name in self.groups:
            self.workloads.apply(self.groups[target.name], decision)
        else:
            self.ignored[decision.kind.value] += 1

    def _bind(self, pod: SimPod, node: str) -> None:
        pod.node, pod.phase, pod.started = node, "Running", self.now
        add(self.allocated, pod.requests)
        add(self.queue_allocated.setdefault(pod.job.queue, {}), pod.requests)
        self.emit("MODIFIED", self.pod_object(pod))
        group = self.groups[pod.job.id]
        running = sum(1 for other in group.pods if other.phase == "Running")
        if group.waiting and running >= pod.job.gang:
            group.waiting = False
            self.waiting -= 1
            if group.record.start is None:
                group.record.start = self.now
        if pod.admitted is not None and self.workloads is not None:
            self.workloads.started(group)
        if pod.job.duration is not None:
            attempt = pod.attempt
            self.queue.at(self.now + pod.job.duration, lambda: self._finish(pod, attempt))

    def release(self, pod: SimPod) -> None:
        """Take a running pod's requests off the cluster's and its queue's allocation."""
        freed = {name: -amount for name, amount in pod.requests.items()}
        add(self.allocated, freed)
        add(self.queue_allocated[pod.job.queue], freed)

    def _finish(self, pod: SimPod, attempt: int) -> None:
        if pod.attempt != attempt or pod.phase != "Running":
            return  # evicted (and maybe recreated) since this run began
        pod.phase = "Succeeded"
        self.release(pod)
        self.emit("MODIFIED", self.pod_object(pod))
        group = self.groups[pod.job.id]
        if all(other.phase == "Succeeded" for other in group.pods):
            group.record.end = self.now
            if pod.admitted is not None and self.workloads is not None:
                self.workloads.finish(group)
        self.track()

    def _group_status(self, group: SimGroup, decision: PodGroupStatus) -> None:
        # Read from the decision's own fields: ``decision.fields`` would convert all of it.
        group.status = {"phase": decision.phase, "conditions": msgspec.to_builtins(decision.conditions)}
        for condition in decision.conditions:
            if condition.type == "Unschedulable" and condition.status == "True":
                self.outcome.pending_reasons[condition.reason or "Unknown"] += 1
        # The cluster writing back a status we decided changes nothing a cycle reads but the
        # instant, so it asks for no cycle of its own where no plugin reads the instant; where
        # one does, its marker's cycle runs only once what the last one read of the instant may
        # read otherwise (``Engine.handle``'s ``echoes``).
        self.emit("MODIFIED", self._group_object(group), echo=True)
        if decision.phase == "Completed":
            self.delete_group(group, self._group_object(group))

    def delete_group(self, group: SimGroup, manifest: dict[str, Any]) -> None:
        """The cascade of a finished job: its pods go first, then ``manifest`` (its PodGroup or
        Workload), with a ``deletionTimestamp``."""
        for pod in group.pods:
            self.emit("DELETED", self.pod_object(pod, deleting=True))
            del self.pods[pod.name]
        manifest["metadata"]["deletionTimestamp"] = _wall(self.now)
        self.emit("DELETED", manifest)
        del self.groups[group.job.id]

    def _evict(self, pod: SimPod) -> None:
        if pod.phase == "Running":
            self.release(pod)
        self.emit("MODIFIED", self.pod_object(pod, deleting=True))
        self.emit("DELETED", self.pod_object(pod, deleting=True))
        pod.attempt, pod.created, pod.node, pod.phase = pod.attempt + 1, self.now, "", "Pending"
        self.groups[pod.job.id].record.restarts += 1
        self.emit("ADDED", self.pod_object(pod))
