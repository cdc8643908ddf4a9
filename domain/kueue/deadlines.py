"""Deadlines: when the Kueue cycle next acts with no new event, because the scheduler clock
passed a time it waits for. A caller that places SCHEDULE markers only after changes (the
simulator) needs one at that time too, or the step waits for an unrelated event.

The time-driven steps of the cycle, each with the instant it acts at:

* PodsReady timeout (``waitForPodsReady``): an admitted workload whose pods are not ready is
  evicted ``timeout`` after its admission (``eviction.pods_ready_deadline``);
* requeue backoff: a requeued workload (after a PodsReadyTimeout) is back in its queue at its
  ``requeueState.requeueAt`` (``queue.backing_off``), and is admitted or told why it waits;
* second-pass backoff (S3): a workload that needs a second pass and failed one tries again at
  ``second_pass_at`` (``second_pass.run``).

Steps that a decision makes due in the next cycle (the release of an evicted workload's quota
once its pods are gone, an admission after a release) wait for no time: the next marker takes
them, whenever it comes, and a cluster that writes the decision back sends an event anyway.

Admission Fair Sharing's sampling waits for the clock too, but decides nothing by itself: only
admission reads the usage, and the cycle samples before admission, so a cycle that an event
brings takes the sample then, over the whole time since the last one (the decay of a usage
that held still meanwhile comes out the same; an entry penalty is added undecayed), and it
sets no deadline. Nothing on the Volcano side of the cycle reads the clock.
"""

from __future__ import annotations

from datetime import datetime

from domain.kueue.lifecycle_steps import pods_ready_deadline
from domain.kueue.settings import KueueSettings
from domain.kueue.workloads import EPOCH, WorkloadIndex
from domain.objects.meta import ObjectKey
from domain.state import ClusterState


def next_deadline(state: ClusterState, settings: KueueSettings, index: WorkloadIndex) -> datetime | None:
    """The earliest scheduler-clock instant after ``state.clock`` at which a Kueue cycle would
    act with no new event, or None; ``settings`` is the config's ``kueue:``, ``index`` the
    workload index the cycle keeps, renewed. It looks only at the live workloads that hold
    quota or wait in a queue."""
    if not state.objects.get("Workload"):
        return None
    now = state.clock or EPOCH
    timeout = settings.pods_ready_timeout
    queues = state.of_kind("ClusterQueue")
    found: list[datetime] = []
    for info in index.holding.values():
        status = state.status_of(info.obj)
        if status is None or ObjectKey(info.admitted_to) not in queues:
            continue  # the cycle looks only at workloads whose ClusterQueue exists
        if timeout is not None and (deadline := pods_ready_deadline(state, info, timeout)) is not None:
            found.append(deadline)
        if status.needs_second_pass and status.second_pass_at is not None:
            found.append(status.second_pass_at)
    for queued in index.queued.values():
        found.extend(info.view.requeue_at for info in queued.infos.values() if info.view.requeue_at is not None)
    return min((at for at in found if at > now), default=None)
