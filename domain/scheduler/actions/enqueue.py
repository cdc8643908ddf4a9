"""enqueue: Pending gangs become Inqueue when their queue can hold their minimum resources.

Admission reserves the minimum at once (the JobEnqueued hooks), so later gangs of the same
cycle see it; a gang that is not admitted keeps the verdict that says why it waits. A PodGroup
without pods yet is admitted too, as upstream's enqueue does: Volcano's job controller creates a
Job's pods only once its PodGroup is Inqueue (delay-pod-creation).
"""

from __future__ import annotations

from domain.lifecycle.pod_group import PodGroupPhase
from domain.reasons import Reason, Verdict
from domain.scheduler.infos import JobInfo
from domain.scheduler.session import Session

NAME = "enqueue"


def admissible(session: Session, job: JobInfo) -> Verdict | None:
    """Why the job may not be enqueued now, or None: its queue, its validity, then the vote."""
    queue = session.snapshot.queues.get(job.queue)
    if queue is None:
        return Verdict(Reason.QUEUE_NOT_FOUND, f"queue {job.queue} does not exist", NAME)
    if not queue.is_open:
        return Verdict(Reason.QUEUE_NOT_OPEN, f"queue {job.queue} is {queue.state}: it admits no new jobs", NAME)
    # A gang without tasks is not judged on them: its controller creates them once it is admitted.
    return (session.job_valid(job) if job.tasks else None) or session.job_enqueueable(job)


def execute(session: Session) -> None:
    # 1. Pending jobs, with pending tasks or none yet, grouped by queue; jobs in unknown or
    #    closed queues are refused at once.
    jobs = session.snapshot.jobs
    waiting = [
        job
        for key in session.snapshot.unadmitted
        if (job := jobs.get(key)) is not None
        and job.phase is PodGroupPhase.PENDING and job.pending() and not job.terminating
    ]  # fmt: skip
    waiting.extend(job for job in session.snapshot.unborn if job.phase is PodGroupPhase.PENDING)
    # 2. Take the queue that goes next (queue order), and its next job (job order).
    for job in session.in_queue_order(waiting):
        # 3. Admit it if the queue, the gang and every quota vote allow; else record why not.
        verdict = admissible(session, job)
        if verdict is None:
            session.snapshot.spoil(job.key)
            job.phase = PodGroupPhase.INQUEUE
            session.job_enqueued(job)
        else:
            session.found.refuse(job, verdict)
