"""Volcano Job lifecycle: the job controller's phases as watch events report them, plus Deleted.

Volcano's controller moves a Job (controllers/job/state): Pending -> Running, Restarting,
Aborting, Completing or Terminating; Restarting -> Pending or Failed; Aborting -> Aborted ->
Restarting (resume); Completing -> Completed; Terminating -> Terminated. An informer may
coalesce updates, so a row also admits a phase reachable through phases we did not see
(Running -> Pending after a restart, Pending -> Completed for a short job). Completed,
Terminated and Failed end the job; only deletion moves it on. A ``deletionTimestamp`` is
Terminating, which also makes its PodGroup terminating for the scheduler (SEEDS S1).
"""

from __future__ import annotations

from enum import StrEnum

from domain.lifecycle.table import Lifecycle, Row
from domain.objects.volcano import Job


class JobPhase(StrEnum):
    """Volcano's job phases, roughly in lifecycle order, then Deleted."""

    PENDING = "Pending"  # waiting for minAvailable pods to run
    ABORTING = "Aborting"  # abort requested, pods being killed
    ABORTED = "Aborted"  # aborted; may be resumed
    RUNNING = "Running"  # minAvailable pods running
    RESTARTING = "Restarting"  # pods being recreated by a policy
    COMPLETING = "Completing"  # complete requested, pods being killed
    COMPLETED = "Completed"  # finished successfully
    TERMINATING = "Terminating"  # terminate requested, or deletionTimestamp set
    TERMINATED = "Terminated"  # terminated by a policy
    FAILED = "Failed"  # out of retries
    DELETED = "Deleted"  # the DELETED event arrived


class JobFact(StrEnum):
    """The phase a watch event's Job shows (status.state.phase), deletion start and end."""

    OBSERVED_PENDING = "ObservedPending"  # also an empty phase: a new job
    OBSERVED_ABORTING = "ObservedAborting"
    OBSERVED_ABORTED = "ObservedAborted"
    OBSERVED_RUNNING = "ObservedRunning"
    OBSERVED_RESTARTING = "ObservedRestarting"
    OBSERVED_COMPLETING = "ObservedCompleting"
    OBSERVED_COMPLETED = "ObservedCompleted"
    OBSERVED_TERMINATING = "ObservedTerminating"
    OBSERVED_TERMINATED = "ObservedTerminated"
    OBSERVED_FAILED = "ObservedFailed"
    DELETION_STARTED = "DeletionStarted"
    DELETED = "Deleted"


P, F = JobPhase, JobFact

