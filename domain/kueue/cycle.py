"""The Kueue cycle: quota admission of Workloads, run at the end of every scheduling cycle.

Each step writes at most one status per workload (a decision id is per target and seq), so a
workload released, deactivated or re-placed in a step waits for the next cycle to be admitted.
"""

from __future__ import annotations

from domain.decisions import Decision
from domain.kueue import (
    admission,
    admission_checks,
    admission_fair_sharing,
    cycle_view,
    lifecycle_steps,
    second_pass,
)
from domain.kueue.settings import KueueSettings
from domain.kueue.workload_status import Outbox
from domain.kueue.workloads import WorkloadIndex
from domain.state import ClusterState


def run(state: ClusterState, workloads: WorkloadIndex, settings: KueueSettings, *, seq: int) -> list[Decision]:
    """The Kueue decisions of the cycle at ``seq`` over ``workloads`` (the renewed index);
    ``settings`` is the config's ``kueue:``, parsed."""
    # 1. Snapshot: quota tree with the usage of every workload holding quota.
    snap = cycle_view.take(state, workloads)
    box = Outbox(snap, seq)
    # 2. Lifecycle: release evicted quota (phase two), deactivation, drains, PodsReady timeouts.
    lifecycle_steps.run(snap, box, settings)
    # 3. Admission checks: evict on Retry, admit once all are Ready (delayed topology waits for 4).
    admission_checks.run(snap, box)
    # 4. S3 second pass: place delayed topologies, re-place pods of failed nodes, mark failed nodes.
    second_pass.run(snap, box, fail_fast=settings.fail_fast)
    # 5. Admission Fair Sharing: sample the LocalQueues' usage when their interval has passed.
    afs = settings.admission_fair_sharing
    if afs is not None:
        admission_fair_sharing.sample(snap, afs)
    # 6. Admission: one head per ClusterQueue, preemption when allowed (fair sharing if enabled),
    #    the least used LocalQueue's workloads first where Admission Fair Sharing applies.
    admission.run(snap, box, settings.fair_sharing, afs)
    return box.out
