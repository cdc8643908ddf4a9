"""What a snapshot takes from one pod or one PodGroup object alone, memoised per object.

The objects of a ``ClusterState`` are immutable and replaced on every change, so what is derived
from one (a pod's effective request, what its task takes from it, what a job takes from its
PodGroup) stays right for as long as the same object is there. ``Facts`` keeps these between
cycles in the scheduler's cache; a fresh one gives the same snapshot. A pod's are kept under its
key, with the object they were taken from: a new object under the key replaces them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from msgspec import Struct, structs

from domain.objects.core import Pod
from domain.objects.meta import ObjectKey
from domain.objects.volcano import NETWORK_TOPOLOGY_ANNOTATION, PodGroup
from domain.quantity import ResourceList
from domain.scheduler.network_domains import TopologyRequest, hyper_request

TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"  # the Volcano Job task a pod belongs to (minTaskMember)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class PodFacts(Struct, frozen=True, gc=False):
    """What a snapshot's task takes from its pod object alone (a struct: one is made per pod object)."""

    group: str  # its PodGroup's name; "" for a lone pod
    job: ObjectKey | None  # its PodGroup's key; None for a lone pod (the pod's own key)
    request: ResourceList  # shared: never change it
    priority: int
    role: str
    created: float


class GroupFacts(Struct, frozen=True, gc=False):
    """What a snapshot's job takes from its PodGroup object alone."""

    created: float
    topology: TopologyRequest | None
    job_owners: tuple[tuple[ObjectKey, str], ...]  # (key, uid) of the Volcano Jobs that own it


@dataclass(slots=True, eq=False)
class Facts:
    pods: dict[ObjectKey, tuple[Pod, PodFacts]] = field(default_factory=dict)  # pod key -> (pod, its facts)
    groups: dict[int, tuple[PodGroup, str, GroupFacts]] = field(default_factory=dict)  # id -> (group, label, facts)


def request_of(memo: Facts, key: ObjectKey, pod: Pod) -> ResourceList:
    """``pod.spec.requests()`` of the pod ``key``, computed once per pod object; the caller must not change it."""
    return pod_facts(memo, key, pod).request


def seconds(moment: datetime | None) -> float:
    return ((moment or _EPOCH) - _EPOCH).total_seconds()


def pod_facts(memo: Facts, key: ObjectKey, pod: Pod) -> PodFacts:
    """What a task takes from its pod (the pod ``key``) alone, computed once per pod object."""
    entry = memo.pods.get(key)
    if entry is None or entry[0] is not pod:
        name = pod.group_name()
        job = ObjectKey(f"{pod.metadata.namespace}/{name}") if name else None
        # The task name: the annotation, else the label of the same name (Volcano's getTaskID).
        role = pod.metadata.annotations.get(TASK_SPEC_ANNOTATION) or pod.metadata.labels.get(TASK_SPEC_ANNOTATION, "")
        facts = PodFacts(
            name, job, pod.spec.requests(), pod.spec.priority or 0, role, seconds(pod.metadata.creation_timestamp)
        )
        entry = memo.pods[key] = (pod, facts)
    return entry[1]


def _topology(group: PodGroup, label: str) -> TopologyRequest | None:
    if group.metadata.annotations.get(NETWORK_TOPOLOGY_ANNOTATION) == "ib-cluster":
        return TopologyRequest(hard=True, highest_tier=None, label=label)
    spec = group.spec.network_topology
    if spec is None:
        return None
    return hyper_request(spec)


def same_but_status(old: PodGroup, new: PodGroup) -> bool:
    """Whether ``new`` is ``old`` written again with another status (and resourceVersion), as
    a scheduler's own status write comes back: a job takes nothing else from it."""
    return old is new or (
        old.spec == new.spec
        and old.api_version == new.api_version
        and old.metadata == structs.replace(new.metadata, resource_version=old.metadata.resource_version)
    )


def group_facts(memo: Facts, group: PodGroup, label: str) -> GroupFacts:
    """What a job takes from its PodGroup alone (``label`` names IB clusters), once per object."""
    entry = memo.groups.get(id(group))
    if entry is None or entry[0] is not group or entry[1] != label:
        meta = group.metadata
        owners = tuple(
            (ObjectKey(f"{meta.namespace}/{owner.name}"), owner.uid)
            for owner in meta.owner_references
            if owner.kind == "Job"
        )
        facts = GroupFacts(seconds(meta.creation_timestamp), _topology(group, label), owners)
        entry = memo.groups[id(group)] = (group, label, facts)
    return entry[2]


def forget_gone(memo: Facts, pods: dict[ObjectKey, Pod], changed: set[ObjectKey], groups: dict[object, object]) -> None:
    """Drop the memoised facts of the pods and PodGroup objects the state no longer holds;
    ``changed`` are the pods changed since the last call (a pod's facts go when it does)."""
    for key in changed:
        if key not in pods:
            memo.pods.pop(key, None)
    if len(memo.groups) > 2 * len(groups) + 64:
        live = {id(g) for g in groups.values()}
        memo.groups = {k: v for k, v in memo.groups.items() if k in live}
