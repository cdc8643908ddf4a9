"""Textbook baselines on the same trace and nodes: FCFS without backfill, EASY backfill, and
greedy first fit.

A simulator of its own, on exact event times (no scheduling period): jobs wait in one queue in
submit order; a job starts when all its tasks fit at once, each task on the first node (in node
order) with room for its requests, its pod slot (``pods``, 110 unless the node says) and its
node affinity. Topology requests are not modelled. Runtimes come from the trace; EASY plans
with a job's runtime estimate when it has one (``simulate --estimates``: the same estimates our
scheduler is told), else with its exact runtime; a job of unknown duration never ends, and a job that does not fit
the empty cluster is left out of the queue (it would block FCFS for ever).

* ``fcfs``: start jobs from the head of the queue while the head fits; stop at the first
  that does not.
* ``easy`` (Lifka 1995; Mu'alem and Feitelson 2001): as FCFS, and when the head does not fit,
  reserve for it the earliest time the running jobs' ends make room (the shadow time); a later
  job may start now if it fits and either ends by the shadow time or leaves room for the head
  at the shadow time.
* ``greedy``: every waiting job, in submit order, starts as soon as it fits (first fit, no
  reservation): small jobs never wait behind a large one, and a large gang may wait for ever
  while small ones keep taking the room it needs.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from domain.quantity import MILLI, ResourceList, add, parse_milli
from services.simulate.outcome import JobRecord, Outcome
from services.traces.events import KUBELET_MAX_PODS
from services.traces.model import Job, Node, Trace

Placement = list[int]  # the node index of each task
_ARRIVE, _FINISH = 1, 0  # at equal times, finishes free their room before arrivals look for it
TALLIES = 256  # shapes whose tallies are kept at once
CHANGED_KEPT = 1 << 16  # nodes in the log of changed rooms past which what every tally read is dropped
MOST = 1 << 30  # copies counted at most on one node


Affinity = tuple[tuple[str, tuple[str, ...]], ...]


def _affinity(job: Job) -> Affinity:
    return tuple(sorted((key, tuple(values)) for key, values in job.node_affinity.items()))


def _start_key(affinity: Affinity, request: ResourceList) -> tuple[object, ...]:
    """What the first node that may have room for one task depends on: the job's node affinity
    and its request."""
    return (affinity, *request.items())


def _copies(room: ResourceList, request: ResourceList, most: int = MOST) -> int:
    """How many tasks of ``request`` fit in ``room``, counted up to ``most`` (leaving at the first
    resource without a copy)."""
    copies = most
    for name, amount in request.items():
        if amount > 0 and (fit := room.get(name, 0) // amount) < copies:
            copies = fit
            if not copies:
                break
    return copies


def _shift(rooms: list[ResourceList], placement: Placement, request: ResourceList, step: int) -> None:
    """One task of ``request`` taken (``step`` -1) from, or given back (+1) to, the room of the
    node of each task in ``placement``."""
    amounts = request if step > 0 else {name: -amount for name, amount in request.items()}
    for index in placement:
        add(rooms[index], amounts)


@dataclass
class _Tally:
    """How many tasks of one ``request`` each node a job may use can take, and in all: a job's
    tasks are alike, so first fit places them all exactly when ``total`` reaches their number."""

    request: ResourceList
    copies: dict[int, int]  # in node order
    total: int
    seen: int = 0  # for a shape's tally on the cluster's room: how much of its log of changed nodes it has read

    @classmethod
    def of(cls, request: ResourceList, free: list[ResourceList], allowed: list[int]) -> _Tally:
        copies = {index: _copies(free[index], request) for index in allowed}
        return cls(request, copies, sum(copies.values()))

    def update(self, free: list[ResourceList], indices: Placement) -> None:
        """The rooms of ``indices`` in ``free`` changed."""
        for index in dict.fromkeys(indices):  # a node of several tasks is counted again once
            old = self.copies.get(index)
            if old is not None:
                new = self.copies[index] = _copies(free[index], self.request)
                self.total += new - old

    def moved(self, free: list[ResourceList], placement: Placement, request: ResourceList, step: int) -> None:
        """The rooms of ``placement``'s nodes in ``free`` changed by one task of ``request`` each,
        taken (``step`` -1) or given back (+1). A task of this tally's own request moves the room
        of each resource it asks for by exactly one copy, so a node's count moves by one a task
        (below ``MOST``; at it, the nodes are counted again); another request's, counted again."""
        if request != self.request:
            self.update(free, placement)
            return
        for index in placement:
            copies = self.copies.get(index)
            if copies is None:
                continue
            if copies >= MOST:
                self.update(free, placement)
                return
            self.copies[index] = copies + step
            self.total += step


