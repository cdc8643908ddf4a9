"""domain.scheduler.session: a closed session is freed as soon as nothing holds it, not left
for Python's cycle collector (its callbacks hold it, and it holds them, until it closes)."""

from __future__ import annotations

import gc
import io

import pytest

from domain.scheduler.config import SchedulerConfig
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
