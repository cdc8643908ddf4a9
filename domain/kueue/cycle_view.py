"""KueueSnapshot: the per-cycle picture of Kueue objects: flavors, topologies, the quota tree
with the usage of every workload that holds quota, local queues, admission checks, namespaces, and the live
workloads (``domain.kueue.workloads``: kept between cycles, filed by what the cycle asks).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.changes import Changes
from domain.kueue.cohort_tree import QuotaTree, build
from domain.kueue.workloads import EPOCH, LocalQueueRef, WorkloadIndex, WorkloadInfo, renew
from domain.objects.kueue import AdmissionCheck, ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Topology
from domain.objects.meta import ObjectKey, key_of
from domain.quantity import ResourceList
from domain.state import ClusterState


@dataclass
class KueueSnapshot:
    state: ClusterState
    flavors: dict[str, ResourceFlavor]
    topologies: dict[str, Topology]
    queues: dict[str, ClusterQueue]
    cohorts: dict[str, Cohort]
    local_queues: dict[ObjectKey, LocalQueue]
    admission_checks: dict[str, AdmissionCheck]
    namespaces: dict[str, dict[str, str]]
    workloads: WorkloadIndex
    tree: QuotaTree = field(init=False)
    node_free: dict[str, ResourceList] | None = field(default=None, init=False)  # TAS, filled on first use
    _holders: list[WorkloadInfo] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.tree = build(self.queues, self.cohorts)
        for info in self.holders():
            self.charge(info, +1)

    def holders(self) -> list[WorkloadInfo]:
        """The workloads whose quota counts, in key order (kept up to date by ``status_changed``)."""
        if self._holders is None:
            holding = self.workloads.holding
            self._holders = [holding[k] for k in sorted(holding) if holding[k].admitted_to in self.tree.queues]
        return list(self._holders)

    def queued(self) -> list[tuple[LocalQueueRef, Iterator[WorkloadInfo]]]:
        """Each LocalQueue's workloads without quota (active; some may be backing off), in queue
        order, read as they are walked (a workload admitted meanwhile must not be walked past)."""
        return [(ref, queued.in_order()) for ref, queued in sorted(self.workloads.queued.items())]

    def flagged(self) -> list[WorkloadInfo]:
        """The inactive workloads and those with an Evicted condition, in key order."""
        flagged = self.workloads.flagged
        return [flagged[k] for k in sorted(flagged)]

    def status_changed(self, info: WorkloadInfo) -> None:
        """A decision changed ``info``'s status: file it again."""
        self.workloads.refile(info)
        self._holders = None

    def charge(self, info: WorkloadInfo, sign: int) -> None:
        """Add (+1) or remove (-1) a workload's admission usage to its ClusterQueue."""
        node = self.tree.queues[info.admitted_to]
        for fr, amount in info.usage().items():
            node.add_usage(fr, sign * amount)

    @property
    def clock(self) -> datetime:
        return self.state.clock or EPOCH


def take(state: ClusterState, workloads: WorkloadIndex) -> KueueSnapshot:
    """The cycle's view of the state's Kueue objects, with ``workloads``, the renewed index."""

    def named(kind: str, cls: type[Any]) -> dict[str, Any]:
        return {o.metadata.name: o for o in state.of_kind(kind).values() if isinstance(o, cls)}

    namespaces = {o.metadata.name: dict(o.metadata.labels) for o in state.of_kind("Namespace").values()}
    return KueueSnapshot(
        state=state,
        flavors=named("ResourceFlavor", ResourceFlavor),
        topologies=named("Topology", Topology),
        queues=named("ClusterQueue", ClusterQueue),
        cohorts=named("Cohort", Cohort),
        local_queues={key_of(o.metadata): o for o in state.of_kind("LocalQueue").values() if isinstance(o, LocalQueue)},
        admission_checks=named("AdmissionCheck", AdmissionCheck),
        namespaces=namespaces,
        workloads=workloads,
    )


def fresh(state: ClusterState) -> KueueSnapshot:
    """The view with a workload index built from scratch, for readers outside the cycle
    (``explain``, tests): the one the cycle would take, without touching the cycle's cache."""
    return take(state, renew(None, state, Changes()))
