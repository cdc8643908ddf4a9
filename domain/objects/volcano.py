"""Volcano kinds: PodGroup and Queue (scheduling.volcano.sh/v1beta1), Job
(batch.volcano.sh/v1alpha1) and HyperNode (topology.volcano.sh/v1alpha1)."""

from __future__ import annotations

from msgspec import Struct

from domain.objects.core import PodTemplate
from domain.objects.meta import Condition, ObjectMeta
from domain.quantity import Quantity

NETWORK_TOPOLOGY_ANNOTATION = "volcano.sh/network-topology"


class NetworkTopologySpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""  # instead of highestTierAllowed: the tier whose HyperNodes carry this tierName


class SubGroupPolicy(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str = ""
    match_label_keys: list[str] = []
    sub_group_size: int | None = None
    min_sub_groups: int | None = None
    network_topology: NetworkTopologySpec | None = None


class PodGroupSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    min_member: int = 0
    min_task_member: dict[str, int] = {}
    min_resources: dict[str, Quantity] | None = None
    queue: str = "default"
    priority_class_name: str = ""
    network_topology: NetworkTopologySpec | None = None
    sub_group_policy: list[SubGroupPolicy] = []


class PodGroupStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    phase: str = ""
    conditions: list[Condition] = []
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PodGroup(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus = PodGroupStatus()


class QueueGuarantee(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    resource: dict[str, Quantity] = {}


class QueueSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    parent: str = ""
    weight: int = 1
    priority: int = 0
    capability: dict[str, Quantity] = {}
    deserved: dict[str, Quantity] = {}
    guarantee: QueueGuarantee = QueueGuarantee()
    reclaimable: bool | None = None


class QueueStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    state: str = ""
    allocated: dict[str, Quantity] = {}


class Queue(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: QueueSpec = QueueSpec()
    status: QueueStatus = QueueStatus()


class TaskSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str = ""
    replicas: int = 0
    min_available: int | None = None
    template: PodTemplate = PodTemplate()


class JobState(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    phase: str = ""
    reason: str = ""
    message: str = ""


class JobSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    min_available: int = 0
    queue: str = "default"
    scheduler_name: str = ""
    priority_class_name: str = ""
    tasks: list[TaskSpec] = []
    network_topology: NetworkTopologySpec | None = None


class JobStatus(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    state: JobState = JobState()


class Job(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: JobSpec = JobSpec()
    status: JobStatus = JobStatus()


class ExactMatch(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str


class RegexMatch(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    pattern: str


class LabelMatch(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    match_labels: dict[str, str] = {}


class MemberSelector(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelMatch | None = None


class HyperNodeMember(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    type: str = "Node"
    selector: MemberSelector = MemberSelector()


class HyperNodeSpec(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    tier: int
    tier_name: str = ""
    members: list[HyperNodeMember] = []


class HyperNode(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str
    kind: str
    metadata: ObjectMeta
    spec: HyperNodeSpec
