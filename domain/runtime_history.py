"""Runtime history: how long each user's last pods ran, to predict how long the next one runs.

EASY backfill needs runtime estimates, which a Kubernetes cluster does not have, and those users
give are mostly far longer than the runs. Tsafrir, Etsion and Feitelson ("Backfilling using
system-generated predictions rather than user runtime estimates", IEEE TPDS 18(6), 2007) found
that the mean of the user's last two runtimes predicts better, and that EASY planning with it
beats EASY planning with what users asked for. Here a *user* is a namespace and the value of
one pod label (``runtimeHistoryLabel`` in the scheduler configuration; e.g. ``swf/user``), and a
runtime is what the stream shows: from the pod's ``status.startTime`` to the first SCHEDULE
marker after the pod is first seen ``Succeeded`` (a watch event carries no time; the marker
closes the period in which it ended), at least a second. Pods that fail or are deleted while
running teach nothing: their runs were cut short; nor do pods first seen finished, nor a stream
without SCHEDULE markers (it has no time).

A prediction is what was observed, never assumed: a user with no finished pod yet has none, and
held room plans with no end for their pods (as without estimates). A running pod that outlives
its prediction is predicted to run twice as long, then twice that, and so on; a pod that also
has an estimate runs no longer than it (Tsafrir et al. raise the prediction to the user's own
estimate: ``domain.scheduler.runtimes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.objects.core import Pod

KEPT = 2  # runtimes kept per user; a prediction is their mean


def user_of(pod: Pod, label: str) -> str | None:
    """The pod's user: ``namespace/value`` of its ``label``; None without that label."""
    value = pod.metadata.labels.get(label)
    return None if value is None else f"{pod.metadata.namespace}/{value}"


@dataclass(slots=True)
class RuntimeHistory:
    """Each user's last runtimes (``runs``: seconds, oldest first), and the pods seen ending since
    the last marker (``ended``: user and start), whose runtimes the next marker settles."""

    runs: dict[str, tuple[float, ...]] = field(default_factory=dict)
    ended: list[tuple[str, datetime]] = field(default_factory=list)

    def saw(self, old: Pod | None, new: Pod, label: str) -> None:
        """Note ``new`` when the pod, seen before (``old``) and not finished then, is now
        ``Succeeded`` and the stream says when it started. A pod first seen finished (a list
        after a restart, or of an older cluster) may have ended long before: it teaches nothing."""
        if new.status.phase != "Succeeded" or old is None or old.is_finished():
            return
        started = new.status.start_time or old.status.start_time
        user = user_of(new, label)
        if started is not None and user is not None:
            self.ended.append((user, started))

    def settle(self, clock: datetime) -> None:
        """At a marker (``clock``, its time): each pod seen ending since the last one ran until now."""
        for user, started in self.ended:
            runtime = max((clock - started).total_seconds(), 1.0)
            self.runs[user] = (*self.runs.get(user, ())[1 - KEPT :], runtime)
        self.ended.clear()

    def mean(self, user: str) -> float | None:
        """``user``'s predicted runtime in seconds: the mean of its last runtimes, or None when
        none is kept (``user_of`` names a pod's user)."""
        runs = self.runs.get(user)
        return sum(runs) / len(runs) if runs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": {user: list(runs) for user, runs in sorted(self.runs.items())},
            "ended": [[user, started.isoformat()] for user, started in self.ended],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RuntimeHistory:
        return cls(
            {user: tuple(runs) for user, runs in data["runs"].items()},
            [(user, datetime.fromisoformat(started)) for user, started in data["ended"]],
        )


def raised(predicted: float, ran: float) -> float:
    """The prediction for a pod that has run ``ran`` seconds: doubled until it is longer than that."""
    while predicted <= ran:
        predicted *= 2
    return predicted
