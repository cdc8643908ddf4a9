"""domain.scheduler.session: a closed session is freed as soon as nothing holds it, not left
for Python's cycle collector (its callbacks hold it, and it holds them, until it closes); what
opening one reuses from the last (the plugins as built, proportion's shares) is what it would
make anew."""

from __future__ import annotations

import gc
import io

import pytest

from domain.scheduler import registry
from domain.scheduler.cache import SchedulerCache
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.plugins import proportion
from domain.scheduler.session import Session
from services.simulate.loop import run_closed_loop
from tests.unit.domain.scheduler.test_parked import KEEP
from tests.unit.domain.scheduler.test_retry import BUSY


@pytest.mark.parametrize("config", [SchedulerConfig(), KEEP], ids=["default", "keepWaitingReasons"])
def test_sessions_are_freed_without_the_cycle_collector(config: SchedulerConfig) -> None:
    gc.collect()
    gc.disable()
    try:
        events = io.BytesIO()
        run_closed_loop(BUSY, BUSY.nodes, config, events, io.BytesIO())
        alive = sum(1 for obj in gc.get_objects() if isinstance(obj, Session))
    finally:
        gc.enable()
    cycles = events.getvalue().count(b'"SCHEDULE"')
    assert cycles > 100
    assert alive < cycles / 10  # the last, which the caches hold, and a few whose node rankings were made anew


def test_plugins_are_built_once_per_configuration() -> None:
    cache, config = SchedulerCache(), SchedulerConfig()
    first = registry.built(config, cache)
    assert registry.built(config, cache) is first
    assert [(tier, p.name) for tier, _, p in first] == [
        (tier, c.name) for tier, plugins in enumerate(config.tiers) for c in plugins
    ]
    assert registry.built(KEEP, cache) is not first  # another configuration: built anew


def test_kept_shares_are_the_shares_water_filled_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    shares, reused, wrong = proportion._shares, [], []

    def checked(session: Session, real: dict) -> tuple[dict, dict]:
        last = session.kept.get(proportion.KEPT)
        deserved, limits = shares(session, real)
        reused.append(isinstance(last, proportion._Shares) and deserved is last.deserved)
        total = session.snapshot.total
        afresh = proportion.deserved_shares(session.snapshot, real)
        if (deserved, limits) != (
            afresh,
            {q: {n: a for n, a in s.items() if a < total.get(n, 0)} for q, s in afresh.items()},
        ):
            wrong.append(session.snapshot.now)  # an assert here would be a cycle's reject, not a failure
        return deserved, limits

    monkeypatch.setattr(proportion, "_shares", checked)
    run_closed_loop(BUSY, BUSY.nodes, SchedulerConfig(), io.BytesIO(), io.BytesIO())
    assert wrong == []
    assert any(reused) and not all(reused)
