"""Runtimes held room plans with: how long a pod runs, and when the pods on a node give their
room back. A runtime is an input, never assumed: the estimate given (``ESTIMATE``, an annotation
on the pod or its PodGroup; ``simulate --estimates`` writes SWF's requested time), or, when the
config names a user label, the mean of the user's last runtimes (``domain.runtime_history``);
with both, the shorter (an estimate is what a user asks for, mostly far more than the job runs,
and batch systems end a job at it: Tsafrir, Etsion and Feitelson cap their predictions there).
A pod with neither has no known end. Each task's sources are read once (``TaskInfo.runtime``),
and a waiting job's once per tally (``Tally.runtimes``); only the users' means are asked again,
as the history changes at markers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

from domain.durations import positive_seconds
from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList
from domain.runtime_history import RuntimeHistory, raised, user_of
from domain.scheduler.infos import HOLDING, JobInfo, TaskInfo, TaskStatus
from domain.scheduler.object_facts import seconds
from domain.scheduler.snapshot import Snapshot

Ends = dict[str, list[tuple[float, ResourceList]]]  # node -> (when, what) its pods of known end give back
KEPT = "runtime-ends"
ESTIMATE = "schedstream.io/runtime-estimate"
"""A Go duration: how long the pod (or each pod of the PodGroup) runs once started."""


def _given(snapshot: Snapshot, task: TaskInfo) -> float | None:
    """The task's runtime estimate in seconds as given: its pod's annotation, else its PodGroup's."""
    own = positive_seconds(task.pod.metadata.annotations.get(ESTIMATE))
    if own is not None:
        return own
    job = snapshot.jobs.get(task.job)
    group = job.group if job is not None else None
    return positive_seconds(group.metadata.annotations.get(ESTIMATE)) if group is not None else None


def read(snapshot: Snapshot, task: TaskInfo) -> tuple[float | None, str | None, float | None]:
    """What the task's runtime is read from: its given estimate, its user (when the config keeps
    a runtime history) and its start in seconds; read once per task (its pod and its PodGroup's
    metadata never change while the task is kept: ``job_table``)."""
    label = snapshot.history_label
    known = task.runtime
    if known is None or known[0] != label:
        pod = task.pod
        started = pod.status.start_time
        user = user_of(pod, label) if label else None
        known = task.runtime = (label, _given(snapshot, task), user, None if started is None else seconds(started))
    return known[1], known[2], known[3]


def _end(snapshot: Snapshot, task: TaskInfo, means: dict[str, float | None]) -> float:
    """When a task on a node gives its room back: now for one being deleted; for a running one,
    start + its runtime (a prediction raised until it is later than now, capped at the given
    estimate; a given estimate it has outlived: now); never without a runtime. ``means``: the
    users' predictions asked so far."""
    if task.status is TaskStatus.RELEASING:
        return snapshot.now
    given, user, start = read(snapshot, task)
    if start is None:
        return math.inf
    if user is not None and user not in means:
        means[user] = snapshot.runtime_history.mean(user)
    predicted = None if user is None else means[user]
    runs = _shorter(given, None if predicted is None else raised(predicted, snapshot.now - start))
    return math.inf if runs is None else max(start + runs, snapshot.now)


def _shorter(given: float | None, predicted: float | None) -> float | None:
    """A runtime: the shorter of a given estimate and a prediction, or the one known; None
    without either."""
    if given is None or predicted is None:
        return predicted if given is None else given
    return min(given, predicted)


def _sources(snapshot: Snapshot, tasks: list[TaskInfo]) -> tuple[tuple[float | None, str | None], ...] | None:
    """What the runtimes of ``tasks`` are read from: each distinct (given estimate, user); None
    when a task has neither (or there are no tasks)."""
    pairs = set()
    for task in tasks:
        given, user, _ = read(snapshot, task)
        if given is None and user is None:
            return None
        pairs.add((given, user))
    return tuple(sorted(pairs, key=lambda pair: (pair[0] or 0.0, pair[1] or ""))) if pairs else None


