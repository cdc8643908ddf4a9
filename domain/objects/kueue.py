"""Kueue kinds (kueue.x-k8s.io v1beta1 and v1beta2): ResourceFlavor, Topology, Cohort,
ClusterQueue, LocalQueue, AdmissionCheck and Workload. Where v1beta2 renamed a field (``cohort`` ->
``cohortName``, ``parent`` -> ``parentName``) both spellings are accepted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from msgspec import Struct

from domain.objects.core import PodTemplate, Taint, Toleration
from domain.objects.meta import Condition, ObjectMeta
from domain.quantity import Quantity


class ResourceFlavorSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    node_labels: dict[str, str] = {}
    node_taints: list[Taint] = []
    tolerations: list[Toleration] = []
    topology_name: str | None = None


class ResourceFlavor(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: ResourceFlavorSpec = ResourceFlavorSpec()


class TopologyLevel(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    node_label: str


class TopologySpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    levels: list[TopologyLevel] = []


class Topology(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: TopologySpec = TopologySpec()


class ResourceQuota(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str
    resources: list[ResourceQuota] = []


class ResourceGroup(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    covered_resources: list[str] = []
    flavors: list[FlavorQuotas] = []


class FairSharing(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    weight: Quantity | None = None


class CohortSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    parent_name: str = ""
    parent: str = ""
    resource_groups: list[ResourceGroup] = []
    fair_sharing: FairSharing | None = None

    def parent_cohort(self) -> str:
        return self.parent_name or self.parent


class Cohort(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: CohortSpec = CohortSpec()


class BorrowWithinCohort(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    policy: str = "Never"
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = None


class LabelSelectorRequirement(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class AdmissionCheckStrategyRule(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str
    on_flavors: list[str] = []  # empty: every flavor


class AdmissionChecksStrategy(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    admission_checks: list[AdmissionCheckStrategyRule] = []


class AdmissionScope(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    admission_mode: str = "NoAdmissionFairSharing"  # or UsageBasedAdmissionFairSharing (KEP-4136)


class ClusterQueueSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    cohort_name: str = ""
    cohort: str = ""
    resource_groups: list[ResourceGroup] = []
    admission_checks: list[str] = []
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    queueing_strategy: str = "BestEffortFIFO"
    preemption: ClusterQueuePreemption = ClusterQueuePreemption()
    namespace_selector: LabelSelector | None = None
    stop_policy: str = "None"
    fair_sharing: FairSharing | None = None
    admission_scope: AdmissionScope | None = None

    def cohort_of(self) -> str:
        return self.cohort_name or self.cohort

    def checks_for(self, flavors: set[str]) -> list[str]:
        """The admission checks a workload assigned ``flavors`` must pass, sorted."""
        rules = self.admission_checks_strategy.admission_checks if self.admission_checks_strategy else []
        names = {*self.admission_checks, *(r.name for r in rules if not r.on_flavors or flavors & set(r.on_flavors))}
        return sorted(names)


class ClusterQueue(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: ClusterQueueSpec = ClusterQueueSpec()


class AdmissionCheckSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    controller_name: str = ""


class AdmissionCheck(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: AdmissionCheckSpec = AdmissionCheckSpec()


class LocalQueueSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    cluster_queue: str = ""
    fair_sharing: FairSharing | None = None


class AdmissionFairSharingStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    consumed_resources: dict[str, Quantity] = {}
    last_update: datetime | None = None


class LocalQueueFairSharingStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    admission_fair_sharing_status: AdmissionFairSharingStatus | None = None


class LocalQueueStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    fair_sharing: LocalQueueFairSharingStatus | None = None


class LocalQueue(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: LocalQueueSpec = LocalQueueSpec()
    status: LocalQueueStatus = LocalQueueStatus()


class PodSetTopologyRequest(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None


class PodSet(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str = "main"
    count: int = 1
    min_count: int | None = None
    template: PodTemplate = PodTemplate()
    topology_request: PodSetTopologyRequest | None = None


class WorkloadSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    queue_name: str = ""
    pod_sets: list[PodSet] = []
    priority: int | None = None
    priority_class_name: str = ""
    active: bool = True


class WorkloadStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    conditions: list[Condition] = []
    admission: dict[str, Any] | None = None
    unhealthy_nodes: list[dict[str, Any]] = []
    admission_checks: list[dict[str, Any]] = []
    requeue_state: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # The admission stays in its JSON form (it is written back as it is read); its one list
        # is checked here, so the code that walks it never meets a null or a scalar there.
        assignments = (self.admission or {}).get("podSetAssignments", [])
        if not isinstance(assignments, list) or not all(isinstance(a, dict) for a in assignments):
            raise ValueError("status.admission.podSetAssignments must be a list of objects")


class Workload(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: WorkloadSpec = WorkloadSpec()
    status: WorkloadStatus = WorkloadStatus()
