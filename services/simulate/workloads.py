"""Kueue in the simulated cluster: a Kueue job is a Workload, and the cluster does with it what
Kueue's batch/Job integration and the Job controller do with a suspended Job:

* at the job's submit time its Workload is ADDED, owned by the job's batch/v1 Job (the Job
  itself is not in the stream: no one schedules it);
* ``WorkloadStatus``: the decided status (conditions, admission, requeueState,
  unhealthyNodes) is written back to the Workload, one MODIFIED, as Kueue writes it to the API
  server. When it admits the workload (Admitted, not Evicted) and the job has no pods, the Job
  is unsuspended and its controller creates the pods: ``count`` of them, owned by the Job,
  with the node selector of the assigned flavors (their ``nodeLabels``) and, when the
  admission carries a ``topologyAssignment``, of the domain each pod was assigned to, plus
  the annotation ``kueue.x-k8s.io/workload`` that TAS puts on its pods;
* ``Evict`` of a Workload: the Job is suspended, so its pods are deleted (MODIFIED with a
  ``deletionTimestamp``, then DELETED) and none replaces them; Kueue then releases the quota
  and requeues the workload (two-phase release: statuses of the next cycles), and the next
  admission starts the job over with new pods;
* when all its pods have succeeded the Workload gets ``Finished`` (reason Succeeded), and the
  finished Job is deleted (``ttlSecondsAfterFinished: 0``): its pods, then the Workload;
* under ``waitForPodsReady`` (``pods_ready``) the Job integration reports ``PodsReady`` as
  Kueue's does: True once every pod of the admitted Job runs (our pods are ready when they
  run), kept while the workload stays admitted, and False once it no longer is. Kueue also
  writes False before the pods are ready; that write is left out, since only True counts.

Kueue reserves quota, not nodes: a pod scheduler binds the pods. Here that is our scheduler,
as in clusters that run Kueue in front of Volcano (the Job template names
``schedulerName: volcano``): each pod is a job of one in Volcano's ``default`` queue, with no
PodGroup, since Kueue already holds the quota of the whole gang.
"""

from __future__ import annotations

import uuid
from typing import Any

from domain.decisions import Decision, DecisionKind
from domain.kueue.tas import WORKLOAD_ANNOTATION
from domain.quantity import parse_milli
from services.simulate import kueue_quota
from services.simulate.cluster import SimCluster
from services.simulate.objects import Admitted, SimGroup, SimPod
from services.traces.events import pod_spec, workload_manifest
from services.traces.model import Job

FINISHED = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "Job finished successfully"}
PODS_READY = {
    "type": "PodsReady",
    "status": "True",
    "reason": "PodsReady",
    "message": "All pods were ready or succeeded since the workload admission",
}
PODS_NOT_READY = {**PODS_READY, "status": "False", "message": "Not all pods are ready or succeeded"}
_JOB_UIDS = uuid.UUID("3d0f6f4e-8a51-4b8e-b1c5-2f7d9e0a6c13")


