"""JobStatus decisions: a Volcano Job (batch.volcano.sh/v1alpha1) follows its PodGroup. When the
PodGroup runs the Job goes Pending -> Running, when it completes the Job is Completed. Written
only when the Job's phase changes, and never for a Job being deleted or gone (SEEDS S1)."""

from __future__ import annotations

from domain.decisions import Decision, JobStatus, ObjectRef
from domain.lifecycle.job import DECIDED, JobPhase
from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.meta import ObjectKey, key_of
from domain.objects.volcano import Job, PodGroup
from domain.state import ClusterState

_FOLLOWS = {PodGroupPhase.RUNNING: JobPhase.RUNNING, PodGroupPhase.COMPLETED: JobPhase.COMPLETED}


def job_statuses(state: ClusterState, seq: int) -> list[Decision]:
    out: list[Decision] = []
    jobs = state.objects.get("Job", {})
    if not jobs:
        return out  # no Volcano Job to follow its PodGroup (most streams: PodGroups and pods alone)
    for key, group in sorted(state.objects.get("PodGroup", {}).items()):
        if not isinstance(group, PodGroup):
            continue
        target = _FOLLOWS.get(state.phase_of("PodGroup", key))  # type: ignore[arg-type]
        if target is None:
            continue
        for owner in group.metadata.owner_references:
            job = jobs.get(ObjectKey(f"{group.metadata.namespace}/{owner.name}"))
            if owner.kind != "Job" or not isinstance(job, Job) or owner.uid not in ("", job.metadata.uid):
                continue
            phase = state.phase_of("Job", key_of(job.metadata))
            if phase is target or phase not in DECIDED[target]:
                continue  # unchanged, or the controller's to move (aborting, terminating...)
            decision = JobStatus.make(state.name, seq, ObjectRef.of(job), f"PodGroup{target.value}", phase=target.value)
            if state.record(decision):  # not while it is being deleted
                out.append(decision)
    return out
