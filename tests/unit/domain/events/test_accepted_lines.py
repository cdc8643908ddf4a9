"""domain.events.parse_event: CONTRACT section 1 lines into typed events: watch events of every
kind, markers, bookmarks and unknown kinds."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from domain.events import (
    Bookmark,
    EventType,
    ScheduleMarker,
    UnknownKind,
    WatchEvent,
    parse_event,
    peek_cluster,
)
from domain.objects import core, kueue, volcano
from tests import builders as b
from tests.unit.domain.events.lines import GI, MI, dig, line, minimal, watch

# --------------------------------------------------------------------------- accepted lines


@dataclass(frozen=True)
class GoodCase:
    name: str
    obj: dict[str, Any]
    want_type: type
    want: dict[str, Any] = field(default_factory=dict)


def kueue_obj(version: str, kind: str, name: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": kind, "metadata": {"name": name}, "spec": spec, **extra}


_QUOTA_GROUPS = [
    {
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [
            {
                "name": "a100",
                "resources": [
                    {"name": "cpu", "nominalQuota": 9, "borrowingLimit": "2", "lendingLimit": "500m"},
                    {"name": "memory", "nominalQuota": "36Gi"},
                    {"name": "nvidia.com/gpu", "nominalQuota": "8"},
                ],
            },
            {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "0"}]},
        ],
    }
]

_TEMPLATE = {
    "metadata": {"labels": {"app": "train"}},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "200Mi"}}}]},
}

GOOD_CASES = [
    GoodCase(
        "a PriorityClass keeps its value and whether it is the global default",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "globalDefault": True,
            "preemptionPolicy": "Never",
        },
        core.PriorityClass,
        {"metadata.name": "high", "value": 1000, "global_default": True},
    ),
    GoodCase(
        "a Pod that never preempts",
        {**minimal(), "spec": {"preemptionPolicy": "Never", "priority": 5}},
        core.Pod,
        {"spec.preemption_policy": "Never", "spec.priority": 5},
    ),
    GoodCase(
        "a Namespace keeps its labels",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"tier": "gold"}}},
        core.Namespace,
        {"metadata.name": "team-a", "metadata.labels": {"tier": "gold"}},
    ),
    GoodCase(
        "a Node with labels, taints, unschedulable and allocatable incl. GPUs",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "gpu-0", "uid": "u1", "resourceVersion": "7", "labels": {"zone": "a"}},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}, {"key": "x", "effect": "NoExecute"}],
            },
            "status": {
                "allocatable": {"cpu": "15800m", "memory": "64Gi", "pods": 110, "nvidia.com/gpu": "4"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        core.Node,
        {
            "metadata.uid": "u1",
            "metadata.resource_version": "7",
            "metadata.labels": {"zone": "a"},
            "spec.unschedulable": True,
            "spec.taints[0]": core.Taint(key="gpu", value="yes", effect="NoSchedule"),
            "spec.taints[1]": core.Taint(key="x", value="", effect="NoExecute"),
            "allocatable()": {"cpu": 15800, "memory": 64 * GI * 1000, "pods": 110_000, "nvidia.com/gpu": 4000},
            "is_ready()": True,
        },
    ),
    GoodCase(
        "a Node without allocatable falls back to capacity",
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}},
        core.Node,
        {"allocatable()": {"cpu": 2000}, "is_ready()": True, "spec.unschedulable": False},
    ),
    GoodCase(
        "a Node whose Ready condition is Unknown is not ready",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "Unknown"}]
            },
        },
        core.Node,
        {"is_ready()": False},
    ),
    GoodCase(
        "a Pod sums its containers' requests in milli-units plus one pod",
        b.pod(
            "p",
            containers=[
                b.container("a", requests={"cpu": "500m", "memory": "1Gi"}),
                b.container("b", requests={"cpu": "1.5", "memory": "512Mi", "nvidia.com/gpu": "1"}),
            ],
        ),
        core.Pod,
        {
            "spec.requests()": {"cpu": 2000, "memory": (GI + 512 * MI) * 1000, "nvidia.com/gpu": 1000, "pods": 1000},
            "spec.scheduler_name": "volcano",
            "status.phase": "Pending",
        },
    ),
    GoodCase(
        "a Pod's init container raises a resource only above the containers' sum",
        b.pod(
            "p",
            containers=[
                b.container("a", requests={"cpu": "1", "memory": "1Gi"}),
                b.container("b", requests={"cpu": "1"}),
            ],
            init_containers=[
                b.container("init-big-cpu", requests={"cpu": "3", "memory": "100Mi"}),
                b.container("init-big-mem", requests={"memory": "2Gi"}),
            ],
        ),
        core.Pod,
        {"spec.requests()": {"cpu": 3000, "memory": 2 * GI * 1000, "pods": 1000}},
    ),
    GoodCase(
        "a Pod's limit stands in for a missing request, an explicit request wins",
        b.pod(
            "p",
            containers=[
                b.container("a", requests={"cpu": "250m"}, limits={"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "2"})
            ],
        ),
        core.Pod,
        {"spec.requests()": {"cpu": 250, "memory": 2 * GI * 1000, "nvidia.com/gpu": 2000, "pods": 1000}},
    ),
    GoodCase(
        "a Pod without resources still takes one pod slot",
        b.pod("p", cpu=None, memory=None),
        core.Pod,
        {"spec.requests()": {"pods": 1000}},
    ),
    GoodCase(
        "a Pod's scheduling fields: group, selector, tolerations, node, priority, owner, deletion",
        b.pod(
            "p-0",
            "team-a",
            group="pg",
            node_selector={"disk": "nvme"},
            tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"}],
            node_name="n-1",
            phase="Running",
            priority=100,
            job="train",
            deleted_at=5,
        ),
        core.Pod,
        {
            "group_name()": "pg",
            "metadata.namespace": "team-a",
            "spec.node_selector": {"disk": "nvme"},
            "spec.tolerations[0]": core.Toleration(key="gpu", operator="Exists", effect="NoSchedule"),
            "spec.tolerations[1]": core.Toleration(operator="Exists"),
            "spec.node_name": "n-1",
            "spec.priority": 100,
            "status.phase": "Running",
            "metadata.owner_references[0].kind": "Job",
            "metadata.owner_references[0].name": "train",
            "metadata.owner_references[0].uid": "uid-train",
            "metadata.deletion_timestamp": datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC),
            "is_finished()": False,
        },
    ),
    GoodCase(
        "a Pod with nothing but a name gets the Kubernetes defaults",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        core.Pod,
        {
            "spec.scheduler_name": "default-scheduler",
            "status.phase": "Pending",
            "group_name()": "",
            "metadata.namespace": "",
        },
    ),
    GoodCase(
        "a PodGroup with minMember, minTaskMember, minResources, queue, priority class",
        b.pod_group(
            "pg",
            min_member=4,
            queue="q1",
            spec={
                "minTaskMember": {"ps": 1, "worker": 3},
                "minResources": {"cpu": "4", "nvidia.com/gpu": 8},
                "priorityClassName": "high",
            },
            phase="Inqueue",
        ),
        volcano.PodGroup,
        {
            "spec.min_member": 4,
            "spec.min_task_member": {"ps": 1, "worker": 3},
            "spec.min_resources": {"cpu": 4000, "nvidia.com/gpu": 8000},
            "spec.queue": "q1",
            "spec.priority_class_name": "high",
            "spec.network_topology": None,
            "status.phase": "Inqueue",
        },
    ),
    GoodCase(
        "a PodGroup with networkTopology and subGroupPolicy",
        b.pod_group(
            "pg",
            spec={
                "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
                "subGroupPolicy": [
                    {
                        "name": "task0",
                        "subGroupSize": 3,
                        "minSubGroups": 2,
                        "matchLabelKeys": ["volcano.sh/partition-id"],
                        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                    }
                ],
            },
        ),
        volcano.PodGroup,
        {
            "spec.network_topology": volcano.NetworkTopologySpec(mode="soft", highest_tier_allowed=2),
            "spec.sub_group_policy[0].name": "task0",
            "spec.sub_group_policy[0].sub_group_size": 3,
            "spec.sub_group_policy[0].min_sub_groups": 2,
            "spec.sub_group_policy[0].match_label_keys": ["volcano.sh/partition-id"],
            "spec.sub_group_policy[0].network_topology": volcano.NetworkTopologySpec(
                mode="hard", highest_tier_allowed=1
            ),
        },
    ),
    GoodCase(
        "a PodGroup without spec defaults to the default queue and no minimum",
        {"apiVersion": b.VOLCANO_PG, "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"}},
        volcano.PodGroup,
        {"spec.queue": "default", "spec.min_member": 0, "status.phase": ""},
    ),
    GoodCase(
        "a Queue with parent, weight, capability, deserved, guarantee, reclaimable, state",
        b.queue(
            "child",
            spec={
                "parent": "root",
                "weight": 3,
                "capability": {"cpu": "10", "memory": "20Gi"},
                "deserved": {"cpu": 4},
                "guarantee": {"resource": {"cpu": "2", "nvidia.com/gpu": "1"}},
                "reclaimable": False,
            },
            state="Closing",
        ),
        volcano.Queue,
        {
            "spec.parent": "root",
            "spec.weight": 3,
            "spec.capability": {"cpu": 10_000, "memory": 20 * GI * 1000},
            "spec.deserved": {"cpu": 4000},
            "spec.guarantee.resource": {"cpu": 2000, "nvidia.com/gpu": 1000},
            "spec.reclaimable": False,
            "status.state": "Closing",
        },
    ),
    GoodCase(
        "a Job with tasks, templates, queue, scheduler and phase",
        b.job(
            "train",
            min_available=3,
            queue="q1",
            tasks=[
                {"name": "ps", "replicas": 1, "template": _TEMPLATE},
                {"name": "worker", "replicas": 4, "minAvailable": 2, "template": _TEMPLATE},
            ],
        ),
        volcano.Job,
        {
            "spec.min_available": 3,
            "spec.queue": "q1",
            "spec.scheduler_name": "volcano",
            "spec.tasks[0].name": "ps",
            "spec.tasks[0].replicas": 1,
            "spec.tasks[0].min_available": None,
            "spec.tasks[1].name": "worker",
            "spec.tasks[1].replicas": 4,
            "spec.tasks[1].min_available": 2,
            "spec.tasks[1].template.metadata.labels": {"app": "train"},
            "spec.tasks[1].template.spec.requests()": {"cpu": 1000, "memory": 200 * MI * 1000, "pods": 1000},
            "status.state.phase": "Pending",
        },
    ),
    GoodCase(
        "a HyperNode with exact, regex and label member selectors",
        {
            "apiVersion": b.VOLCANO_TOPOLOGY,
            "kind": "HyperNode",
            "metadata": {"name": "s0"},
            "spec": {
                "tier": 1,
                "members": [
                    {"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}},
                    {"type": "Node", "selector": {"regexMatch": {"pattern": "^gpu-.*"}}},
                    {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r1"}}}},
                    {"type": "HyperNode", "selector": {"exactMatch": {"name": "s9"}}},
                ],
            },
        },
        volcano.HyperNode,
        {
            "spec.tier": 1,
            "spec.members[0].selector.exact_match.name": "node-0",
            "spec.members[1].selector.regex_match.pattern": "^gpu-.*",
            "spec.members[2].selector.label_match.match_labels": {"rack": "r1"},
            "spec.members[3].type": "HyperNode",
        },
    ),
    GoodCase(
        "a v1beta1 ResourceFlavor with nodeLabels and topologyName",
        kueue_obj("v1beta1", "ResourceFlavor", "a100", {"nodeLabels": {"gpu": "a100"}, "topologyName": "default"}),
        kueue.ResourceFlavor,
        {"spec.node_labels": {"gpu": "a100"}, "spec.topology_name": "default"},
    ),
    GoodCase(
        "a v1beta2 ResourceFlavor without spec",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}},
        kueue.ResourceFlavor,
        {"spec.node_labels": {}, "spec.topology_name": None},
    ),
    GoodCase(
        "a Topology with levels",
        kueue_obj(
            "v1beta2",
            "Topology",
            "default",
            {"levels": [{"nodeLabel": "block"}, {"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]},
        ),
        kueue.Topology,
        {"spec.levels[0].node_label": "block", "spec.levels[2].node_label": "kubernetes.io/hostname"},
    ),
    GoodCase(
        "a v1beta2 Cohort with parentName and quota",
        kueue_obj("v1beta2", "Cohort", "org", {"parentName": "root", "resourceGroups": _QUOTA_GROUPS}),
        kueue.Cohort,
        {"spec.parent_cohort()": "root", "spec.resource_groups[0].flavors[0].resources[0].nominal_quota": 9000},
    ),
    GoodCase(
        "a v1beta1 Cohort with parent",
        kueue_obj("v1beta1", "Cohort", "org", {"parent": "root"}),
        kueue.Cohort,
        {"spec.parent_cohort()": "root"},
    ),
    GoodCase(
        "a v1beta1 ClusterQueue names its cohort with cohort",
        kueue_obj(
            "v1beta1",
            "ClusterQueue",
            "cq",
            {
                "cohort": "team",
                "resourceGroups": _QUOTA_GROUPS,
                "queueingStrategy": "StrictFIFO",
                "preemption": {
                    "withinClusterQueue": "LowerPriority",
                    "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
                },
                "namespaceSelector": {
                    "matchLabels": {"tier": "gold"},
                    "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
                },
                "stopPolicy": "HoldAndDrain",
            },
        ),
        kueue.ClusterQueue,
        {
            "spec.cohort_of()": "team",
            "spec.resource_groups[0].covered_resources": ["cpu", "memory", "nvidia.com/gpu"],
            "spec.resource_groups[0].flavors[0].name": "a100",
            "spec.resource_groups[0].flavors[0].resources[0]": kueue.ResourceQuota(
                name="cpu", nominal_quota=9000, borrowing_limit=2000, lending_limit=500
            ),
            "spec.resource_groups[0].flavors[0].resources[1].nominal_quota": 36 * GI * 1000,
            "spec.resource_groups[0].flavors[0].resources[1].borrowing_limit": None,
            "spec.resource_groups[0].flavors[0].resources[2].nominal_quota": 8000,
            "spec.resource_groups[0].flavors[1].resources[0].nominal_quota": 0,
            "spec.queueing_strategy": "StrictFIFO",
            "spec.preemption.within_cluster_queue": "LowerPriority",
            "spec.preemption.reclaim_within_cohort": "Any",
            "spec.preemption.borrow_within_cohort.max_priority_threshold": 100,
            "spec.namespace_selector.match_labels": {"tier": "gold"},
            "spec.namespace_selector.match_expressions[0].values": ["prod"],
            "spec.stop_policy": "HoldAndDrain",
        },
    ),
    GoodCase(
        "a v1beta2 ClusterQueue names its cohort with cohortName",
        kueue_obj("v1beta2", "ClusterQueue", "cq", {"cohortName": "team", "resourceGroups": _QUOTA_GROUPS}),
        kueue.ClusterQueue,
        {
            "spec.cohort_of()": "team",
            "spec.resource_groups[0].flavors[0].resources[0].nominal_quota": 9000,
            "spec.queueing_strategy": "BestEffortFIFO",
            "spec.stop_policy": "None",
            "spec.namespace_selector": None,
        },
    ),
    GoodCase(
        "a LocalQueue points at its ClusterQueue",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "user-queue", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
        kueue.LocalQueue,
        {"spec.cluster_queue": "cq", "metadata.namespace": "default"},
    ),
    GoodCase(
        "a v1beta1 Workload with podSets, topologyRequest, priority, active and admission",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "team-a"},
            "spec": {
                "queueName": "lq",
                "priority": 50,
                "active": False,
                "podSets": [
                    {
                        "name": "workers",
                        "count": 4,
                        "minCount": 2,
                        "template": _TEMPLATE,
                        "topologyRequest": {"required": "rack"},
                    }
                ],
            },
            "status": {
                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "workers", "count": 4}]},
            },
        },
        kueue.Workload,
        {
            "spec.queue_name": "lq",
            "spec.priority": 50,
            "spec.active": False,
            "spec.pod_sets[0].name": "workers",
            "spec.pod_sets[0].count": 4,
            "spec.pod_sets[0].min_count": 2,
            "spec.pod_sets[0].template.spec.requests()": {"cpu": 1000, "memory": 200 * MI * 1000, "pods": 1000},
            "spec.pod_sets[0].topology_request.required": "rack",
            "status.conditions[0].type": "QuotaReserved",
            "status.admission['clusterQueue']": "cq",
        },
    ),
    GoodCase(
        "a v1beta2 Workload with defaults",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "team-a"},
            "spec": {"queueName": "lq", "podSets": [{"count": 2, "template": _TEMPLATE}]},
        },
        kueue.Workload,
        {
            "spec.active": True,
            "spec.priority": None,
            "spec.pod_sets[0].name": "main",
            "spec.pod_sets[0].count": 2,
            "spec.pod_sets[0].topology_request": None,
            "status.admission": None,
        },
    ),
]


@pytest.mark.parametrize("case", GOOD_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("type_", ["ADDED", "MODIFIED", "DELETED"])
def test_good_lines_parse_into_typed_objects(case: GoodCase, type_: str) -> None:
    parsed = parse_event(watch(case.obj, type_, cluster="c7"))
    assert isinstance(parsed, WatchEvent)
    assert parsed.cluster == "c7"
    assert parsed.type is EventType(type_)
    assert type(parsed.obj) is case.want_type
    assert parsed.obj.kind == case.obj["kind"]
    assert parsed.obj.api_version == case.obj["apiVersion"]
    assert parsed.obj.metadata.name == case.obj["metadata"]["name"]
    for path, want in case.want.items():
        assert dig(parsed.obj, path) == want, path


def test_bytes_and_str_give_the_same_event() -> None:
    text = watch(b.pod("p", group="pg"), "MODIFIED")
    assert parse_event(text) == parse_event(text.encode())


def test_cluster_defaults_to_default() -> None:
    parsed = parse_event(watch(b.node("n")))
    assert isinstance(parsed, WatchEvent)
    assert parsed.cluster == "default"


@dataclass(frozen=True)
class OtherCase:
    name: str
    line: str
    want: object


OTHER_CASES = [
    OtherCase(
        "a SCHEDULE marker carries its cluster and aware time",
        line({"type": "SCHEDULE", "cluster": "c1", "time": "2026-01-01T00:00:01Z"}),
        ScheduleMarker("c1", datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)),
    ),
    OtherCase(
        "a SCHEDULE marker with an offset keeps the instant",
        line({"type": "SCHEDULE", "time": "2026-01-01T02:00:00+02:00"}),
        ScheduleMarker("default", datetime(2026, 1, 1, tzinfo=UTC)),
    ),
    OtherCase(
        "a BOOKMARK without a name is accepted",
        watch({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "12345"}}, "BOOKMARK", cluster="c2"),
        Bookmark("c2", "12345"),
    ),
    OtherCase(
        "a BOOKMARK without a resourceVersion",
        watch({"kind": "Pod", "apiVersion": "v1", "metadata": {}}, "BOOKMARK"),
        Bookmark("default", ""),
    ),
    OtherCase(
        "an unknown kind (apps/v1 Deployment) is UnknownKind",
        watch({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
        UnknownKind("default", EventType.ADDED, "apps/v1", "Deployment"),
    ),
    OtherCase(
        "an unknown kind is not validated further",
        watch(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": "x"}},
            "DELETED",
        ),
        UnknownKind("default", EventType.DELETED, "batch/v1", "Job"),
    ),
    OtherCase(
        "a core kind at an unknown version",
        watch({"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "p"}}, "MODIFIED", cluster="c3"),
        UnknownKind("c3", EventType.MODIFIED, "v2", "Pod"),
    ),
    OtherCase(
        "a PodGroup at the old v1alpha1",
        watch({"apiVersion": "scheduling.volcano.sh/v1alpha1", "kind": "PodGroup", "metadata": {"name": "pg"}}),
        UnknownKind("default", EventType.ADDED, "scheduling.volcano.sh/v1alpha1", "PodGroup"),
    ),
    OtherCase(
        "a Kueue kind at v1alpha1",
        watch({"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Cohort", "metadata": {"name": "c"}}),
        UnknownKind("default", EventType.ADDED, "kueue.x-k8s.io/v1alpha1", "Cohort"),
    ),
    OtherCase(
        "a kind of the wrong group (Queue in the batch group)",
        watch({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Queue", "metadata": {"name": "q"}}),
        UnknownKind("default", EventType.ADDED, "batch.volcano.sh/v1alpha1", "Queue"),
    ),
]


@pytest.mark.parametrize("case", OTHER_CASES, ids=lambda c: c.name)
def test_markers_bookmarks_and_unknown_kinds(case: OtherCase) -> None:
    assert parse_event(case.line) == case.want
    assert parse_event(case.line.encode()) == case.want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (watch(b.node("n"), cluster="c9"), ("c9", False)),
        (line({"type": "SCHEDULE", "cluster": "c9", "time": "2026-01-01T00:00:00Z"}), ("c9", True)),
        (line({"type": "SCHEDULE"}), ("default", True)),
        ("not json", None),
    ],
    ids=["a watch event", "a marker", "a marker without time still peeks", "garbage"],
)
def test_peek_cluster(text: str, want: tuple[str, bool] | None) -> None:
    assert peek_cluster(text) == want
