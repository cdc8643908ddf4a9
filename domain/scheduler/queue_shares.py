"""Queue quota bookkeeping shared by the proportion and capacity plugins: what each queue has
allocated and has reserved for enqueued gangs (``inqueue``), rolled up to every ancestor when
queues form a hierarchy. A resource missing from a limit means "no limit"."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from domain import quantity
from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList
from domain.scheduler.infos import JobInfo, QueueInfo, TaskInfo, TaskStatus
from domain.scheduler.snapshot import Snapshot


def over(amount: Mapping[str, int], limit: Mapping[str, int], dims: set[str] | None = None) -> list[str]:
    """Resources (among ``dims`` if given) where ``amount`` exceeds a set ``limit``, sorted."""
    names = set(amount) if dims is None else dims & set(amount)
    return sorted(n for n in names if n in limit and amount[n] > limit[n])


def over_after(used: Mapping[str, int], request: Mapping[str, int], limit: Mapping[str, int]) -> list[str]:
    """``over(used + request, limit, dims)`` for the resources ``request`` asks for (``requested``),
    without adding the two up (asked for every waiting job, and mostly nothing is over)."""
    over = [
        n
        for n, amount in request.items()
        if amount > 0 and n in limit and used.get(n, 0) + amount > limit[n] and n != quantity.PODS
    ]
    return sorted(over) if len(over) > 1 else over


def lower(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    """Per-resource minimum of two limits, where a missing resource is unlimited."""
    out = dict(a)
    for name, amount in b.items():
        out[name] = min(out.get(name, amount), amount)
    return out


def real_capabilities(snapshot: Snapshot) -> dict[str, ResourceList]:
    """Each queue's capability, cut to what is left of the cluster after every other queue's
    guarantee (the flat view; capacity's hierarchy computes its own top-down)."""
    guarantees = quantity.sum_lists(q.guarantee for q in snapshot.queues.values())
    out = {}
    for name, queue in snapshot.queues.items():
        free = {n: a - guarantees.get(n, 0) + queue.guarantee.get(n, 0) for n, a in snapshot.total.items()}
        out[name] = lower(queue.capability, free)
    return out


def requests(snapshot: Snapshot) -> dict[str, ResourceList]:
    """What each queue's jobs hold and still ask for (allocated, pending and pipelined tasks), at
    the start of the session: the snapshot's sums, less the jobs the queue rules took out."""
    out = {name: quantity.sum_lists([q.allocated, q.asked]) for name, q in snapshot.queues.items()}
    for job in snapshot.dropped:
        if job.queue in out:
            quantity.add(out[job.queue], {k: -v for k, v in job.allocated.items()})
            for task in job.tasks:
                if task.status in (TaskStatus.PENDING, TaskStatus.PIPELINED):
                    quantity.add(out[job.queue], {k: -v for k, v in task.request.items()})
    return out


def water_fill(
    queues: list[QueueInfo],
    amount: Mapping[str, int],
    request: Mapping[str, ResourceList],
    real: Mapping[str, ResourceList],
) -> dict[str, ResourceList]:
    """Split ``amount`` among ``queues`` by weight, each never above what it asks for (the rest goes
    round again to the others) nor its real capability, and never below its guarantee. Integer
    milli-units, so every replay computes the same shares."""
    deserved: dict[str, ResourceList] = {q.name: {} for q in queues}
    remaining = dict(amount)
    unmet = {q.name for q in queues}
    while unmet and any(v > 0 for v in remaining.values()):
        weights = sum(q.weight for q in queues if q.name in unmet)
        if weights <= 0:
            break
        given: ResourceList = {}
        for queue in (q for q in queues if q.name in unmet):
            old = deserved[queue.name]
            new = {n: old.get(n, 0) + remaining.get(n, 0) * queue.weight // weights for n in remaining}
            new = {n: min(v, request[queue.name].get(n, 0)) for n, v in lower(new, real.get(queue.name, {})).items()}
            new = {n: max(new.get(n, 0), queue.guarantee.get(n, 0)) for n in set(new) | set(queue.guarantee)}
            quantity.add(given, {n: new.get(n, 0) - old.get(n, 0) for n in new})
            deserved[queue.name] = new
            if new == old or not over(request[queue.name], new):
                unmet.discard(queue.name)
        if not any(given.values()):
            break
        remaining = {n: a - given.get(n, 0) for n, a in remaining.items()}
    return deserved


def priority(queue: QueueInfo) -> float:
    """The first key of a queue order: a queue of higher ``spec.priority`` goes first, whatever its
    share (upstream's proportion and capacity order)."""
    return -float(queue.queue.spec.priority) if queue.queue is not None else 0.0


def reclaimable_beyond_deserved(
    snapshot: Snapshot,
    used: Mapping[str, ResourceList],
    reclaimer: TaskInfo,
    candidates: list[TaskInfo],
    deserved: Callable[[str], Mapping[str, int]],
    *,
    partly: bool = False,
) -> list[TaskInfo]:
    """Volcano's reclaim rule, for proportion and capacity alike: a queue gives back only what it
    holds beyond its deserved share, and only to a queue that stays within its own with the task
    (on every resource the task asks for, or with ``partly`` on at least one, as capacity has it).
    With ``partly`` also capacity's victim rules (Volcano #4918): a victim must ask for something
    the reclaimer asks for, and one that asks for nothing its queue deserves is always a victim."""
    mine = snapshot.jobs[reclaimer.job].queue
    dims = requested(reclaimer)
    own = deserved(mine)
    if partly:  # capacity: what the reclaimer's queue does not name, it does not deserve
        own = {n: own.get(n, 0) for n in dims}
    short = over(quantity.sum_lists([used[mine], reclaimer.request]), own, dims)
    if short and not (partly and len(short) < len(dims)):
        return []
    spare = {name: dict(amount) for name, amount in used.items()}
    out = []
    for task in candidates:
        queue = snapshot.jobs[task.job].queue
        if queue not in spare:
            continue
        asks = requested(task)
        if partly and not asks & dims:
            continue  # freeing it gives the reclaimer nothing it needs
        immediate = partly and not any(deserved(queue).get(n, 0) > 0 for n in asks)
        if immediate or over(spare[queue], deserved(queue), asks):
            quantity.add(spare[queue], {k: -v for k, v in task.request.items()})
            out.append(task)
    return out


def requested(task: TaskInfo) -> set[str]:
    return {name for name, amount in task.request.items() if amount > 0 and name != quantity.PODS}


def describe(names: list[str]) -> str:
    return ", ".join(names)


class Ledger:
    """Allocated and reserved resources per queue, kept current as statements place tasks."""

    def __init__(self, snapshot: Snapshot, *, roll_up: bool) -> None:
        self.snapshot = snapshot
        self.roll_up = roll_up
        self.used: dict[str, ResourceList] = {name: {} for name in snapshot.queues}
        self.inqueue: dict[str, ResourceList] = {name: {} for name in snapshot.queues}
        self._reserved: dict[ObjectKey, ResourceList] = {}
        # The queue tree is fixed for the session: each queue's chain is walked once.
        self._chains = {name: self._chain(name) for name in snapshot.queues}
        # What the snapshot's jobs hold (its sums, less the jobs the queue rules took out), and
        # what the admitted gangs reserve.
        for queue in snapshot.queues.values():
            if queue.allocated:
                for name in self.chain(queue.name):
                    quantity.add(self.used[name], queue.allocated)
        for job in snapshot.dropped:
            for name in self.chain(job.queue):
                quantity.add(self.used[name], {k: -v for k, v in job.allocated.items()})
        for key in snapshot.reserving:
            job = snapshot.jobs.get(key)
            if job is not None:
                self.enqueued(job)
        for job in snapshot.unborn:  # admitted before its pods exist: it reserves its minimum too
            if job.phase is PodGroupPhase.INQUEUE and job.min_resources:
                self.enqueued(job)

    def chain(self, queue: str) -> list[str]:
        """The queues that account for a job of ``queue``: itself, and its ancestors in a hierarchy."""
        return self._chains.get(queue, [])

    def _chain(self, queue: str) -> list[str]:
        if not self.roll_up:
            return [queue]
        return [q.name for q in self.snapshot.ancestors(queue)]

    def _remaining(self, job: JobInfo) -> ResourceList:
        minimum = job.min_resources or {}
        return {n: a - job.allocated.get(n, 0) for n, a in minimum.items() if a > job.allocated.get(n, 0)}

    def enqueued(self, job: JobInfo) -> None:
        reserved = self._reserved[job.key] = self._remaining(job)
        for name in self.chain(job.queue):
            quantity.add(self.inqueue[name], reserved)

    def allocated(self, task: TaskInfo, sign: int) -> None:
        job = self.snapshot.jobs[task.job]
        request = task.request
        for name in self.chain(job.queue):
            used = self.used[name]
            for resource, amount in request.items():
                used[resource] = used.get(resource, 0) + sign * amount
        before = self._reserved.get(job.key)
        if before is not None:
            # The reservation shrinks as the gang's own members take their place.
            after = self._reserved[job.key] = self._remaining(job)
            delta = {n: after.get(n, 0) - before.get(n, 0) for n in set(before) | set(after)}
            for name in self.chain(job.queue):
                quantity.add(self.inqueue[name], delta)

    def enqueue_shortfall(self, job: JobInfo, name: str, limit: Mapping[str, int]) -> list[str]:
        """Resources the job's minimum asks for where it would push queue ``name`` past ``limit``
        (a resource it asks none of, as "0G", is not checked: upstream's LessEqualWithDimension)."""
        minimum = job.min_resources or {}
        need = quantity.sum_lists([minimum, self.used[name], self.inqueue[name]])
        return over(need, limit, {n for n, a in minimum.items() if a > 0} - {quantity.PODS})
