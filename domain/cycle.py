"""run_cycle: one scheduling cycle over a cluster's state, at a SCHEDULE marker (or, in a
stream without markers, after every event): the Volcano session, then the Kueue cycle.

Each step records its decisions in the state as it makes them (a later step sees them) and
returns them; the cycle's decisions are theirs, in that order."""

from __future__ import annotations

from domain.cache import ClusterCache
from domain.decisions import Decision
from domain.kueue import cycle as kueue_cycle
from domain.kueue import workloads
from domain.scheduler import volcano_cycle
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState


def run_cycle(state: ClusterState, cache: ClusterCache, config: SchedulerConfig, *, seq: int) -> list[Decision]:
    out = volcano_cycle.run(state, cache.volcano, cache.changes, config, seq=seq)
    if state.objects.get("Workload"):
        cache.kueue = workloads.renew(cache.kueue, state, cache.changes)
        out.extend(kueue_cycle.run(state, cache.kueue, config.kueue, seq=seq))
    return out