@dataclass
class _Cluster:
    labels: list[dict[str, str]]
    free: list[ResourceList]
    _allowed: dict[Affinity, list[int]] = field(default_factory=dict)
    _affinities: dict[str, Affinity] = field(default_factory=dict)  # job id -> its affinity, made once
    _shapes: dict[str, tuple[object, ...]] = field(default_factory=dict)  # job id -> its shape (``shape``)
    # Per node affinity and request asked (a shape): its tally on ``free``, brought up to date
    # when asked from the nodes whose room changed since (``_changed``, in order), or at once by
    # a start or end of its own shape (``_moved``), so whether a job fits now is one look (past
    # ``TALLIES`` shapes, the one asked first is dropped).
    _tallies: dict[tuple[object, ...], _Tally] = field(default_factory=dict)
    _changed: list[int] = field(default_factory=list)
    # Per node affinity and request: the first node (by index) that may still have room for one
    # task. Room in ``free`` only shrinks until a release, and a release lowers each start to the
    # first node it gave room back on, so no node before a start can take its request.
    _starts: dict[tuple[object, ...], int] = field(default_factory=dict)

    @classmethod
    def of(cls, nodes: tuple[Node, ...]) -> _Cluster:
        free = [
            {name: parse_milli(a) for name, a in {"pods": KUBELET_MAX_PODS, **n.allocatable}.items()} for n in nodes
        ]
        return cls([dict(node.labels) for node in nodes], free)

    def affinity(self, job: Job) -> Affinity:
        key = self._affinities.get(job.id)
        if key is None:
            key = self._affinities[job.id] = _affinity(job)
        return key

    def allowed(self, job: Job) -> list[int]:
        """The indices of the nodes the job's node affinity allows, in node order (made once per affinity)."""
        key = self.affinity(job)
        nodes = self._allowed.get(key)
        if nodes is None:
            nodes = self._allowed[key] = [
                index
                for index, labels in enumerate(self.labels)
                if all(labels.get(k) in values for k, values in job.node_affinity.items())
            ]
        return nodes

    def place(self, job: Job, request: ResourceList) -> Placement | None:
        """First fit for every task now, taken from the room; None (and nothing taken) when a
        task does not fit."""
        placement = self.fit(job, request)
        if placement is not None:
            self.take(job, placement, request)
        return placement

    def fit(self, job: Job, request: ResourceList) -> Placement | None:
        """Where first fit puts every task now, taking nothing; None when a task does not fit.

        The tasks are alike and room only shrinks as they are placed, so first fit puts as many
        as fit on the first node with room, then goes on to the next: one pass over the nodes,
        reading how many each takes from the shape's tally."""
        key = self.shape(job, request)
        tally = self._tally(key, job, request)
        if tally.total < job.tasks:
            return None  # its tally says first fit would not place it all
        wanted = job.tasks  # the tally holds that many copies from the first node with room on
        placement: Placement = []
        if wanted:  # no node before the first with room has any
            start = bisect.bisect_left(self.allowed(job), self._starts.get(key, 0))
            for index, copies in itertools.islice(tally.copies.items(), start, None):
                if copies:
                    take = min(copies, wanted)
                    placement.extend([index] * take)
                    wanted -= take
                    if not wanted:
                        break
            self._starts[key] = placement[0]
        return placement

    def take(self, job: Job, placement: Placement, request: ResourceList) -> None:
        """Take ``placement`` (``fit``'s answer) out of the room now."""
        _shift(self.free, placement, request, -1)
        if placement:  # the nodes before the last one taken from are now full for it
            key = self.shape(job, request)
            self._starts[key] = placement[-1]
            self._moved(key, placement, request, -1)

    def release(self, job: Job, placement: Placement, request: ResourceList) -> None:
        """Give ``placement`` (``job``'s) back to the room now."""
        _shift(self.free, placement, request, 1)
        if placement:
            low = min(placement)
            for key, start in self._starts.items():
                if start > low:
                    self._starts[key] = low
            self._moved(self.shape(job, request), placement, request, 1)

    def _moved(self, key: tuple[object, ...], placement: Placement, request: ResourceList, step: int) -> None:
        """Log the nodes of ``placement`` as changed, one task of shape ``key`` (of ``request``)
        taken (``step`` -1) or given back (+1) on each. The shape's own tally, when it has read
        the whole log, reads them at once (``_Tally.moved``)."""
        tally = self._tallies.get(key)
        current = tally is not None and tally.seen == len(self._changed)
        self._changed.extend(placement)
        if tally is not None and current:
            tally.moved(self.free, placement, request, step)
            tally.seen = len(self._changed)

    def shape(self, job: Job, request: ResourceList) -> tuple[object, ...]:
        """``job``'s node affinity and request (``request``: its own, always), made once."""
        key = self._shapes.get(job.id)
        if key is None:
            key = self._shapes[job.id] = _start_key(self.affinity(job), request)
        return key

    def tally(self, job: Job, request: ResourceList) -> _Tally:
        """The tally of ``job``'s shape (its node affinity and request) on the room now."""
        return self._tally(self.shape(job, request), job, request)

    def _tally(self, key: tuple[object, ...], job: Job, request: ResourceList) -> _Tally:
        tally, changed = self._tallies.get(key), len(self._changed)
        if tally is None or changed - tally.seen > len(tally.copies):  # counting afresh costs less
            if tally is None and len(self._tallies) >= TALLIES:
                del self._tallies[next(iter(self._tallies))]  # the shape asked first of those kept
            tally = self._tallies[key] = _Tally.of(request, self.free, self.allowed(job))
        elif tally.seen < changed:
            tally.update(self.free, self._changed[tally.seen :])
        tally.seen = changed
        if changed > CHANGED_KEPT:  # what every tally has read is dropped from the log
            for stale in [k for k, kept in self._tallies.items() if changed - kept.seen > len(kept.copies)]:
                del self._tallies[stale]  # it would be counted afresh when asked
            read = min(kept.seen for kept in self._tallies.values())
            del self._changed[:read]
            for kept in self._tallies.values():
                kept.seen -= read
        return tally


