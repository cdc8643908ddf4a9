"""Store-backed history for ``explain --db``: the object's events and decisions read through
the object index (migration ``20261123_explain_object_index``), and the cluster's state folded
to the cut from its latest snapshot when that lies before the cut, else from its first event.
Read-only: the schema is not migrated and nothing is written."""

from __future__ import annotations

import bisect
from datetime import datetime
from pathlib import Path

import msgspec
from sqlalchemy import select, union
from sqlalchemy.engine import make_url

from domain import saved_state
from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig
from services.explain.history import Cut, Entry, History, NotFound, Target, Timeline, choose_cluster, members_of
from services.pipeline import CLOCK_NONE
from services.store import tables
from services.store.store import Store


def _check_exists(url: str) -> None:
    """An SQLite file that is not there is no store (opening it would create an empty one)."""
    parsed = make_url(url)
    local = parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:")
    if local and not Path(str(parsed.database)).exists():
        raise NotFound(f"no store at {parsed.database}")


def _markers(store: Store, cluster: str) -> tuple[list[int], list[datetime]]:
    """(seqs, times) of the cluster's SCHEDULE markers, in seq order."""
    e = tables.events
    query = select(e.c.seq, e.c.payload).where(e.c.cluster == cluster, e.c.type == "SCHEDULE").order_by(e.c.seq)
    with store.engine.connect() as conn:
        rows = conn.execute(query).all()
    times = [datetime.fromisoformat(msgspec.json.decode(p)["time"].replace("Z", "+00:00")) for _, p in rows]
    return [seq for seq, _ in rows], times


def _found_in(store: Store, target: Target) -> list[str]:
    e, d = tables.events, tables.decisions
    in_events = select(e.c.cluster).where(
        e.c.kind == target.kind, e.c.namespace == target.namespace, e.c.name == target.name
    )
    in_decisions = select(d.c.cluster).where(
        d.c.target_kind == target.kind, d.c.namespace == target.namespace, d.c.name == target.name
    )
    with store.engine.connect() as conn:
        return sorted(conn.execute(union(in_events, in_decisions)).scalars())


def _cut_seq(cut: Cut, last: int, markers: tuple[list[int], list[datetime]]) -> int:
    if cut.seq is not None:
        return min(cut.seq, last)
    if cut.time is not None:
        seqs, times = markers
        later = bisect.bisect_right(times, cut.time)  # markers' times only grow along the stream
        return seqs[later] - 1 if later < len(seqs) else last
    return last


def _fold(store: Store, config: SchedulerConfig, cluster: str, clock: str, at: int) -> Engine:
    engine = Engine(config, on_markers=lambda _: clock != CLOCK_NONE)
    start = 0
    latest = store.snapshots().get(cluster)
    if latest is not None and latest[1] <= at + 1:
        version, start, payload = latest
        saved_state.restore_cluster(engine, cluster, msgspec.json.decode(payload), version)
    for seq, payload in store.iter_events(cluster, start=start):
        if seq > at:
            break
        engine.handle(parse_event(payload))
    return engine


def _timeline(
    store: Store, target: Target, cluster: str, at: int, markers: tuple[list[int], list[datetime]], *, members: set[str]
) -> list[Entry]:
    e, d = tables.events, tables.decisions
    events = select(e.c.seq, e.c.type, e.c.payload).where(
        e.c.cluster == cluster, e.c.kind == target.kind, e.c.namespace == target.namespace,
        e.c.name == target.name, e.c.seq <= at,
    )  # fmt: skip
    decisions = select(d.c.seq, d.c.ordinal, d.c.payload).where(
        d.c.cluster == cluster, d.c.target_kind == target.kind, d.c.namespace == target.namespace,
        d.c.name == target.name, d.c.seq <= at,
    )  # fmt: skip
    of_members = select(d.c.seq, d.c.ordinal, d.c.payload).where(
        d.c.cluster == cluster, d.c.target_kind == "Pod", d.c.namespace == target.namespace,
        d.c.name.in_(sorted(members)), d.c.seq <= at,
    )  # fmt: skip
    with store.engine.connect() as conn:
        rows = [(seq, -1, kind, payload) for seq, kind, payload in conn.execute(events)]
        rows += [(seq, ordinal, "", payload) for seq, ordinal, payload in conn.execute(decisions)]
        member_rows = sorted(tuple(row) for row in conn.execute(of_members)) if members else []
    seqs, times = markers

    def clock_at(seq: int) -> datetime | None:
        before = bisect.bisect_right(seqs, seq)
        return times[before - 1] if before else None

    timeline = Timeline(target)
    for seq, ordinal, kind, payload in sorted(rows):
        if ordinal < 0:
            timeline.event(seq, clock_at(seq), kind, msgspec.json.decode(payload))
        else:
            timeline.decision(clock_at(seq), msgspec.json.decode(payload))
    for seq, _, payload in member_rows:
        timeline.member(clock_at(seq), msgspec.json.decode(payload))
    return timeline.in_order()


def from_store(url: str, config: SchedulerConfig, target: Target, cut: Cut, cluster: str | None) -> History:
    _check_exists(url)
    store = Store(url)
    try:
        clusters = store.clusters()
        if not clusters:
            raise NotFound(f"the store at {make_url(url).render_as_string(hide_password=True)} holds no events")
        chosen = choose_cluster(target, [c for c in _found_in(store, target) if c in clusters], cluster)
        next_seq, clock, _ = clusters[chosen]
        markers = _markers(store, chosen)
        at = _cut_seq(cut, next_seq - 1, markers)
        state = _fold(store, config, chosen, clock, at).state(chosen)
        timeline = _timeline(store, target, chosen, at, markers, members=members_of(state, target))
        return History(chosen, at, state, timeline)
    finally:
        store.close()
