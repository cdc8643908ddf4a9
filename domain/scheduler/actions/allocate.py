"""allocate: place whole gangs. Queue by queue order, job by job order, task by task order;
predicates filter the nodes, node order picks one, and the job's statement is committed only
when the job is ready, else discarded (Volcano's allocate action)."""

from __future__ import annotations

from domain.lifecycle.pod_group import PodGroupPhase
from domain.reasons import Reason, Verdict
from domain.scheduler import placement, sub_placement
from domain.scheduler.session import Session
from domain.scheduler.snapshot import JobInfo

NAME = "allocate"


def execute(session: Session) -> None:
    # 1. Jobs past enqueue with pending tasks that need resources; without the enqueue action,
    #    allocate admits Pending jobs itself, as Volcano does.
    admit_pending = "enqueue" not in session.config.actions
    waiting: list[JobInfo] = []
    for job in session.snapshot.jobs.values():
        if job.terminating or not any(not t.is_best_effort for t in job.pending()):
            continue
        if job.phase is PodGroupPhase.PENDING and not admit_pending:
            continue
        verdict = session.job_valid(job)
        if verdict is not None:
            session.found.refuse(job, verdict)
            continue
        waiting.append(job)
    # 2. Take the next queue (queue order, recomputed as shares change) and its next job.
    for job in session.in_queue_order(waiting):
        queue = session.snapshot.queues.get(job.queue)
        if queue is None or not queue.is_open:
            state = "missing" if queue is None else queue.state
            session.found.refuse(job, Verdict(Reason.QUEUE_NOT_OPEN, f"queue {job.queue} is {state}", NAME))
            continue
        if job.phase is PodGroupPhase.PENDING:
            job.phase = PodGroupPhase.INQUEUE
        # 3. Place it: inside one network domain when it asks for one, else on any nodes.
        _allocate(session, job)


def _allocate(session: Session, job: JobInfo) -> None:
    attempt = None
    found = session.found
    if job.subgroups:
        attempt, verdicts = sub_placement.place(session, job)
        if session.job_ready(job) is not None:
            for verdict in verdicts:
                found.refuse(job, verdict)
    elif job.topology is not None:
        attempt, verdict = placement.place_in_domain(session, job)
        if attempt is None and job.topology.hard and verdict is not None:
            session.found.refuse(job, verdict)
            return
    if attempt is None:
        nodes = list(session.snapshot.nodes.values())
        attempt = placement.place(session, job, [t for t in job.pending() if not t.is_best_effort], nodes)
    # 4. Commit when the gang is ready; otherwise undo every placement and say why.
    not_ready = session.job_ready(job)
    if not_ready is None:
        attempt.statement.commit()
        return
    found.tentative[job.key] = max(found.tentative.get(job.key, 0), attempt.statement.placed())
    found.fits[job.key] = {**found.fits.get(job.key, {}), **attempt.failed}
    found.refuse(job, attempt.refused or not_ready)
    attempt.statement.discard()