@dataclass
class _Running:
    end: float | None
    job: Job
    placement: Placement
    start: float
    planned: tuple[float, int, str] | None  # its entry in ``_Baseline.planned``


def _planned(job: Job) -> float | None:
    """The runtime EASY plans with: the job's estimate, else its exact runtime."""
    return job.duration if job.estimate is None else job.estimate


def _runtime(job: Job) -> float:
    """``_planned``, infinite for a job of unknown duration."""
    runtime = _planned(job)
    return math.inf if runtime is None else runtime


@dataclass
class _Group:
    """The waiting jobs of one shape and number of tasks (alike to first fit), each with its
    place in the queue, in queue order; and their planned runtimes (``_planned``; infinite for a
    job of unknown duration), sorted: when the shortest outlives a time, they all do."""

    jobs: list[tuple[int, Job]] = field(default_factory=list)
    runtimes: list[float] = field(default_factory=list)

    def add(self, place: int, job: Job) -> None:
        self.jobs.append((place, job))
        bisect.insort(self.runtimes, _runtime(job))

    def remove(self, place: int, job: Job) -> None:
        del self.jobs[bisect.bisect_left(self.jobs, (place,))]
        del self.runtimes[bisect.bisect_left(self.runtimes, _runtime(job))]


@dataclass
class _Pass:
    """The waiting jobs one pass of ``_Baseline.fill`` may start, by group (a shape and a number
    of tasks: ``_Baseline.sizes``), each group's jobs in queue order. The jobs of a group are
    alike to first fit, so the pass looks at each group's next job only, the groups' next jobs
    taken in queue order: which jobs start, and in which order, is that of one look at every
    job in queue order."""

    groups: list[_Group]  # ``sizes``' own: a job that starts leaves its group
    _heap: list[tuple[int, int]] = field(default_factory=list)  # (place of a group's next job, group)
    _looking: dict[int, int] = field(default_factory=dict)  # group -> place of its next job, while it has one
    _ending: set[int] = field(default_factory=set)  # groups looking at their next job that ends by the shadow time

    def look(self, group: int, place: int) -> None:
        """``group``'s next job is the one at ``place``."""
        self._looking[group] = place
        heapq.heappush(self._heap, (place, group))

    def next(self) -> tuple[int, int, Job] | None:
        """The next job in queue order: its group, its index there and the job; None when none is left."""
        while self._heap:
            place, group = heapq.heappop(self._heap)
            if self._looking.get(group) == place:  # else the group's next job moved since
                alike = self.groups[group].jobs
                at = bisect.bisect_left(alike, (place,))
                return group, at, alike[at][1]
        return None

    def drop(self, group: int) -> None:
        """No job of ``group`` fits for the rest of the pass (room only shrinks as jobs start)."""
        del self._looking[group]
        self._ending.discard(group)

    def delays(self, group: int, at: int, now: float, shadow: float) -> None:
        """The job at ``at`` in ``group`` outlives ``shadow`` and would leave the head no room
        then: so would every job of the group that outlives it until a job starts and moves the
        room, so the group's next job is its next one that ends by ``shadow``."""
        self._ending.add(group)
        alike = self.groups[group]
        if now + alike.runtimes[0] <= shadow:  # else none of the group ends by then
            for place, job in itertools.islice(alike.jobs, at + 1, None):
                runtime = _planned(job)
                if runtime is not None and now + runtime <= shadow:
                    self.look(group, place)
                    return
        del self._looking[group]

    def started(self, group: int, place: int) -> None:
        """The job at ``place``, of ``group``, started: that group and those looking at their next
        job that ends by the shadow time look next at their first job after it."""
        self._ending.add(group)
        for moved in self._ending:
            alike = self.groups[moved].jobs
            at = bisect.bisect_left(alike, (place + 1,))
            if at < len(alike):
                self.look(moved, alike[at][0])
            else:
                self._looking.pop(moved, None)
        self._ending.clear()


