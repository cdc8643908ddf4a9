"""KueueSnapshot: the per-cycle picture of Kueue objects: flavors, topologies, the quota tree
with the usage of every workload that holds quota, local queues, namespaces, and each
workload not yet finished with the status it has now (``WorkloadInfo``).

The ``WorkloadInfo`` of the unfinished workloads are kept between cycles in
``state.derived`` (``Memo``) and renewed only for the workloads a watch event changed, so a
cycle costs what the live workloads cost: finished ones are never looked at again. The
statuses the cycle decides update both the state and the memo's ``WorkloadInfo``.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
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

    @cached_property
    def priority(self) -> int:
        return self.obj.spec.priority or 0

    @cached_property
    def created(self) -> datetime:
        return self.obj.metadata.creation_timestamp or _EPOCH

    @cached_property
    def order(self) -> tuple[int, datetime, str]:
        """Queue order: higher priority first, then older, then name."""
        return (-self.priority, self.created, self.key)

    def is_finished(self) -> bool:
        return self.view.is_true("Finished")

    @cached_property
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
    _holding: dict[ObjectKey, WorkloadInfo] = field(default_factory=dict, init=False, repr=False)
    _holders: list[WorkloadInfo] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.tree = build(self.queues, self.cohorts)
        for info in self.workloads:
            self.status_changed(info)
        for info in self.holders():
            self.charge(info, +1)

    def holders(self) -> list[WorkloadInfo]:
        """The workloads whose quota counts, in key order (kept up to date by ``status_changed``)."""
        if self._holders is None:
            self._holders = [self._holding[k] for k in sorted(self._holding)]
        return list(self._holders)

    def status_changed(self, info: WorkloadInfo) -> None:
        """``info``'s status changed: whether it holds quota may have too."""
        holds = info.holds_quota() and info.admitted_to in self.tree.queues
        if holds != (info.key in self._holding):
            self._holders = None
            if holds:
                self._holding[info.key] = info
            else:
                del self._holding[info.key]

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


@dataclass
class Memo:
    """The unfinished workloads' ``WorkloadInfo`` by key, and their keys in order."""

    live: dict[ObjectKey, WorkloadInfo] = field(default_factory=dict)
    keys: list[ObjectKey] = field(default_factory=list)

    def update(self, state: ClusterState, key: ObjectKey) -> None:
        obj = state.of_kind("Workload").get(key)
        info = WorkloadInfo(key, obj, state.workload_view(obj), _pod_sets(obj)) if isinstance(obj, Workload) else None
        if info is None or info.is_finished():
            if self.live.pop(key, None) is not None:
                del self.keys[bisect.bisect_left(self.keys, key)]
            return
        if key not in self.live:
            bisect.insort(self.keys, key)
        self.live[key] = info


def _live_workloads(state: ClusterState) -> list[WorkloadInfo]:
    """The unfinished workloads in key order, renewed where a watch event changed them."""
    changed = state.take_changed("Workload")
    memo = state.derived.get("kueue")
    if not isinstance(memo, Memo):
        memo = state.derived["kueue"] = Memo()
        changed = set(state.of_kind("Workload"))
    for key in changed:
        memo.update(state, key)
    return [memo.live[key] for key in memo.keys]


def take(state: ClusterState) -> KueueSnapshot:
    def named(kind: str, cls: type[Any]) -> dict[str, Any]:
        return {o.metadata.name: o for o in state.of_kind(kind).values() if isinstance(o, cls)}

    workloads = _live_workloads(state)
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
