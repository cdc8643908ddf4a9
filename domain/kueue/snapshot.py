"""KueueSnapshot: the per-cycle picture of Kueue objects: flavors, topologies, the quota tree
with the usage of every workload that holds quota, local queues, namespaces, and each
workload with the status it has now (``WorkloadInfo``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from domain import quantity
from domain.kueue.quota import FlavorResource, QuotaTree, build
from domain.lifecycle.workload import WorkloadView
from domain.objects.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Topology, Workload
from domain.objects.meta import ObjectKey, key_of
from domain.quantity import ResourceList
from domain.state import ClusterState

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class PodSetRequest:
    name: str
    count: int
    per_pod: ResourceList  # milli-units, ``pods`` included


@dataclass
class WorkloadInfo:
    key: ObjectKey
    obj: Workload
    view: WorkloadView
    pod_sets: list[PodSetRequest]
    _usage: tuple[Mapping[str, Any] | None, dict[FlavorResource, int]] | None = field(default=None, repr=False)

    @property
    def priority(self) -> int:
        return self.obj.spec.priority or 0

    @property
    def created(self) -> datetime:
        return self.obj.metadata.creation_timestamp or _EPOCH

    def order(self) -> tuple[int, datetime, str]:
        """Queue order: higher priority first, then older, then name."""
        return (-self.priority, self.created, self.key)

    def shape(self) -> tuple[object, ...]:
        """What admission looks at besides age: equal shapes fit (or not) alike (Kueue's equivalence hash)."""
        specs = tuple(
            (p.name, p.count, repr(p.topology_request), repr(p.template.spec)) for p in self.obj.spec.pod_sets
        )
        return (self.priority, specs)

    @property
    def admitted_to(self) -> str:
        return str((self.view.admission or {}).get("clusterQueue", ""))

    def holds_quota(self) -> bool:
        """Its quota counts: reserved, with an admission, and not finished (Evicted still holds)."""
        view = self.view
        return view.is_true("QuotaReserved") and view.admission is not None and not view.is_true("Finished")

    def usage(self) -> dict[FlavorResource, int]:
        """The (flavor, resource) totals its admission reserves (cached per admission)."""
        if self._usage is None or self._usage[0] is not self.view.admission:
            self._usage = (self.view.admission, self._compute_usage())
        return self._usage[1]

    def _compute_usage(self) -> dict[FlavorResource, int]:
        out: dict[FlavorResource, int] = {}
        requests = {p.name: p for p in self.pod_sets}
        for psa in (self.view.admission or {}).get("podSetAssignments", ()):
            written: Mapping[str, Any] = psa.get("resourceUsage") or {}
            request = requests.get(psa.get("name", ""))
            count = int(psa.get("count", request.count if request else 0))
            for resource, flavor in (psa.get("flavors") or {}).items():
                if resource in written:
                    amount = int(quantity.parse_milli(written[resource]))
                else:
                    amount = (request.per_pod.get(resource, 0) if request else 0) * count
                out[(flavor, resource)] = out.get((flavor, resource), 0) + amount
        return out


@dataclass
class KueueSnapshot:
    state: ClusterState
    flavors: dict[str, ResourceFlavor]
    topologies: dict[str, Topology]
    queues: dict[str, ClusterQueue]
    cohorts: dict[str, Cohort]
    local_queues: dict[ObjectKey, LocalQueue]
    namespaces: dict[str, dict[str, str]]
    workloads: list[WorkloadInfo]
    tree: QuotaTree = field(init=False)
    node_free: dict[str, ResourceList] | None = field(default=None, init=False)  # TAS, filled on first use
    _holders: list[WorkloadInfo] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.tree = build(self.queues, self.cohorts)
        for info in self.holders():
            self.charge(info, +1)

    def holders(self) -> list[WorkloadInfo]:
        """The workloads whose quota counts, in key order (cached until a status changes)."""
        if self._holders is None:
            self._holders = [w for w in self.workloads if w.holds_quota() and w.admitted_to in self.tree.queues]
        return list(self._holders)

    def status_changed(self) -> None:
        self._holders = None

    def charge(self, info: WorkloadInfo, sign: int) -> None:
        """Add (+1) or remove (-1) a workload's admission usage to its ClusterQueue."""
        node = self.tree.queues[info.admitted_to]
        for fr, amount in info.usage().items():
            node.add_usage(fr, sign * amount)

    @property
    def clock(self) -> datetime:
        return self.state.clock or _EPOCH


def _pod_sets(workload: Workload) -> list[PodSetRequest]:
    return [PodSetRequest(p.name, p.count, p.template.spec.requests()) for p in workload.spec.pod_sets]


def take(state: ClusterState) -> KueueSnapshot:
    def named(kind: str, cls: type[Any]) -> dict[str, Any]:
        return {o.metadata.name: o for o in state.of_kind(kind).values() if isinstance(o, cls)}

    workloads = [
        WorkloadInfo(key, obj, state.workload_view(obj), _pod_sets(obj))
        for key, obj in sorted(state.of_kind("Workload").items())
        if isinstance(obj, Workload)
    ]
    namespaces = {o.metadata.name: dict(o.metadata.labels) for o in state.of_kind("Namespace").values()}
    return KueueSnapshot(
        state=state,
        flavors=named("ResourceFlavor", ResourceFlavor),
        topologies=named("Topology", Topology),
        queues=named("ClusterQueue", ClusterQueue),
        cohorts=named("Cohort", Cohort),
        local_queues={key_of(o.metadata): o for o in state.of_kind("LocalQueue").values() if isinstance(o, LocalQueue)},
        namespaces=namespaces,
        workloads=workloads,
    )
