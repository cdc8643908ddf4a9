"""What a Volcano object waits for, read from the scheduler's own snapshot of the state (the
picture the next cycle starts from): where each member of a gang is, which nodes fell short for
each pending member and by how much, the topology domains a gang may use with what is free in
each, preemption in progress, and its queue's share against what it deserves.

Room that gangs past their waiting bound hold (``sla``, ``reservation``) lives only inside a
cycle, so the free room a job waits for is read from a dry run of the next cycle
(``volcano_cycle.dry_run``) as allocate showed it to the job: less what jobs before it took and
gangs held from it. So it also tells the room a gang holds, and on which nodes a job would fit
but for room held for whom."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain import quantity
from domain.objects.core import Pod
from domain.objects.meta import ObjectKey, key_of
from domain.quantity import ResourceList
from domain.recorded import HeldRoom
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.network_domains import HYPERNODE, where_key
from domain.scheduler.plugins import proportion
from domain.scheduler.predicates import fit_failures
from domain.scheduler.queue_shares import real_capabilities
from domain.scheduler.session import Seen
from domain.scheduler.snapshot import Snapshot
from domain.state import ClusterState
from services.explain.history import iso

INSUFFICIENT = "Insufficient "


def amounts(resources: Mapping[str, int]) -> dict[str, str]:
    """Milli-unit amounts in the usual notation, zeros left out."""
    return {name: quantity.format_milli(name, value) for name, value in sorted(resources.items()) if value}


def lacking(request: Mapping[str, int], free: Mapping[str, int]) -> dict[str, int]:
    """How much of each resource ``free`` falls short of ``request`` by."""
    return {n: request[n] - max(free.get(n, 0), 0) for n in quantity.shortfall(request, free)}


def tasks(snap: Snapshot) -> dict[ObjectKey, TaskInfo]:
    return {task.key: task for job in snap.jobs.values() for task in job.tasks}


def member(state: ClusterState, pod: Pod, task: TaskInfo | None) -> dict[str, Any]:
    """Where one pod is: its task status, its node, or the node it is pipelined onto."""
    status = state.status_of(pod)
    return {
        "name": pod.metadata.name,
        "status": task.status.value if task is not None else pod.status.phase or "Unknown",
        "node": state.node_of(pod) or None,
        "nominated": (status.nominated if status is not None and status.uid == pod.metadata.uid else "") or None,
        "evicting": bool(status is not None and status.evicted),
    }


Held = Mapping[str, list[tuple[str, ResourceList]]]
"""Per node, the gangs whose held room there a job could not use, and what each held."""


def node_fit(snap: Snapshot, task: TaskInfo, idle: Mapping[str, ResourceList], held: Held) -> dict[str, Any]:
    """The nodes a pending task fits on, and for every other node why not and, when resources
    are what lacks, by how much; and when it would fit but for room gangs hold there, whose.
    ``idle``: free resources per node, as the task's job saw them."""
    fits, short = [], []
    for info in snap.node_list():
        free = idle[info.name]
        reasons = fit_failures(task.pod, task.request, info.node, free)
        if not reasons:
            fits.append(info.name)
            continue
        entry: dict[str, Any] = {"node": info.name, "reasons": reasons}
        if all(reason.startswith(INSUFFICIENT) for reason in reasons):
            entry["short"] = amounts(lacking(task.request, free))
        holders = held.get(info.name, [])
        if holders and not fit_failures(
            task.pod, task.request, info.node, quantity.sum_lists([free, *(taken for _, taken in holders)])
        ):
            entry["heldFor"] = [gang for gang, _ in holders]
        short.append(entry)
    return {"task": task.pod.metadata.name, "request": amounts(task.request), "fits": fits, "nodesShort": short}


def _room(room: HeldRoom) -> dict[str, Any]:
    nodes = {node: amounts(taken) for node, taken in room.nodes}
    held = {node: taken for node, taken in nodes.items() if taken}
    return {"gang": str(room.gang), "nodes": held, "startsBy": iso(room.starts_by())}


def holding(seen: Seen, key: ObjectKey) -> dict[str, Any] | None:
    """The room the gang ``key`` holds in the next cycle: per node, and until when."""
    return next((_room(room) for room in seen.holding if room.gang == key), None)


def held_from(seen: Seen, key: ObjectKey) -> list[dict[str, Any]]:
    """The room gangs held that the job ``key`` could not use when the next cycle tried it."""
    return [_room(room) for room in seen.held_from.get(key, [])]


def seen_room(snap: Snapshot, seen: Seen, key: ObjectKey) -> tuple[dict[str, ResourceList], Held]:
    """The nodes' free room as the next cycle's allocate showed it to the job ``key`` (the
    snapshot's when it was not tried), and per node the room held from it."""
    tried = seen.room.get(key)
    idle = {info.name: dict(tried[info.name] if tried is not None else info.idle) for info in snap.node_list()}
    held: dict[str, list[tuple[str, ResourceList]]] = {}
    for room in seen.held_from.get(key, []):
        for node, taken in room.nodes:
            if any(taken.values()):
                held.setdefault(node, []).append((str(room.gang), taken))
    return idle, held


