"""The registry: action and plugin names, as the configuration spells them, to their code.

Plain dicts, written once, and the only place names meet modules: nothing registers itself at
import time and nothing here changes during a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from domain.scheduler import candidates
from domain.scheduler.actions import allocate, backfill, enqueue, preempt, reclaim
from domain.scheduler.cache import SchedulerCache
from domain.scheduler.config import PluginConfig, SchedulerConfig
from domain.scheduler.plugins import (
    binpack,
    capacity,
    conformance,
    drf,
    gang,
    network_topology,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
    reservation,
    sla,
)
from domain.scheduler.session import Plugin, Session
from domain.scheduler.snapshot import Snapshot

ACTIONS: dict[str, Callable[[Session], None]] = {
    # Admission: Pending gangs whose queue can hold their minimum become Inqueue.
    enqueue.NAME: enqueue.execute,
    # Placement: whole gangs, then best-effort pods into what is left.
    allocate.NAME: allocate.execute,
    backfill.NAME: backfill.execute,
    # Eviction: for higher priority in a queue, and for queues below their deserved share.
    preempt.NAME: preempt.execute,
    reclaim.NAME: reclaim.execute,
}

PLUGINS: dict[str, Callable[[Mapping[str, object]], Plugin]] = {
    # Ordering and gang semantics.
    priority.NAME: priority.build,
    gang.NAME: gang.build,
    conformance.NAME: conformance.build,
    drf.NAME: drf.build,
    # Waiting bounds: a job past its bound goes first and holds its room.
    sla.NAME: sla.build,
    reservation.NAME: reservation.build,
    # Node fit and node preference.
    predicates.NAME: predicates.build,
    nodeorder.NAME: nodeorder.build,
    binpack.NAME: binpack.build,
    network_topology.NAME: network_topology.build,
    # Queue quotas, and how many admitted gangs the whole cluster may hold.
    proportion.NAME: proportion.build,
    capacity.NAME: capacity.build,
    overcommit.NAME: overcommit.build,
}


NODE_LOCAL = frozenset({predicates.NAME, nodeorder.NAME, binpack.NAME})
"""Plugins whose predicates and scores look at the task's shape and the node alone (not at
other jobs or where they run): node rankings made with them stay right across cycles."""

READ_THE_CLOCK = frozenset({sla.NAME, reservation.NAME})
"""Plugins whose callbacks read the cycle's instant: they count waiting time, and the room they
hold is planned on the pods' ends predicted from it."""


def reads_clock(config: SchedulerConfig) -> bool:
    """Whether a Volcano cycle's decisions can depend on its instant, not only on the events
    before it (Kueue's steps that wait for the clock are deadlines, ``Engine.next_deadline``)."""
    return not READ_THE_CLOCK.isdisjoint(config.plugin_names())


BUILT = "registry-plugins"  # (the configuration, its plugins as built), in ``SchedulerCache.kept``


def built(config: SchedulerConfig, cache: SchedulerCache) -> list[tuple[int, PluginConfig, Plugin]]:
    """Each configured plugin with its tier, built once for ``config`` and kept in ``cache``: a
    build reads only the plugin's options, and what a plugin keeps between sessions it keeps in
    the session's ``kept``, never in what its build returns."""
    kept = cache.kept.get(BUILT)
    if not isinstance(kept, tuple) or kept[0] is not config:
        plugins = [(tier, p, PLUGINS[p.name](p.options)) for tier, ps in enumerate(config.tiers) for p in ps]
        kept = cache.kept[BUILT] = (config, plugins)
    return kept[1]


def open_session(snapshot: Snapshot, config: SchedulerConfig, cache: SchedulerCache) -> Session:
    """A session whose plugins, tier by tier, have registered their callbacks (each plugin
    ``built`` once). With node-local plugins only it carries on the node rankings of the last
    cycle, kept in ``cache``. On an idle snapshot (``Snapshot.idle``), a session without plugins."""
    session = Session(snapshot, config)
    session.kept = cache.kept
    if snapshot.idle():
        # Nothing to place: a session without plugins closes the same (close asks none of them);
        # the kept rankings still learn which nodes changed.
        if cache.rankings is not None:
            kept = cache.rankings
            cache.rankings = candidates.carry(
                kept, kept.predicate, kept.score, snapshot.nodes, snapshot.rebuilt, columns=kept.columns
            )
        return session
    for tier, configured, plugin in built(config, cache):
        session.tier, session.switches = tier, configured.options
        plugin.on_open(session)
    session.node_local = session.ranks_by(NODE_LOCAL)
    previous, cache.rankings = cache.rankings, None
    if session.node_local:
        session.candidates = cache.rankings = candidates.carry(
            previous, session.predicate, session.node_score, snapshot.nodes, snapshot.rebuilt, columns=session.columns()
        )
    return session