class SimWorkloads:
    """The Workloads of one simulated cluster, and their Jobs' pods."""

    def __init__(
        self,
        cluster: SimCluster,
        scheduler_name: str,
        ib_label: str,
        objects: list[dict[str, Any]],
        *,
        pods_ready: bool = False,
    ) -> None:
        self.cluster = cluster
        self.scheduler_name = scheduler_name
        self.ib_label = ib_label
        self.objects = objects  # the flavors and queues (``quota``), created by ``add_objects``
        self.flavor_labels = kueue_quota.flavor_labels(objects)
        self.pods_ready = pods_ready  # waitForPodsReady: the Job integration reports PodsReady

    def _owner(self, job: Job) -> dict[str, Any]:
        uid = str(uuid.uuid5(_JOB_UIDS, f"{self.cluster.cluster}/{self.cluster.namespace}/{job.id}"))
        return {"apiVersion": "batch/v1", "kind": "Job", "name": job.id, "uid": uid, "controller": True}

    def workload_object(self, group: SimGroup) -> dict[str, Any]:
        job = group.job
        meta = self.cluster.meta("Workload", job.id, job.submit)
        meta["ownerReferences"] = [self._owner(job)]
        manifest = workload_manifest(job, meta, self.ib_label)
        manifest["status"] = dict(group.status)
        return manifest

    def pod_object(self, pod: SimPod, admitted: Admitted) -> dict[str, Any]:
        """A pod the Job controller created for an admission."""
        job = pod.job
        meta = self.cluster.pod_meta(pod)
        meta["labels"] = job.labels
        meta["ownerReferences"] = [self._owner(job)]
        spec: dict[str, Any] = {"schedulerName": self.scheduler_name, "priority": job.priority, **pod_spec(job)}
        if admitted.node_selector:
            spec["nodeSelector"] = dict(sorted(admitted.node_selector.items()))
        if admitted.topology:
            meta["annotations"] = {WORKLOAD_ANNOTATION: job.id}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}

    # -- what the cluster does --------------------------------------------------------------

    def apply(self, group: SimGroup, decision: Decision) -> None:
        if decision.kind is DecisionKind.WORKLOAD_STATUS:
            self.status(group, decision)
        elif decision.kind is DecisionKind.EVICT:
            self.evict(group)
        else:
            self.cluster.ignored[decision.kind.value] += 1

    def status(self, group: SimGroup, decision: Decision) -> None:
        """Write the decided status back; create the pods of a new admission."""
        fields = decision.fields
        status: dict[str, Any] = {"conditions": fields["conditions"], "admission": fields["admission"]}
        for key in ("requeueState", "unhealthyNodes"):
            if key in fields:
                status[key] = fields[key]
        group.status = status
        cluster = self.cluster
        for condition in fields["conditions"]:
            if condition["type"] == "QuotaReserved" and condition["status"] == "False":
                cluster.outcome.pending_reasons[condition.get("reason") or "Unknown"] += 1
        cluster.emit("MODIFIED", self.workload_object(group))
        if self.pods_ready and _is_true(status, "PodsReady") and not _is_true(status, "Admitted"):
            self._report(group, PODS_NOT_READY)
        if _is_true(status, "Admitted") and not _is_true(status, "Evicted") and not group.pods:
            self._create_pods(group, fields["admission"])

    def started(self, group: SimGroup) -> None:
        """One of the group's pods was bound: PodsReady=True once they all run (or have run)."""
        if not self.pods_ready or _is_true(group.status, "PodsReady") or not _is_true(group.status, "Admitted"):
            return
        if all(pod.phase in ("Running", "Succeeded") for pod in group.pods):
            self._report(group, PODS_READY)

    def _report(self, group: SimGroup, condition: dict[str, str]) -> None:
        """The Job integration writes ``condition`` (in the place of the one of its type, if any)."""
        conditions = list(group.status.get("conditions", []))
        types = [c["type"] for c in conditions]
        if condition["type"] in types:
            conditions[types.index(condition["type"])] = condition
        else:
            conditions.append(condition)
        group.status = {**group.status, "conditions": conditions}
        self.cluster.emit("MODIFIED", self.workload_object(group))

    def _create_pods(self, group: SimGroup, admission: dict[str, Any]) -> None:
        cluster = self.cluster
        job = group.job
        requests = {name: parse_milli(amount) for name, amount in job.requests.items()}
        for index, admitted in enumerate(self._placements(job, admission)):
            pod = SimPod(job, index, requests, attempt=group.admissions, created=cluster.now, admitted=admitted)
            group.pods.append(pod)
            cluster.pods[pod.name] = pod
            cluster.emit("ADDED", cluster.pod_object(pod))
        group.admissions += 1

    def _placements(self, job: Job, admission: dict[str, Any]) -> list[Admitted]:
        """Each pod's node selector: its flavors' node labels, and its TAS domain's levels."""
        assignment = admission["podSetAssignments"][0]
        flavors: dict[str, str] = {}
        for flavor in sorted(set(assignment.get("flavors", {}).values())):
            flavors.update(self.flavor_labels.get(flavor, {}))
        topology = assignment.get("topologyAssignment")
        if not topology:
            return [Admitted(flavors) for _ in range(job.tasks)]
        placements: list[Admitted] = []
        for domain in topology["domains"]:
            levels = dict(zip(topology["levels"], domain["values"], strict=True))
            placements.extend(Admitted({**flavors, **levels}, topology=True) for _ in range(int(domain["count"])))
        return placements

    def evict(self, group: SimGroup) -> None:
        """The Job is suspended: its pods go, none comes back until the next admission."""
        cluster = self.cluster
        for pod in group.pods:
            if pod.phase == "Running":
                cluster.release(pod)
            cluster.emit("MODIFIED", cluster.pod_object(pod, deleting=True))
            cluster.emit("DELETED", cluster.pod_object(pod, deleting=True))
            pod.phase = "Deleted"
            del cluster.pods[pod.name]
        group.pods = []
        group.record.restarts += 1
        if not group.waiting:
            group.waiting = True
            cluster.waiting += 1
        cluster.track()

    def finish(self, group: SimGroup) -> None:
        """All pods succeeded: Finished, then the Job goes with its pods and Workload."""
        cluster = self.cluster
        group.status = {**group.status, "conditions": [*group.status.get("conditions", []), FINISHED]}
        cluster.emit("MODIFIED", self.workload_object(group))
        cluster.delete_group(group, self.workload_object(group))


def _is_true(status: dict[str, Any], condition: str) -> bool:
    return any(c["type"] == condition and c["status"] == "True" for c in status.get("conditions", []))
