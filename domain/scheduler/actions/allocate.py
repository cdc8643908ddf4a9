"""allocate: place whole gangs. Queue by queue order, job by job order, task by task order;
predicates filter the nodes, node order picks one, and the job's statement is committed only
when the job is ready, else discarded (Volcano's allocate action).

As upstream, a job is placed only until it is ready (minMember met): then it goes back to its
queue, and the gang plugin's job order puts ready jobs after unready ones, so an elastic job's
pods beyond its minimum go after other gangs (one more each time its turn comes again).

A gang that is not ready but that plugins let pipeline (JobPipelined: ``sla``, ``reservation``)
holds the room it waits for from the jobs after it (``held_room``): taken when the next job is
tried, when a later action reads the nodes, or, for a gang that was lent held room, before the
lent holds take theirs again (its hold was planned with that room free); a hold that is the
cycle's last attempt takes none.

With ``keepWaitingReasons``, a gang that has said it waits for room and still cannot fit is
passed over, and keeps that status (``parked``): at its turn, or, when no preemption has
pipelined pods, left out of the order at once.

A gang pipelined by an earlier preemption gives its held room back and is placed afresh: once
its victims are gone it fits there (nobody else could take that room). While they are still
leaving it stays pipelined; when they are gone and it still does not fit, it stops waiting.
"""

from __future__ import annotations

from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.meta import ObjectKey
from domain.reasons import Reason, Verdict
from domain.scheduler import held_room, lending, parked, parked_pool, placement, retry, shortfall, sub_placement
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.session import Session
from domain.scheduler.statement import Statement

NAME = "allocate"


def execute(session: Session) -> None:
    # 1. Jobs past enqueue with pending tasks that need resources; without the enqueue action,
    #    allocate admits Pending jobs itself, as Volcano does.
    admit_pending = "enqueue" not in session.config.actions
    held = {t.job for t in session.snapshot.pipelined}
    pool = parked_pool.Pool.of(session)  # gangs that would be parked at their turn are left out at once
    jobs = session.snapshot.jobs
    waiting: list[JobInfo] = []
    for key in session.snapshot.waiting_keys() if pool is None else pool.awake():
        if (job := jobs.get(key)) is None:
            continue
        if job.terminating or (key not in held and not job.tally().asking):
            continue
        if job.phase is PodGroupPhase.PENDING and not admit_pending:
            continue
        if pool is not None and pool.parks(job):
            continue
        verdict = session.job_valid(job)
        if verdict is not None:
            session.found.refuse(job, verdict)
            continue
        waiting.append(job)
    # 2. Take the next queue (queue order, recomputed as shares change) and its next job.
    order = session.in_queue_order(waiting)
    later = [] if pool is None else pool.behind(order)  # gangs asked once the first job's attempt is over
    failed: dict[ObjectKey, set[ObjectKey]] = {}  # job -> its tasks that found no node this session
    holds: list[held_room.Held] = []  # room held by waiting gangs, in the order taken
    for job in order:
        queue = session.snapshot.queues.get(job.queue)
        if queue is None or not queue.is_open:
            state = "missing" if queue is None else queue.state
            session.found.refuse(job, Verdict(Reason.QUEUE_NOT_OPEN, f"queue {job.queue} is {state}", NAME))
            continue
        if job.phase is PodGroupPhase.PENDING:
            session.snapshot.spoil(job.key)
            job.phase = PodGroupPhase.INQUEUE
        # 3. Place it: inside one network domain when it asks for one, else on any nodes; a job
        #    made ready with tasks still pending goes back to its queue.
        held_room.take(holds)  # the room held so far, before the job reads the nodes
        if _allocate(session, job, failed.setdefault(job.key, set()), holds, pool):
            order.push(job)
        if later and pool is not None:  # they come after it: the room it holds is taken before their turn
            held_room.take(holds)
            pool.ask(later, holds, order)
            later = []
    session.found.holding = [held_room.room_of(held) for held in holds]  # for operators (``HeldRooms``)
    if _nodes_read_later(session):
        held_room.take(holds)


def _nodes_read_later(session: Session) -> bool:
    """Whether an action after allocate may read the nodes' free room: any but a backfill with
    no best-effort pod waiting (it places those alone)."""
    actions = session.config.actions
    if NAME not in actions:  # run on its own
        return True
    later = actions[actions.index(NAME) + 1 :]
    return any(action != "backfill" or session.snapshot.best_effort for action in later)


