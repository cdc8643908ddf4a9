"""Core Kubernetes kinds (v1 Namespace, Node, Pod, scheduling.k8s.io/v1 PriorityClass) and the pod
spec that templates reuse."""

from __future__ import annotations

from datetime import datetime

from msgspec import Struct

from domain import quantity
from domain.objects.meta import Condition, ObjectMeta, TemplateMeta
from domain.quantity import Quantity, ResourceList

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"


class Namespace(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta


class Taint(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    key: str
    value: str = ""
    effect: str = ""


class NodeSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    allocatable: dict[str, Quantity] = {}
    capacity: dict[str, Quantity] = {}
    conditions: list[Condition] = []


class Node(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()

    def is_ready(self) -> bool:
        """Ready unless a Ready condition says False or Unknown (no conditions: assume Ready)."""
        return all(c.status == "True" for c in self.status.conditions if c.type == "Ready")

    def allocatable(self) -> ResourceList:
        return dict(self.status.allocatable or self.status.capacity)


class ResourceRequirements(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class Container(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str = ""
    resources: ResourceRequirements = ResourceRequirements()

    def requests(self) -> dict[str, Quantity]:
        # Kubernetes defaults a missing request to the limit.
        if not self.resources.limits:
            return self.resources.requests
        return {**self.resources.limits, **self.resources.requests}


class Toleration(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


class NodeSelectorRequirement(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    node_selector_terms: list[NodeSelectorTerm] = []


class NodeAffinity(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None


class Affinity(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    node_affinity: NodeAffinity | None = None


class PodSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    scheduler_name: str = "default-scheduler"
    containers: list[Container] = []
    init_containers: list[Container] = []
    node_selector: dict[str, str] = {}
    tolerations: list[Toleration] = []
    affinity: Affinity | None = None
    node_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = ""  # "Never": the pod never preempts or reclaims for itself

    def requests(self) -> ResourceList:
        """Effective request: max(sum of containers, each init container), plus one pod."""
        total = quantity.sum_lists(c.requests() for c in self.containers)
        for init in self.init_containers:
            total = quantity.max_lists(total, init.requests())
        total[quantity.PODS] = total.get(quantity.PODS, 0) + quantity.MILLI
        return total


class PriorityClass(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    """A named priority; Volcano gives a PodGroup naming it this ``value`` as its job's priority."""

    api_version: str
    kind: str
    metadata: ObjectMeta
    value: int = 0
    global_default: bool = False


class PodTemplate(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    metadata: TemplateMeta = TemplateMeta()
    spec: PodSpec = PodSpec()


class PodStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    phase: str = "Pending"
    conditions: list[Condition] = []
    start_time: datetime | None = None  # when the kubelet started it: with a runtime estimate, when it ends


class Pod(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()

    def group_name(self) -> str:
        return self.metadata.annotations.get(GROUP_NAME_ANNOTATION, "")

    def is_finished(self) -> bool:
        return self.status.phase in ("Succeeded", "Failed")
