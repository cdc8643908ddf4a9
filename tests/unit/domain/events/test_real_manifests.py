"""domain.events.parse_event: the real Volcano and Kueue manifests of ../shared/data as watch events."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from domain.events import (
    WatchEvent,
    parse_event,
)
from domain.objects import kueue, volcano
from tests.unit.domain.events.lines import GI, MANIFESTS, MI, dig, watch

# --------------------------------------------------------------------------- real manifests


@dataclass(frozen=True)
class ManifestCase:
    name: str
    file: str
    kind: str
    object_name: str
    want: dict[str, Any] = field(default_factory=dict)


MANIFEST_CASES = [
    ManifestCase(
        "Volcano's example Job",
        "volcano/example_job.yaml",
        "Job",
        "test-job",
        {
            "spec.min_available": 3,
            "spec.queue": "default",
            "spec.scheduler_name": "volcano",
            "spec.tasks[0].name": "default-nginx",
            "spec.tasks[0].replicas": 6,
            "spec.tasks[0].template.spec.requests()": {"cpu": 1000, "pods": 1000},
        },
    ),
    ManifestCase(
        "Volcano's network-topology Job",
        "volcano/doc_network-topology_block04_Job.yaml",
        "Job",
        "network-topology-job",
        {
            "spec.network_topology": volcano.NetworkTopologySpec(mode="hard", highest_tier_allowed=1),
            "spec.tasks[0].template.spec.requests()": {"cpu": 4000, "pods": 1000},
        },
    ),
    ManifestCase(
        "Volcano's design-doc PodGroup with subGroupPolicy",
        "volcano/doc_design_hypernode_block04_PodGroup.yaml",
        "PodGroup",
        "network-topology-job-<jobUID>",
        {
            "spec.min_member": 3,
            "spec.network_topology.highest_tier_allowed": 2,
            "spec.sub_group_policy[1].name": "task1",
            "spec.sub_group_policy[1].sub_group_size": 2,
            "spec.sub_group_policy[1].match_label_keys": ["volcano.sh/partition-id"],
        },
    ),
    ManifestCase(
        "Volcano's PodGroup artifact with minResources",
        "volcano/staging_src_volcano.sh_apis_artifacts_podgroup.yaml",
        "PodGroup",
        "test-pg",
        {"spec.min_resources": {"cpu": 1000, "memory": 2 * 10**9 * 1000}},
    ),
    ManifestCase(
        "Volcano's capacity-plugin Queue with deserved",
        "volcano/doc_capacity-plugin_block03_Queue.yaml",
        "Queue",
        "queue1",
        {"spec.deserved": {"cpu": 2000, "memory": 8 * GI * 1000}, "spec.reclaimable": True},
    ),
    ManifestCase(
        "Volcano's hierarchical Queue with a parent",
        "volcano/doc_nodegroup-hierarchical-queues_block07_Queue.yaml",
        "Queue",
        "backend-team",
        {"spec.parent": "engineering", "spec.weight": 1},
    ),
    ManifestCase(
        "Kueue's single ClusterQueue setup: the flavor",
        "kueue/admin_single-clusterqueue-setup.yaml",
        "ResourceFlavor",
        "default-flavor",
    ),
    ManifestCase(
        "Kueue's single ClusterQueue setup: the ClusterQueue",
        "kueue/admin_single-clusterqueue-setup.yaml",
        "ClusterQueue",
        "cluster-queue",
        {
            "spec.resource_groups[0].flavors[0].name": "default-flavor",
            "spec.resource_groups[0].flavors[0].resources[0].nominal_quota": 9000,
            "spec.resource_groups[0].flavors[0].resources[1].nominal_quota": 36 * GI * 1000,
            "spec.namespace_selector": kueue.LabelSelector(),
        },
    ),
    ManifestCase(
        "Kueue's single ClusterQueue setup: the LocalQueue",
        "kueue/admin_single-clusterqueue-setup.yaml",
        "LocalQueue",
        "user-queue",
        {"spec.cluster_queue": "cluster-queue", "metadata.namespace": "default"},
    ),
    ManifestCase(
        "Kueue's Workload concept page",
        "kueue/doc_workload_block00_Workload.yaml",
        "Workload",
        "sample-job",
        {
            "spec.queue_name": "team-a-queue",
            "spec.active": True,
            "spec.pod_sets[0].count": 3,
            "spec.pod_sets[0].template.spec.requests()": {"cpu": 1000, "memory": 200 * MI * 1000, "pods": 1000},
        },
    ),
    ManifestCase(
        "Kueue's cohort page ClusterQueue with cohortName",
        "kueue/doc_cohort_block03_ClusterQueue.yaml",
        "ClusterQueue",
        "my-cluster-queue",
        {"spec.cohort_of()": "hello-cohort", "spec.resource_groups[0].flavors[0].resources[0].nominal_quota": 0},
    ),
    ManifestCase(
        "Kueue's cohort tree with a fair-sharing weight",
        "kueue/doc_cohort_block04_Cohort.yaml",
        "Cohort",
        "important-org",
        {"spec.parent_cohort()": "root-cohort", "spec.fair_sharing.weight": 750},
    ),
    ManifestCase(
        "Kueue's TAS Topology",
        "kueue/tas_sample-queues.yaml",
        "Topology",
        "default",
        {"spec.levels[1].node_label": "cloud.provider.com/topology-rack"},
    ),
    ManifestCase(
        "Kueue's TAS flavor",
        "kueue/tas_sample-queues.yaml",
        "ResourceFlavor",
        "tas-flavor",
        {"spec.topology_name": "default", "spec.node_labels": {"cloud.provider.com/node-group": "tas-group"}},
    ),
]


def _manifest_events(path: Path) -> list[str]:
    return [watch(doc) for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest.mark.usefixtures("shared_data")
@pytest.mark.parametrize("case", MANIFEST_CASES, ids=lambda c: c.name)
def test_real_manifests_parse_as_watch_events(case: ManifestCase) -> None:
    parsed = [parse_event(text) for text in _manifest_events(MANIFESTS / case.file)]
    found = [
        p.obj
        for p in parsed
        if isinstance(p, WatchEvent) and (p.obj.kind, p.obj.metadata.name) == (case.kind, case.object_name)
    ]
    assert len(found) == 1, parsed
    for path, want in case.want.items():
        assert dig(found[0], path) == want, path


@pytest.mark.usefixtures("shared_data")
def test_every_named_real_manifest_is_accepted() -> None:
    """Every document with a name in the shared manifests parses: known kinds typed, others UnknownKind."""
    outcomes: dict[str, str] = {}
    for path in sorted(MANIFESTS.glob("*/*.yaml")):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if not doc or "name" not in doc.get("metadata", {}):
                continue  # design-doc shorthand and generateName templates are not watch objects
            outcomes[f"{path.name}#{index}"] = type(parse_event(watch(doc))).__name__
    assert outcomes
    assert set(outcomes.values()) <= {"WatchEvent", "UnknownKind"}
    assert outcomes["jobs_sample-job-partial-admission.yaml#0"] == "UnknownKind"  # batch/v1 Job
