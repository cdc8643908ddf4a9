"""The Volcano session of a scheduling cycle: snapshot, queue rules, session, actions, close."""

from __future__ import annotations

from domain.changes import Changes
from domain.decisions import Decision
from domain.objects.meta import ObjectKey
from domain.recorded import HeldRooms
from domain.scheduler import close_decisions, job_status, pod_status, queue_rules, registry, snapshot, standstill
from domain.scheduler.cache import SchedulerCache
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.session import Seen, Session
from domain.scheduler.snapshot import Snapshot
from domain.state import ClusterState


def run(
    state: ClusterState, cache: SchedulerCache, changes: Changes, config: SchedulerConfig, *, seq: int
) -> list[Decision]:
    standstill.forget(cache)
    # 1. Take the snapshot: nodes, queues, jobs and tasks, network domains (the cache renewed
    #    where ``changes`` says the state changed).
    view = snapshot.build(state, config, cache, changes)
    # 2. Apply the queue rules (SEEDS S2): refused queues and jobs in inner queues leave the snapshot.
    out = queue_rules.refuse_queues(state.name, state.record, view, seq)
    out.extend(queue_rules.reject_jobs(state.name, state.record, view, seq))
    session = _act(view, config, cache)
    state.record(HeldRooms(tuple(session.found.holding)))  # what operators see held (no decision)
    # 5. Close: binds and evictions, then the statuses that changed (lone pods' too), in a fixed order.
    out.extend(close_decisions.placements(state, session, seq))
    out.extend(close_decisions.pod_group_statuses(state, session, seq))
    out.extend(pod_status.pod_statuses(state, session, seq))
    out.extend(job_status.job_statuses(state, seq))
    out.extend(close_decisions.queue_statuses(state, session, seq))
    session.close()
    standstill.keep(cache)
    return out


def _act(view: Snapshot, config: SchedulerConfig, cache: SchedulerCache, seen: Seen | None = None) -> Session:
    # 3. Open the session; each plugin registers its callbacks, tier by tier (node rankings
    #    carry over from the last cycle when they can, see ``candidates``).
    session = registry.open_session(view, config, cache)
    session.seen = seen
    # 4. Run the actions in the configured order (none has anything to do on an idle snapshot).
    for action in () if view.idle() else config.actions:
        registry.ACTIONS[action](session)
    return session


def dry_run(state: ClusterState, config: SchedulerConfig, watch: frozenset[ObjectKey]) -> Seen:
    """What the next cycle's allocate would see (``explain``): the room gangs past their bound
    hold, and what each job of ``watch`` saw when it was tried; on a snapshot of its own,
    recording nothing in ``state``."""
    view = snapshot.fresh(state, config)
    queue_rules.refuse_queues(state.name, _keep_none, view, 0)
    queue_rules.reject_jobs(state.name, _keep_none, view, 0)
    seen = Seen(watch)
    seen.holding = _act(view, config, SchedulerCache(), seen).found.holding
    return seen


def _keep_none(_: object) -> bool:
    return False