def _allocate(
    session: Session, job: JobInfo, failed: set[ObjectKey], holds: list[held_room.Held], pool: parked_pool.Pool | None
) -> bool:
    """Place ``job``; whether it was made ready with tasks of it still to try (it goes back)."""
    # Held room that the job's runtime estimate says it cannot delay is lent to it (EASY's rule).
    lent = lending.lendable(session, job, holds)
    if parked.parked(session, job, lent):  # it has said why, and still too few copies fit
        if pool is not None:
            pool.park(job)  # and is left out of the next sessions until something wakes it
        return False
    # A plain gang that failed last time and sees the same nodes with the same room fails alike
    # (and holds room again, when it may); room lent to it is part of the room it sees (and is
    # lent only for an attempt).
    keep = retry.can_keep(session, job)
    repeated = keep and retry.tried(session, job) and retry.repeat(session, job, lending.lent_room(lent))
    if repeated and not session.job_pipelined(job):
        return False
    lending.lend(lent)
    if session.seen is not None and job.key in session.seen.watch:  # a dry run: what the job saw
        seen = session.seen
        seen.room[job.key] = {node.name: dict(node.idle) for node in session.snapshot.node_list()}
        seen.held_from[job.key] = [held_room.room_of(h) for h in holds if h.job is not job and h not in lent]
    again = False
    if repeated:  # its last attempt's findings given again: it holds room as after that attempt
        _hold(session, job, holds)
    else:
        verdicts = len(session.found.verdicts.get(job.key, []))
        fits = dict(session.found.fits.get(job.key, {}))
        # Pipelined members give their room back first; undone below unless the gang is placed or gives up.
        held = Statement(session)
        for task in job.pipelined():
            held.unpipeline(task)
        again = _place(session, job, held, failed, holds, covered=keep)
        if keep:
            retry.remember(session, job, verdicts, fits)  # before the room lent to it is held again: what it saw
    if lent:  # a hold it made, planned with the lent room given back, takes its room before they do
        held_room.take(holds)
    lending.hold_again(lent)
    return again


def _still_released(session: Session, nodes: set[str]) -> bool:
    """Whether pods are still leaving any of ``nodes`` (the victims a pipelined gang waits for)."""
    jobs = session.snapshot.jobs.values()
    return any(t.status is TaskStatus.RELEASING and t.node in nodes for j in jobs for t in j.tasks)


def _place(
    session: Session,
    job: JobInfo,
    held: Statement,
    failed: set[ObjectKey],
    holds: list[held_room.Held],
    *,
    covered: bool,
) -> bool:
    """Place ``job``'s pending tasks; ``covered``: its queue can take all of them at once, so no
    quota check can refuse one (``retry.can_keep``)."""
    attempt = None
    rest: list[TaskInfo] = []  # tasks of a plain job left to try once it is ready
    found = session.found
    if job.subgroups:
        attempt, verdicts = sub_placement.place(session, job)
        if attempt is None or session.job_ready(job) is not None:
            for verdict in verdicts:
                found.refuse(job, verdict)
        if attempt is None:  # no domain of the gang's hard topology holds its sub-gangs
            _keep_waiting(session, held)
            return False
    elif job.topology is not None:
        attempt, verdict = placement.place_in_domain(session, job)
        if attempt is None and job.topology.hard and verdict is not None:
            session.found.refuse(job, verdict)
            _keep_waiting(session, held)
            return False
    if attempt is None:
        asking = job.tally().asking
        tasks = [t for t in asking if t.key not in failed] if failed else asking
        need = job.min_member - job.placed()
        short = shortfall.find(session, job, tasks, session.snapshot.node_list(), need) if covered else None
        if short is not None:  # alike tasks, too few of them fit: the attempt's findings without it
            found.tentative[job.key] = max(found.tentative.get(job.key, 0), short.placed)
            found.fits[job.key] = {**found.fits.get(job.key, {}), **short.failed}
            failed.update(short.failed)
            found.refuse(job, short.verdict)
            _keep_waiting(session, held)
            _hold(session, job, holds)
            return False
        attempt = placement.place(
            session, job, tasks, session.snapshot.node_list(),
            enough=lambda placed: placed >= need and session.job_ready(job) is None, covered=covered,
        )  # fmt: skip
        failed.update(attempt.failed)
        rest = [t for t in tasks if t.status is TaskStatus.PENDING and t.key not in failed]
    # 4. Commit when the gang is ready; otherwise undo every placement and say why.
    not_ready = session.job_ready(job)
    if not_ready is None:
        held.commit()
        placed = attempt.statement.placed()
        attempt.statement.commit()
        return bool(placed and rest)
    found.tentative[job.key] = max(found.tentative.get(job.key, 0), attempt.statement.placed())
    found.fits[job.key] = {**found.fits.get(job.key, {}), **attempt.failed}
    found.refuse(job, attempt.refused or not_ready)
    attempt.statement.discard()
    _keep_waiting(session, held)
    if attempt.refused is None:
        _hold(session, job, holds)
    return False


def _hold(session: Session, job: JobInfo, holds: list[held_room.Held]) -> None:
    """A gang that did not fit, when plugins let it (JobPipelined), keeps its room from later
    jobs."""
    if session.job_pipelined(job):
        holding = held_room.hold(session, job)
        if holding is not None:
            holds.append(holding)


def _keep_waiting(session: Session, held: Statement) -> None:
    """A gang that could not be placed keeps its pipelined room while its victims are leaving."""
    nodes = {node for _, _, node in held.operations}
    if nodes and not _still_released(session, nodes):
        held.commit()  # its victims are gone and it still does not fit: it stops waiting
    else:
        held.discard()
