"""Runtimes held room plans with: how long a pod runs, and when the pods on a node give their
room back. A runtime is an input, never assumed: the estimate given (``ESTIMATE``, an annotation
on the pod or its PodGroup; ``simulate --estimates`` writes SWF's requested time), else, when the
config names a user label, the mean of the user's last runtimes (``domain.runtime_history``).
A pod with neither has no known end. Each task's sources are read once (``TaskInfo.runtime``),
and a waiting job's once per tally (``Tally.runtimes``); only the users' means are asked again,
as the history changes at markers.
"""

from __future__ import annotations

import math

from domain.durations import positive_seconds
from domain.quantity import ResourceList
from domain.runtime_history import raised, user_of
from domain.scheduler.infos import HOLDING, JobInfo, TaskInfo, TaskStatus
from domain.scheduler.object_facts import seconds
from domain.scheduler.snapshot import Snapshot

Ends = dict[str, list[tuple[float, ResourceList]]]  # node -> (when, what) its pods of known end give back
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
    """When a task on a node gives its room back: now for one being deleted, start + estimate for
    a running one that has both (a given estimate it has outlived: now; a prediction: raised until
    it is later than now), else never. ``means``: the users' predictions asked so far."""
    if task.status is TaskStatus.RELEASING:
        return snapshot.now
    given, user, start = read(snapshot, task)
    if start is None:
        return math.inf
    if given is not None:
        return max(start + given, snapshot.now)
    if user is None:
        return math.inf
    if user not in means:
        means[user] = snapshot.runtime_history.mean(user)
    predicted = means[user]
    return math.inf if predicted is None else max(start + raised(predicted, snapshot.now - start), snapshot.now)


def _sources(snapshot: Snapshot, tasks: list[TaskInfo]) -> tuple[float, tuple[str, ...] | None]:
    """What the runtimes of ``tasks`` are read from: the longest given estimate (0 without one),
    and the users of those without one; None for the users when a task has neither (or there
    are no tasks)."""
    longest, users = 0.0, set()
    for task in tasks:
        given, user, _ = read(snapshot, task)
        if given is not None:
            longest = max(longest, given)
        elif user is None:
            return 0.0, None
        else:
            users.add(user)
    return longest, tuple(sorted(users)) if tasks else None


def runtime(snapshot: Snapshot, job: JobInfo) -> float | None:
    """How long ``job``'s pending members that ask for room run: the longest of their given
    estimates and their users' predictions; None when one has neither (or none asks)."""
    tally = job.tally()
    known = tally.runtimes
    if known is None or known[0] != snapshot.history_label:
        known = tally.runtimes = (snapshot.history_label, *_sources(snapshot, tally.asking))
    _, longest, users = known
    if users is None:
        return None
    for user in users:
        predicted = snapshot.runtime_history.mean(user)
        if predicted is None:
            return None
        longest = max(longest, predicted)
    return longest


def ends(snapshot: Snapshot) -> Ends:
    """Per node, the known ends of the pods that take room there, earliest first."""
    out: Ends = {}
    means: dict[str, float | None] = {}  # each user's prediction, asked once
    for job in snapshot.jobs.values():
        tally = job.tally()
        if len(tally.pending) == tally.size:  # a job all pending takes no room
            continue
        for task in job.tasks:
            if task.node and (task.status in HOLDING or task.status is TaskStatus.RELEASING):
                end = _end(snapshot, task, means)
                if end < math.inf:
                    out.setdefault(task.node, []).append((end, task.request))
    for known in out.values():
        known.sort(key=lambda pair: pair[0])
    return out
