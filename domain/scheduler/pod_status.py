"""Pod status: a pod of ours in no PodGroup that a cycle could not place says why on the pod
itself, as kube-scheduler and Volcano do: condition ``PodScheduled``=False, reason
``Unschedulable``, the node summary as message ("0/3 nodes are unavailable: 3 Insufficient cpu.").
Written when the pod first waits and whenever the message changes (CONTRACT section 2).
"""

from __future__ import annotations

from domain.decisions import Condition, Decision, ObjectRef, PodStatus
from domain.reasons import most_severe
from domain.scheduler.infos import TaskStatus
from domain.scheduler.session import Session
from domain.state import ClusterState


def pod_statuses(state: ClusterState, session: Session, seq: int) -> list[Decision]:
    out = []
    jobs, found = session.snapshot.jobs, session.found
    pods = state.machines.get("Pod", {})
    for key in sorted(k for k in found.verdicts if (job := jobs.get(k)) is not None and job.group is None):
        task = jobs[key].tasks[0]
        machine = pods.get(task.key)
        if task.status is not TaskStatus.PENDING or machine is None or machine.uid != task.pod.metadata.uid:
            continue
        summary = found.fits.get(key, {}).get(task.key)
        verdict = most_severe(found.verdicts[key])
        message = summary.message() if summary is not None else verdict.message if verdict is not None else ""
        conditions = [Condition("PodScheduled", "False", "Unschedulable", message)]
        decision = PodStatus.make(state.name, seq, ObjectRef.of(task.pod), "Unschedulable", conditions=conditions)
        if state.record(decision):  # unless the pod says this already
            out.append(decision)
    return out