def runtime(snapshot: Snapshot, job: JobInfo) -> float | None:
    """How long ``job``'s pending members that ask for room run: the longest of their runtimes
    (each the shorter of its given estimate and its user's prediction, or the one known); None
    when one has neither (or none asks)."""
    tally = job.tally()
    known = tally.runtimes
    if known is None or known[0] != snapshot.history_label:
        known = tally.runtimes = (snapshot.history_label, _sources(snapshot, tally.asking))
    pairs = known[1]
    if pairs is None:
        return None
    longest = 0.0
    for given, user in pairs:
        runs = _shorter(given, None if user is None else snapshot.runtime_history.mean(user))
        if runs is None:
            return None
        longest = max(longest, runs)
    return longest


def ends(snapshot: Snapshot, kept: dict[str, object] | None = None) -> Ends:
    """Per node, the known ends of the pods that take room there, earliest first (then by pod).
    With ``kept`` (the session's, ``Session.kept``), the jobs looked at are those that had such
    pods in the last session that asked, and the jobs that changed since (built again, put back,
    given a changed PodGroup or changed by that session): a job that took no room then and did
    not change takes none now. The last answer is given again, the same dict (never change it),
    when it would read the same (``_Holding.again``); else each job's last ends are used again
    when they would read the same (``_JobEnds.again``), and only the nodes of the jobs worked out
    again are sorted again (the others keep their lists, and so does one that comes out as it
    was: a reader may compare lists by identity). A fresh cache answers as a kept one."""
    last = None if kept is None else kept.get(KEPT)
    if isinstance(last, _Holding) and last.again(snapshot):
        return last.answer
    asked, before = _asked(snapshot, last)
    jobs = snapshot.jobs
    now = snapshot.now
    runs = snapshot.runtime_history.runs
    touched = snapshot.jobs_touched() if before is not None else set()
    holding: dict[ObjectKey, _JobEnds] = {}
    for key in asked:
        job = jobs.get(key)
        if job is None or not _takes_room(job):
            continue
        known = None if before is None or key in touched else before.jobs.get(key)
        holding[key] = known if known is not None and known.again(now, runs) else _job_ends(snapshot, job)
    answer = _answer(holding, before, last.answer if isinstance(last, _Holding) else {})
    if kept is not None:
        users: dict[str, tuple[float, ...] | None] = {}
        for known in holding.values():
            users.update(known.users)
        kept[KEPT] = _Holding(
            snapshot.unsettled, snapshot.renewal, holding, answer,
            min((known.earliest for known in holding.values()), default=math.inf),
            snapshot.history_label, snapshot.runtime_history, users,
        )  # fmt: skip
    return answer


def earliest(ends: Ends, kept: dict[str, object]) -> float:
    """The earliest of ``ends`` (infinite without): kept with them when they are the last answer
    of ``ends`` to the session's ``kept``."""
    last = kept.get(KEPT)
    if isinstance(last, _Holding) and last.answer is ends:
        return last.earliest
    return min((end for known in ends.values() for end, _ in known), default=math.inf)


@dataclass(slots=True, eq=False)
class _JobEnds:
    """One job's pods of known end by node (when, which pod, what it gives back), the earliest of
    them, and the runs of each user their predictions read."""

    nodes: dict[str, list[tuple[float, ObjectKey, ResourceList]]]
    earliest: float
    users: dict[str, tuple[float, ...] | None]

    def again(self, now: float, runs: dict[str, tuple[float, ...]]) -> bool:
        """Whether the job, unchanged, gives these ends at ``now``: every one is later (a pod's
        end reads the instant only once it is past) and its users' runs are the same."""
        return self.earliest > now and _same_runs(runs, self.users)


def _same_runs(runs: dict[str, tuple[float, ...]], users: dict[str, tuple[float, ...] | None]) -> bool:
    """Whether each of ``users`` has the runs it had (the history replaces a user's tuple when it changes)."""
    return all(runs.get(user) is known for user, known in users.items())


def _job_ends(snapshot: Snapshot, job: JobInfo) -> _JobEnds:
    """``job``'s ends worked out: each of its pods on a node that takes room or is releasing."""
    nodes: dict[str, list[tuple[float, ObjectKey, ResourceList]]] = {}
    means: dict[str, float | None] = {}  # each user's prediction, asked once
    earliest = math.inf
    for task in job.tasks:
        if task.node and (task.status in HOLDING or task.status is TaskStatus.RELEASING):
            end = _end(snapshot, task, means)
            if end < math.inf:
                nodes.setdefault(task.node, []).append((end, task.key, task.request))
                earliest = min(earliest, end)
    runs = snapshot.runtime_history.runs
    return _JobEnds(nodes, earliest, {user: runs.get(user) for user in means})