@dataclass
class _Baseline:
    trace: Trace
    nodes: tuple[Node, ...]
    policy: str
    waiting: dict[str, Job] = field(default_factory=dict)  # by id
    running: dict[str, _Running] = field(default_factory=dict)
    allocated: ResourceList = field(default_factory=dict)
    by_queue: dict[str, ResourceList] = field(default_factory=dict)
    events: list[tuple[float, int, int, str]] = field(default_factory=list)  # (time, kind, order, job id)
    order: itertools.count[int] = field(default_factory=itertools.count)
    # (planned end, start order, job id) of the running jobs with a planned runtime, sorted: the
    # order in which EASY expects them to give their nodes back (equal ends in start order).
    planned: list[tuple[float, int, str]] = field(default_factory=list)
    # Per shape of the waiting jobs: one of them, and those waiting with each number of tasks
    # (``_Group``), each with its place in the queue (``arrived``), in queue order.
    sizes: dict[tuple[object, ...], tuple[Job, dict[int, _Group]]] = field(default_factory=dict)
    arrived: list[Job] = field(default_factory=list)  # every job that waited, at its place in the queue
    first: int = 0  # no job before this place in the queue still waits
    place_of: dict[str, int] = field(default_factory=dict)  # waiting job -> its place in the queue

    def __post_init__(self) -> None:
        self.cluster = _Cluster.of(self.nodes)
        self.requests = {
            job.id: {"pods": MILLI, **{n: parse_milli(a) for n, a in job.requests.items()}} for job in self.trace.jobs
        }
        capacity: ResourceList = {}
        for room in self.cluster.free:
            add(capacity, {name: amount for name, amount in room.items() if name != "pods"})
        self.outcome = Outcome(self.policy, capacity, {job.id: JobRecord(job) for job in self.trace.jobs})
        # The rooms ``shadow`` hands out, kept from one shadow time to the next: a copy of the
        # room now but on the nodes in ``stale`` (whose room changed since, or that the last
        # shadow time gave back), so a shadow time copies those rooms only.
        self.later = [dict(room) for room in self.cluster.free]
        self.stale: set[int] = set()

    def _usage(self, job: Job, sign: int) -> ResourceList:
        return {name: sign * amount * job.tasks for name, amount in self.requests[job.id].items() if name != "pods"}

    def start(self, job: Job, placement: Placement, now: float) -> None:
        end = None if job.duration is None else now + job.duration
        runtime = _planned(job)
        planned = None if runtime is None else (now + runtime, next(self.order), job.id)
        if planned is not None:
            bisect.insort(self.planned, planned)
        self.running[job.id] = _Running(end, job, placement, now, planned)
        self.stale.update(placement)
        self.outcome.jobs[job.id].start = now
        usage = self._usage(job, 1)
        add(self.allocated, usage)
        add(self.by_queue.setdefault(job.queue, {}), usage)
        if end is not None:
            heapq.heappush(self.events, (end, _FINISH, next(self.order), job.id))

    def finish(self, job_id: str, now: float) -> None:
        done = self.running.pop(job_id)
        if done.planned is not None:
            del self.planned[bisect.bisect_left(self.planned, done.planned)]
        self.cluster.release(done.job, done.placement, self.requests[job_id])
        self.stale.update(done.placement)
        usage = self._usage(done.job, -1)
        add(self.allocated, usage)
        add(self.by_queue[done.job.queue], usage)
        self.outcome.jobs[job_id].end = now

    def shadow(self, head: Job, now: float) -> tuple[float, list[ResourceList], _Tally] | None:
        """When the head fits if running jobs end as planned (``_planned``; one past its estimate
        ends now), the room left then, and the head's tally on that room.

        The head's tasks are alike, so first fit places them all exactly when the allowed nodes
        hold that many copies of its request in all: that count is kept as the running jobs'
        ends give their nodes back, one job at a time in end order."""
        free = self.later
        for index in self.stale:
            free[index] = dict(self.cluster.free[index])
        self.stale.clear()
        current = self.cluster.tally(head, self.requests[head.id])
        tally = _Tally(current.request, dict(current.copies), current.total)
        for end, _, job_id in self.planned:
            run = self.running[job_id]
            self.stale.update(run.placement)
            _shift(free, run.placement, self.requests[job_id], 1)
            tally.moved(free, run.placement, self.requests[job_id], 1)
            if tally.total >= head.tasks:
                return max(end, now), free, tally
        return None

    def schedule(self, now: float) -> None:
        """Start what the policy allows at ``now``."""
        if self.policy == "greedy":
            self.fill(now, None)
            return
        while self.waiting:
            head = self._head()
            placement = self.cluster.place(head, self.requests[head.id])
            if placement is None:
                break
            self._leaves(head)
            self.start(head, placement, now)
        if self.policy == "easy" and len(self.waiting) > 1:
            self.backfill(now)

    def backfill(self, now: float) -> None:
        self.fill(now, self._head())

    def fill(self, now: float, head: Job | None) -> None:
        """Start every waiting job after ``head`` that fits now (every waiting job when ``head``
        is None) and, when ``head`` has a shadow time, leaves it room then: one pass in queue
        order, a group at a time (``_Pass``)."""
        fits = self._may_fit(-1 if head is None else self.place_of[head.id])
        if not fits.groups:
            return
        reservation = None if head is None else self.shadow(head, now)
        # Per shape, the fewest tasks of a job that fits now but would leave the head no room at
        # its shadow time, since the last job started: first fit puts a job of as many tasks or
        # more at least where that one went, so it would too (or does not fit now).
        delaying: dict[tuple[object, ...], int] = {}
        # Per shape, how many copies of it the room holds, since the last job started: a job of
        # more tasks does not fit (``fit`` would say so from the same tally).
        room: dict[tuple[object, ...], int] = {}
        while (following := fits.next()) is not None:
            group, at, job = following
            request = self.requests[job.id]
            shape = self.cluster.shape(job, request)
            copies = room.get(shape)
            if copies is None:
                copies = room[shape] = self.cluster.tally(job, request).total
            if job.tasks > copies:
                fits.drop(group)
                continue
            runtime = _planned(job)
            outlives = reservation is not None and (runtime is None or now + runtime > reservation[0])
            if reservation is not None and outlives and job.tasks >= delaying.get(shape, job.tasks + 1):
                fits.delays(group, at, now, reservation[0])
                continue
            placement = self.cluster.fit(job, request)  # taken below, once the head can spare it
            if placement is None:
                fits.drop(group)
                continue
            if head is not None and reservation is not None and outlives:
                # The room at the shadow time, with this job still on its nodes, and the head's tally on it.
                _, later, later_head = reservation
                _shift(later, placement, request, -1)
                later_head.moved(later, placement, request, -1)
                if later_head.total < head.tasks:  # no room left for the head at its shadow time
                    _shift(later, placement, request, 1)
                    later_head.moved(later, placement, request, 1)
                    delaying[shape] = min(delaying.get(shape, job.tasks), job.tasks)
                    fits.delays(group, at, now, reservation[0])
                    continue
            delaying.clear()
            room.clear()
            self.cluster.take(job, placement, request)
            place = self.place_of[job.id]
            self._leaves(job)
            self.start(job, placement, now)
            fits.started(group, place)

    def _head(self) -> Job:
        """The job at the head of the queue: the first in ``arrived`` that still waits."""
        while self.arrived[self.first].id not in self.waiting:
            self.first += 1
        return self.arrived[self.first]

    def _waits(self, job: Job) -> None:
        self.waiting[job.id] = job
        shape = self.cluster.shape(job, self.requests[job.id])
        place = self.place_of[job.id] = len(self.arrived)
        self.arrived.append(job)
        counts = self.sizes.setdefault(shape, (job, {}))[1]
        alike = counts.get(job.tasks)
        if alike is None:
            alike = counts[job.tasks] = _Group()
        alike.add(place, job)

    def _leaves(self, job: Job) -> None:
        """``job`` no longer waits."""
        del self.waiting[job.id]
        shape = self.cluster.shape(job, self.requests[job.id])
        counts = self.sizes[shape][1]
        alike = counts[job.tasks]
        alike.remove(self.place_of.pop(job.id), job)
        if not alike.jobs:
            del counts[job.tasks]
            if not counts:
                del self.sizes[shape]

    def _may_fit(self, after: int) -> _Pass:
        """The waiting jobs after place ``after`` in the queue that may fit now, by group: those
        with no more tasks than the room holds copies of their shape (room only shrinks while a
        pass starts jobs, so no other job could start in it)."""
        fits = _Pass([])
        for job, counts in self.sizes.values():
            copies = self.cluster.tally(job, self.requests[job.id]).total
            for tasks, alike in counts.items():
                if tasks <= copies and (at := bisect.bisect_left(alike.jobs, (after + 1,))) < len(alike.jobs):
                    fits.look(len(fits.groups), alike.jobs[at][0])
                    fits.groups.append(alike)
        return fits

    def run(self) -> Outcome:
        jobs = {job.id: job for job in self.trace.jobs}
        for job in self.trace.jobs:  # on the cluster while it is empty
            if self.cluster.tally(job, self.requests[job.id]).total >= job.tasks:  # else it never fits: left out
                heapq.heappush(self.events, (job.submit, _ARRIVE, next(self.order), job.id))
        while self.events:
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, kind, _, job_id = heapq.heappop(self.events)
                if kind == _FINISH:
                    self.finish(job_id, now)
                else:
                    self._waits(jobs[job_id])
            self.schedule(now)
            self.outcome.track(now, self.allocated, len(self.waiting), self.by_queue)
        return self.outcome


def fcfs(trace: Trace, nodes: tuple[Node, ...]) -> Outcome:
    return _Baseline(trace, nodes, "fcfs").run()


def easy(trace: Trace, nodes: tuple[Node, ...]) -> Outcome:
    return _Baseline(trace, nodes, "easy").run()


def greedy(trace: Trace, nodes: tuple[Node, ...]) -> Outcome:
    return _Baseline(trace, nodes, "greedy").run()


BASELINES: dict[str, Callable[[Trace, tuple[Node, ...]], Outcome]] = {"fcfs": fcfs, "easy": easy, "greedy": greedy}