JOB = Lifecycle(
    kind="Job",
    phases=JobPhase,
    triggers=JobFact,
    initial=P.PENDING,
    rows=(
        Row(P.PENDING, F.OBSERVED_PENDING, P.PENDING),
        Row(P.PENDING, F.OBSERVED_ABORTING, P.ABORTING),
        Row(P.PENDING, F.OBSERVED_ABORTED, P.ABORTED),
        Row(P.PENDING, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.PENDING, F.OBSERVED_RESTARTING, P.RESTARTING),
        Row(P.PENDING, F.OBSERVED_COMPLETING, P.COMPLETING),
        Row(P.PENDING, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.PENDING, F.OBSERVED_TERMINATING, P.TERMINATING),
        Row(P.PENDING, F.OBSERVED_TERMINATED, P.TERMINATED),
        Row(P.PENDING, F.OBSERVED_FAILED, P.FAILED),
        Row(P.PENDING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.PENDING, F.DELETED, P.DELETED),
        Row(P.RUNNING, F.OBSERVED_PENDING, P.PENDING),  # restarted in between
        Row(P.RUNNING, F.OBSERVED_ABORTING, P.ABORTING),
        Row(P.RUNNING, F.OBSERVED_ABORTED, P.ABORTED),
        Row(P.RUNNING, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.RUNNING, F.OBSERVED_RESTARTING, P.RESTARTING),
        Row(P.RUNNING, F.OBSERVED_COMPLETING, P.COMPLETING),
        Row(P.RUNNING, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.RUNNING, F.OBSERVED_TERMINATING, P.TERMINATING),
        Row(P.RUNNING, F.OBSERVED_TERMINATED, P.TERMINATED),
        Row(P.RUNNING, F.OBSERVED_FAILED, P.FAILED),
        Row(P.RUNNING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.RUNNING, F.DELETED, P.DELETED),
        Row(P.RESTARTING, F.OBSERVED_PENDING, P.PENDING),
        Row(P.RESTARTING, F.OBSERVED_RUNNING, P.RUNNING),
        Row(P.RESTARTING, F.OBSERVED_RESTARTING, P.RESTARTING),
        Row(P.RESTARTING, F.OBSERVED_FAILED, P.FAILED),
        Row(P.RESTARTING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.RESTARTING, F.DELETED, P.DELETED),
        Row(P.ABORTING, F.OBSERVED_ABORTING, P.ABORTING),
        Row(P.ABORTING, F.OBSERVED_ABORTED, P.ABORTED),
        Row(P.ABORTING, F.OBSERVED_RESTARTING, P.RESTARTING),  # resumed
        Row(P.ABORTING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.ABORTING, F.DELETED, P.DELETED),
        Row(P.ABORTED, F.OBSERVED_ABORTED, P.ABORTED),
        Row(P.ABORTED, F.OBSERVED_RESTARTING, P.RESTARTING),  # resumed
        Row(P.ABORTED, F.OBSERVED_PENDING, P.PENDING),  # resumed and restarted in between
        Row(P.ABORTED, F.DELETION_STARTED, P.TERMINATING),
        Row(P.ABORTED, F.DELETED, P.DELETED),
        Row(P.COMPLETING, F.OBSERVED_COMPLETING, P.COMPLETING),
        Row(P.COMPLETING, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.COMPLETING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.COMPLETING, F.DELETED, P.DELETED),
        Row(P.COMPLETED, F.OBSERVED_COMPLETED, P.COMPLETED),
        Row(P.COMPLETED, F.DELETION_STARTED, P.TERMINATING),
        Row(P.COMPLETED, F.DELETED, P.DELETED),
        Row(P.TERMINATING, F.OBSERVED_TERMINATING, P.TERMINATING),
        Row(P.TERMINATING, F.OBSERVED_TERMINATED, P.TERMINATED),
        Row(P.TERMINATING, F.DELETION_STARTED, P.TERMINATING),
        Row(P.TERMINATING, F.DELETED, P.DELETED),
        Row(P.TERMINATED, F.OBSERVED_TERMINATED, P.TERMINATED),
        Row(P.TERMINATED, F.DELETION_STARTED, P.TERMINATING),
        Row(P.TERMINATED, F.DELETED, P.DELETED),
        Row(P.FAILED, F.OBSERVED_FAILED, P.FAILED),
        Row(P.FAILED, F.DELETION_STARTED, P.TERMINATING),
        Row(P.FAILED, F.DELETED, P.DELETED),
    ),
)

_BY_STATUS = {phase.value: JobFact(f"Observed{phase.value}") for phase in JobPhase if phase is not P.DELETED}


def observe(job: Job) -> JobFact:
    if job.metadata.deletion_timestamp is not None:
        return F.DELETION_STARTED
    return _BY_STATUS.get(job.status.state.phase, F.OBSERVED_PENDING)


DECIDED = {
    P.RUNNING: frozenset({P.PENDING, P.RESTARTING}),
    P.COMPLETED: frozenset({P.PENDING, P.RUNNING}),
}
"""The phases the scheduler reports for a Job as its PodGroup moves (JobStatus decisions), each
with the phases it may report it from: a job aborting, completing, terminating or finished is
the controller's, and a job being deleted gets no status write (SEEDS S1)."""

FACT_OF = {P.RUNNING: F.OBSERVED_RUNNING, P.COMPLETED: F.OBSERVED_COMPLETED}
"""The fact a JobStatus decision folds into the Job's machine: the phase it reports."""
