"""ClusterCache: what the schedulers keep between the cycles of one cluster, owned by the Engine.

``ClusterState`` holds the cluster's facts and our recorded decisions; this holds only what the
Volcano session and the Kueue cycle derive from them, renewed from ``changes`` (which the state
reports to as it folds), so a cycle costs what changed. A new cache (after a restore, or when
the state object is replaced) is built from scratch and gives the same decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.changes import Changes
from domain.kueue.workloads import WorkloadIndex
from domain.scheduler.cache import SchedulerCache
from domain.state import ClusterState


@dataclass(slots=True, eq=False)
class ClusterCache:
    state: ClusterState  # the state object this cache listens to
    changes: Changes = field(default_factory=Changes)
    volcano: SchedulerCache = field(default_factory=SchedulerCache)
    kueue: WorkloadIndex | None = None  # the live workloads, filed (``domain.kueue.workloads``)
    quiet: bool = False  # the last cycle ran to its end and decided nothing (``Engine.idle``)
    # Cycles that raised one after another (0 once a cycle runs to its end), how many of the last
    # of them came with no watch event between them, and the instant of the last, in seconds since
    # the epoch (``Engine.failing``).
    failures: int = 0
    quiet_failures: int = 0
    failed_at: float = 0.0

    def __post_init__(self) -> None:
        self.state.listener = self.changes.note
