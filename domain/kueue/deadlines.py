"""Deadlines: when the Kueue cycle next acts with no new event, because the scheduler clock
passed a time it waits for. A caller that places SCHEDULE markers only after changes (the
simulator) needs one at that time too, or the step waits for an unrelated event.

The time-driven steps of the cycle, each with the instant it acts at:

* PodsReady timeout (``waitForPodsReady``): an admitted workload whose pods are not ready is
  evicted ``timeout`` after its admission (``eviction.pods_ready_deadline``);
* requeue backoff: a requeued workload (after a PodsReadyTimeout) is back in its queue at its
  ``requeueState.requeueAt`` (``queue.backing_off``), and is admitted or told why it waits;
* second-pass backoff (S3): a workload that needs a second pass and failed one tries again at
  ``second_pass_at`` (``second_pass.run``);
* Admission Fair Sharing's sample: a LocalQueue's usage moves only when it is sampled, once
  ``usageSamplingInterval`` has passed since its last sample. The usages order the workloads
  waiting in a ClusterQueue, so with workloads waiting in two of its LocalQueues a sample may
  put another at the head (under StrictFIFO, one that fits where the old head did not); and a
  sample adds what the LocalQueue's admitted workloads hold at that moment, so one taken late
  misses those that finished meanwhile. Each such LocalQueue's next sample is a deadline.

Steps that a decision makes due in the next cycle (the release of an evicted workload's quota
once its pods are gone, an admission after a release) wait for no time: the next marker takes
them, whenever it comes, and a cluster that writes the decision back sends an event anyway.

Any other LocalQueue's sample is no deadline: the cycle an event brings takes it then, over
the whole time since the last one (the decay of a usage with nothing admitted comes out the
same, to the rounding; an entry penalty is added undecayed). What the Volcano side of the cycle
reads of the clock is ``domain.scheduler.standstill``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from domain.kueue.admission_fair_sharing import applies
from domain.kueue.lifecycle_steps import pods_ready_deadline
from domain.kueue.settings import AdmissionFairSharing, KueueSettings
from domain.kueue.workloads import EPOCH, WorkloadIndex
from domain.lifecycle.workload import ConditionType as C
from domain.objects.kueue import ClusterQueue, LocalQueue
from domain.objects.meta import ObjectKey
from domain.state import ClusterState

SOON = timedelta(microseconds=1)  # "at the next cycle": the earliest instant after the clock


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
    if settings.admission_fair_sharing is not None:
        found.extend(_samples(state, settings.admission_fair_sharing, index, now))
    return min((at for at in found if at > now), default=None)


def _samples(state: ClusterState, afs: AdmissionFairSharing, index: WorkloadIndex, now: datetime) -> Iterator[datetime]:
    """The next sample of each LocalQueue, sampled before, of a ClusterQueue with Admission Fair
    Sharing, when it can matter: the LocalQueue holds admitted workloads (the sample adds what
    they hold now; a later one would miss those that finish before it), or workloads wait in it
    and in another LocalQueue of its ClusterQueue (the usages order them). One overdue (a
    LocalQueue first seen with an older ``lastUpdate`` in its status) is taken by the next
    cycle, whenever it comes."""
    local_queues = state.of_kind("LocalQueue")
    waiting: dict[str, set[ObjectKey]] = {}  # per ClusterQueue, its LocalQueues where workloads wait
    for (namespace, name), queued in index.queued.items():
        key = ObjectKey(f"{namespace}/{name}")
        lq = local_queues.get(key)
        if queued.infos and isinstance(lq, LocalQueue):
            waiting.setdefault(lq.spec.cluster_queue, set()).add(key)
    holding = {
        ObjectKey(f"{info.local_queue[0]}/{info.local_queue[1]}")
        for info in index.holding.values()
        if info.view.is_true(C.ADMITTED)
    }
    queues = state.of_kind("ClusterQueue")
    every = timedelta(seconds=afs.sampling)
    for key, usage in sorted(state.local_queue_usage.items()):
        lq = local_queues.get(key)
        if not isinstance(lq, LocalQueue):
            continue
        cq = queues.get(ObjectKey(lq.spec.cluster_queue))
        if not isinstance(cq, ClusterQueue) or not applies(cq):
            continue
        beside = waiting.get(lq.spec.cluster_queue, set())
        if key in holding or (key in beside and len(beside) > 1):
            yield max(usage.last_update + every, now + SOON)
