"""backfill: best-effort pods (no requests) into whatever is left after allocate.

SEEDS S5: a task that fails its predicates records why, and the loop goes on with the next
task; one poison pod never starves the pods behind it (Volcano #4028).
"""

from __future__ import annotations

from domain.lifecycle.pod_group import PodGroupPhase
from domain.reasons import Reason, Verdict
from domain.scheduler import placement
from domain.scheduler.session import Session
from domain.scheduler.statement import Statement

NAME = "backfill"


def execute(session: Session) -> None:
    snapshot = session.snapshot
    # 1. Best-effort pending tasks of admitted, valid jobs in open queues.
    tasks = []
    for key in snapshot.best_effort:  # the jobs with such a task waiting when the session began (few)
        job = snapshot.jobs.get(key)
        queue = None if job is None else snapshot.queues.get(job.queue)
        if job is None or job.phase is PodGroupPhase.PENDING or job.terminating or queue is None or not queue.is_open:
            continue
        waiting = [t for t in job.tally().pending if t.best_effort]
        # Validity only matters (and only is asked) for a job with best-effort tasks waiting.
        if waiting and session.job_valid(job) is None:
            tasks.extend((session.queue_key(queue), session.job_key(job), t) for t in waiting)
    # 2. In queue, job, then task order.
    tasks.sort(key=lambda item: (item[0], item[1], session.task_key(item[2])))
    nodes = snapshot.node_list()
    for _, _, task in tasks:
        job = snapshot.jobs[task.job]
        # 3. Predicates and node order; a failure is recorded and the loop continues (S5).
        node, summary = placement.best_node(session, task, nodes)
        if node is None:
            session.found.fits.setdefault(job.key, {})[task.key] = summary
            session.found.refuse(job, Verdict(Reason.NOT_ENOUGH_RESOURCES, summary.message(), NAME))
            continue
        # 4. Place it; commit when the gang is ready (pending best-effort members count).
        statement = Statement(session)
        statement.allocate(task, node.name)
        if session.job_ready(job) is None:
            statement.commit()
        else:
            statement.discard()
