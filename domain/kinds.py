"""The kinds schedstream understands: (API group, kind) -> typed object, and the API versions
accepted for each group. Anything else is an unknown kind: counted and skipped, not rejected."""

from __future__ import annotations

from domain.objects import core, kueue, volcano

KubeObject = (
    core.Namespace
    | core.Node
    | core.Pod
    | core.PriorityClass
    | volcano.PodGroup
    | volcano.Queue
    | volcano.Job
    | volcano.HyperNode
    | kueue.ResourceFlavor
    | kueue.Topology
    | kueue.Cohort
    | kueue.ClusterQueue
    | kueue.LocalQueue
    | kueue.AdmissionCheck
    | kueue.Workload
)

API_VERSIONS: dict[str, frozenset[str]] = {
    "": frozenset({"v1"}),
    "scheduling.k8s.io": frozenset({"v1"}),
    "scheduling.volcano.sh": frozenset({"v1beta1"}),
    "batch.volcano.sh": frozenset({"v1alpha1"}),
    "topology.volcano.sh": frozenset({"v1alpha1"}),
    "kueue.x-k8s.io": frozenset({"v1beta1", "v1beta2"}),
}

KIND_TYPES: dict[tuple[str, str], type[KubeObject]] = {
    ("", "Namespace"): core.Namespace,
    ("", "Node"): core.Node,
    ("", "Pod"): core.Pod,
    ("scheduling.k8s.io", "PriorityClass"): core.PriorityClass,
    ("scheduling.volcano.sh", "PodGroup"): volcano.PodGroup,
    ("scheduling.volcano.sh", "Queue"): volcano.Queue,
    ("batch.volcano.sh", "Job"): volcano.Job,
    ("topology.volcano.sh", "HyperNode"): volcano.HyperNode,
    ("kueue.x-k8s.io", "ResourceFlavor"): kueue.ResourceFlavor,
    ("kueue.x-k8s.io", "Topology"): kueue.Topology,
    ("kueue.x-k8s.io", "Cohort"): kueue.Cohort,
    ("kueue.x-k8s.io", "ClusterQueue"): kueue.ClusterQueue,
    ("kueue.x-k8s.io", "LocalQueue"): kueue.LocalQueue,
    ("kueue.x-k8s.io", "AdmissionCheck"): kueue.AdmissionCheck,
    ("kueue.x-k8s.io", "Workload"): kueue.Workload,
}


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"batch.volcano.sh/v1alpha1"`` -> ``("batch.volcano.sh", "v1alpha1")``; ``"v1"`` -> ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


# (apiVersion as the API server writes it, kind) -> type: one lookup for every well-formed line.
_WRITTEN: dict[tuple[str, str], type[KubeObject]] = {
    (f"{group}/{version}" if group else version, kind): typ
    for (group, kind), typ in KIND_TYPES.items()
    for version in API_VERSIONS[group]
}


def lookup(api_version: str, kind: str) -> type[KubeObject] | None:
    typ = _WRITTEN.get((api_version, kind))
    if typ is not None:
        return typ
    group, version = split_api_version(api_version)
    if version not in API_VERSIONS.get(group, frozenset()):
        return None
    return KIND_TYPES.get((group, kind))
