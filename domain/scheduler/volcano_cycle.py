"""The Volcano session of a scheduling cycle: snapshot, queue rules, session, actions, close."""

from __future__ import annotations

from domain.changes import Changes
from domain.decisions import Decision
from domain.scheduler import close_decisions, job_status, pod_status, queue_rules, registry, snapshot
from domain.scheduler.cache import SchedulerCache
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState


def run(
    state: ClusterState, cache: SchedulerCache, changes: Changes, config: SchedulerConfig, *, seq: int
) -> list[Decision]:
    # 1. Take the snapshot: nodes, queues, jobs and tasks, network domains (the cache renewed
    #    where ``changes`` says the state changed).
    view = snapshot.build(state, config, cache, changes)
    # 2. Apply the queue rules (SEEDS S2): refused queues and jobs in inner queues leave the snapshot.
    out = queue_rules.refuse_queues(state, view, seq)
    out.extend(queue_rules.reject_jobs(state, view, seq))
    # 3. Open the session; each plugin registers its callbacks, tier by tier (node rankings
    #    carry over from the last cycle when they can, see ``candidates``).
    session = registry.open_session(view, config, cache)
    # 4. Run the actions in the configured order (none has anything to do on an idle snapshot).
    for action in () if view.idle() else config.actions:
        registry.ACTIONS[action](session)
    # 5. Close: binds and evictions, then the statuses that changed (lone pods' too), in a fixed order.
    out.extend(close_decisions.placements(state, session, seq))
    out.extend(close_decisions.pod_group_statuses(state, session, seq))
    out.extend(pod_status.pod_statuses(state, session, seq))
    out.extend(job_status.job_statuses(state, seq))
    out.extend(close_decisions.queue_statuses(state, session, seq))
    return out
