"""The API resources ``schedstream watch`` lists and watches: CONTRACT section 1's kinds.

Core kinds are always served; each custom kind is looked up by discovery and watched in the
first of its versions that the server serves (Kueue: v1beta2, else v1beta1: watching both
would repeat every object).  A kind the server does not serve is skipped with one log line.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from services import logging as log
from services.kube.client import Kube

logger = log.get("schedstream.watch")


@dataclass(frozen=True, slots=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        """The cluster-wide collection: every namespace's objects in one list and one watch."""
        return f"/apis/{self.group}/{self.version}/{self.plural}" if self.group else f"/api/v1/{self.plural}"

    @property
    def key(self) -> str:
        """The resource's name in the watcher's state: version-free, so an upgrade keeps the cursor."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


class _APIResource(msgspec.Struct):
    name: str


class _ResourceList(msgspec.Struct):
    resources: list[_APIResource] = msgspec.field(default_factory=list)


CORE = (
    Resource("", "v1", "namespaces", "Namespace", namespaced=False),
    Resource("", "v1", "nodes", "Node", namespaced=False),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False),
    Resource("", "v1", "pods", "Pod", namespaced=True),
)

# (group, versions in order of preference, ((plural, kind, namespaced), ...))
CUSTOM: tuple[tuple[str, tuple[str, ...], tuple[tuple[str, str, bool], ...]], ...] = (
    (
        "scheduling.volcano.sh",
        ("v1beta1",),
        (("queues", "Queue", False), ("podgroups", "PodGroup", True)),
    ),
    ("batch.volcano.sh", ("v1alpha1",), (("jobs", "Job", True),)),
    ("topology.volcano.sh", ("v1alpha1",), (("hypernodes", "HyperNode", False),)),
    (
        "kueue.x-k8s.io",
        ("v1beta2", "v1beta1"),
        (
            ("resourceflavors", "ResourceFlavor", False),
            ("topologies", "Topology", False),
            ("cohorts", "Cohort", False),
            ("clusterqueues", "ClusterQueue", False),
            ("admissionchecks", "AdmissionCheck", False),
            ("localqueues", "LocalQueue", True),
            ("workloads", "Workload", True),
        ),
    ),
)


async def discover(kube: Kube) -> list[Resource]:
    """The core resources and every custom one the server serves, in a fixed order."""
    found = list(CORE)
    for group, versions, kinds in CUSTOM:
        served: dict[str, set[str]] = {}
        for version in versions:
            listing = await kube.read(f"/apis/{group}/{version}", missing_ok=True)
            if listing is not None:
                names = msgspec.json.decode(listing, type=_ResourceList).resources
                served[version] = {r.name for r in names if "/" not in r.name}
        for plural, kind, namespaced in kinds:
            version = next((v for v in versions if plural in served.get(v, ())), None)
            if version is None:
                logger.info("skipping a kind the server does not serve", kind=kind, group=group, versions=versions)
                continue
            found.append(Resource(group, version, plural, kind, namespaced))
    return found