def _answer(holding: dict[ObjectKey, _JobEnds], before: _Holding | None, last: Ends) -> Ends:
    """The ends per node, sorted: from the jobs' ends, or from ``before``'s answer with only the
    nodes of the jobs whose ends are not those it had (worked out again, or gone) sorted again.
    A node whose ends are those of the ``last`` answer keeps its list."""
    if before is None:
        dirty = None
    else:
        dirty = set()
        for key, known in holding.items():
            if before.jobs.get(key) is not known:
                dirty.update(known.nodes)
        for key, known in before.jobs.items():
            if holding.get(key) is not known:
                dirty.update(known.nodes)
        if not dirty:
            return before.answer  # the same dict, as ``_Holding.again`` gives it (never changed)
    out: dict[str, list[tuple[float, ObjectKey, ResourceList]]] = {}
    for known in holding.values():
        for node in known.nodes if dirty is None else known.nodes.keys() & dirty:
            out.setdefault(node, []).extend(known.nodes[node])
    answer = {} if before is None else dict(before.answer)
    for node in out if dirty is None else dirty:
        if node in out:
            ends = [(end, request) for end, _, request in sorted(out[node])]
            answer[node] = ends if (kept := last.get(node)) != ends else kept
        else:
            answer.pop(node, None)
    return answer


@dataclass(slots=True, eq=False)
class _Holding:
    """The jobs that took room on a node at one renewal of the job table, with their ends, the
    ends per node they gave and what those read beside the jobs: the earliest of them (the
    instant enters no end before it), the config's user label, and the runtime history with the
    runs of each user asked."""

    unsettled: set[ObjectKey]  # the job table's (whose identity says the table is the same one)
    renewal: int
    jobs: dict[ObjectKey, _JobEnds]
    answer: Ends
    earliest: float
    label: str | None
    history: RuntimeHistory
    users: dict[str, tuple[float, ...] | None]

    def again(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot``, the next renewal of the same job table, would give the same
        answer, and if so take it as this one's: no job that took room, and no job that takes
        room now, has changed (a job that changed and takes no room adds nothing); every end is
        later than the instant (a pod's end reads the instant only once it is past: a pod
        releasing now, one that outlived its estimate, a prediction raised); the label and every
        user's runs are the same."""
        if not snapshot.follows(self.unsettled, self.renewal) or snapshot.now >= self.earliest:
            return False
        if snapshot.history_label != self.label or snapshot.runtime_history is not self.history:
            return False
        if not _same_runs(self.history.runs, self.users):
            return False
        touched = snapshot.jobs_touched()
        if not touched.isdisjoint(self.jobs):
            return False
        if any((job := snapshot.jobs.get(key)) is not None and _takes_room(job) for key in touched):
            return False
        self.renewal = snapshot.renewal
        return True


def _takes_room(job: JobInfo) -> bool:
    """Whether any of ``job``'s tasks is past pending (a job all pending takes no room)."""
    tally = job.tally()
    return len(tally.pending) != tally.size


def _asked(snapshot: Snapshot, last: object) -> tuple[Iterable[ObjectKey], _Holding | None]:
    """The jobs ``ends`` looks at, and the kept ends whose jobs' ends may be used again: every
    job and none, or those that took room at the last renewal asked and those changed since, when
    that renewal is this one or the one before (and the label and runtime history are the same)."""
    if not isinstance(last, _Holding):
        return snapshot.jobs.keys(), None
    same = last if snapshot.history_label == last.label and snapshot.runtime_history is last.history else None
    if snapshot.follows(last.unsettled, last.renewal - 1):  # asked before in this session
        return last.jobs, same
    if snapshot.follows(last.unsettled, last.renewal):
        return itertools.chain(last.jobs, sorted(snapshot.jobs_touched().difference(last.jobs))), same
    return snapshot.jobs.keys(), None