def gang_fit(snap: Snapshot, seen: Seen, key: ObjectKey, pending: list[TaskInfo]) -> list[dict[str, Any]]:
    """The pending members placed one after another, each on the first node with room left by
    the ones before it (``takes``), as a gang must be: a member that fits alone may not fit after
    the others, and then its row says which nodes fell short by how much."""
    idle, held = seen_room(snap, seen, key)
    rows = []
    for task in pending:
        fit = node_fit(snap, task, idle, held)
        if fit["fits"]:
            fit["takes"] = fit["fits"][0]
            quantity.add(idle[fit["takes"]], {k: -v for k, v in task.request.items()})
        rows.append(fit)
    return rows


def queue_share(snap: Snapshot, name: str) -> dict[str, Any] | None:
    """A queue's allocation against what it deserves (proportion's weighted water-fill, never
    above its capability), and its share: the largest fraction of its deserved amount it uses."""
    queue = snap.queues.get(name)
    if queue is None:
        return None
    deserved = proportion.deserved_shares(snap, real_capabilities(snap)).get(name, {})
    return {
        "name": name,
        "state": queue.state.value,
        "parent": queue.parent or None,
        "children": sorted(queue.children),
        "weight": queue.weight,
        "allocated": amounts(queue.allocated),
        "asked": amounts(queue.asked),
        "deserved": amounts(deserved),
        "specDeserved": amounts(queue.deserved),  # spec.deserved: what the capacity plugin reads
        "capability": amounts(queue.capability),
        "guarantee": amounts(queue.guarantee),
        "share": round(proportion.share(queue.allocated, deserved), 4),
    }


def _topology(snap: Snapshot, job: JobInfo, need: Mapping[str, int]) -> dict[str, Any] | None:
    request = job.topology
    if request is None:
        return None
    domains = snap.ib_domains if request.label else snap.hyper_domains
    prefix = request.label or HYPERNODE
    limit = request.limit(snap.hyper_domains) if not request.label else None
    rows = []
    for domain in sorted(domains, key=lambda d: (d.tier, d.name)):
        if limit is not None and domain.tier > limit:
            continue
        free = snap.domain_idle.get(where_key(prefix, domain), {})
        short = amounts(lacking(need, free))
        rows.append({"domain": domain.name, "tier": domain.tier, "free": amounts(free), "short": short})
    return {"mode": "hard" if request.hard else "soft", "label": request.label or None, "domains": rows}


def gang(state: ClusterState, snap: Snapshot, seen: Seen, key: ObjectKey) -> dict[str, Any]:
    """A PodGroup's members and where each is, and what its pending members wait for."""
    namespace, _, name = key.rpartition("/")
    by_key = tasks(snap)
    pods = sorted(
        (p for p in state.pods().values() if p.metadata.namespace == namespace and p.group_name() == name),
        key=lambda p: p.metadata.name,
    )
    job = snap.jobs.get(key)
    pending = [t for t in (job.tasks if job else []) if t.status is TaskStatus.PENDING]
    need = quantity.sum_lists(t.request for t in pending)
    out: dict[str, Any] = {
        "minMember": job.min_member if job else None,
        "members": [member(state, p, by_key.get(key_of(p.metadata))) for p in pods],
        "placed": job.placed() if job else 0,
        "pendingNeed": amounts(need),
        "clusterFree": amounts(quantity.sum_lists({k: max(v, 0) for k, v in n.idle.items()} for n in snap.node_list())),
        "waitingFor": gang_fit(snap, seen, key, pending),
        "holding": holding(seen, key),
        "heldFrom": held_from(seen, key),
        "topology": _topology(snap, job, need) if job else None,
        "preemption": preemption(state, snap, job),
        "queue": queue_share(snap, job.queue) if job else None,
    }
    return out


def preemption(state: ClusterState, snap: Snapshot, job: JobInfo | None) -> dict[str, Any] | None:
    """Members pipelined onto nodes whose room preemption is releasing, and the pods being
    evicted there; None when no preemption is under way for this job."""
    pipelined = {t.pod.metadata.name: t.node for t in (job.pipelined() if job else [])}
    if not pipelined:
        return None
    nodes = set(pipelined.values())
    victims = sorted(
        key_of(t.pod.metadata)
        for other in snap.jobs.values()
        for t in other.tasks
        if t.status is TaskStatus.RELEASING and t.node in nodes
    )
    return {"pipelined": pipelined, "victims": victims}


def node(state: ClusterState, snap: Snapshot, seen: Seen, name: str) -> dict[str, Any] | None:
    info = snap.nodes.get(name)
    if info is None:
        return None
    pods = sorted(str(k) for k, p in state.pods().items() if state.node_of(p, k) == name)
    return {
        "ready": info.node.is_ready(),
        "unschedulable": info.node.spec.unschedulable,
        "taints": [f"{t.key}={t.value}:{t.effect}" for t in info.node.spec.taints],
        "allocatable": amounts(info.allocatable),
        "free": amounts({k: max(v, 0) for k, v in info.idle.items()}),
        "pods": pods,
        "heldFor": {
            str(room.gang): amounts(taken) for room in seen.holding for node, taken in room.nodes if node == name
        },
    }
