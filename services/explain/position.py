"""Pending position of Kueue workloads, as Kueue's visibility API gives it
(``pendingworkloads``: ``positionInClusterQueue`` and ``positionInLocalQueue``, both from 0).

A ClusterQueue's pending workloads are all those waiting in its LocalQueues without quota,
the inadmissible and backing-off ones included (Kueue lists its heap and its inadmissible set
together), in the order admission walks them: priority, creation, name; with Admission Fair
Sharing on the ClusterQueue, the LocalQueue's weighted usage first. A workload whose LocalQueue
leads to no usable ClusterQueue has no position.

``pending_positions(state, config.kueue)`` is the call for other readers of a live state (the
status page): it reads the state and changes nothing a cycle relies on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.kueue import admission_fair_sharing, cycle_view
from domain.kueue.queue import resolve
from domain.kueue.settings import KueueSettings
from domain.kueue.workloads import WorkloadInfo
from domain.objects.meta import ObjectKey
from domain.state import ClusterState


@dataclass(frozen=True, slots=True)
class PendingPosition:
    cluster_queue: str
    local_queue: ObjectKey  # namespace/name
    in_cluster_queue: int  # 0: admission looks at it first
    in_local_queue: int
    pending_in_cluster_queue: int  # how many wait in the ClusterQueue

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusterQueue": self.cluster_queue,
            "localQueue": self.local_queue,
            "positionInClusterQueue": self.in_cluster_queue,
            "positionInLocalQueue": self.in_local_queue,
            "pendingInClusterQueue": self.pending_in_cluster_queue,
        }


def pending_positions(state: ClusterState, settings: KueueSettings) -> dict[ObjectKey, PendingPosition]:
    """Every pending workload's position, by workload key."""
    snap = cycle_view.fresh(state)
    afs = settings.admission_fair_sharing
    by_queue: dict[str, list[WorkloadInfo]] = {}
    for local_queue, infos in snap.queued():
        found = resolve(snap, local_queue)
        if not isinstance(found, str):
            by_queue.setdefault(found.metadata.name, []).extend(infos)
    out: dict[ObjectKey, PendingPosition] = {}
    for name, infos in sorted(by_queue.items()):
        fair = afs is not None and admission_fair_sharing.applies(snap.queues[name])
        usage = {}
        if fair and afs is not None:
            usage = {i.local_queue: admission_fair_sharing.weighted_usage(snap, afs, i.local_queue) for i in infos}
        ordered = sorted(infos, key=lambda i: (usage.get(i.local_queue, 0.0), *i.order))
        seen: dict[tuple[str, str], int] = {}
        for index, info in enumerate(ordered):
            in_local = seen.get(info.local_queue, 0)
            seen[info.local_queue] = in_local + 1
            local = ObjectKey(f"{info.local_queue[0]}/{info.local_queue[1]}")
            out[info.key] = PendingPosition(name, local, index, in_local, len(ordered))
    return out
