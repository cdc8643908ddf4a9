"""domain.scheduler.plugins.reservation: the oldest-first target kept from session to session is
the one a look at every waiting job finds, in every session of closed-loop runs and of a stream
where gangs' pods come long after their PodGroups (an older job that becomes one to hold room
for while a younger one does)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from domain.scheduler.config import SchedulerConfig
from domain.scheduler.plugins import reservation
from services.traces.model import Trace
from tests.unit.domain.scheduler.test_kept_snapshot import _decisions
from tests.unit.domain.scheduler.test_parked import _keep, _run, _traces
from tests.unit.domain.scheduler.test_retry import BUSY, BUSY_USERS, LARGE_GANGS, SHORTEST_HISTORY, large_gangs


def _checked(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Check each session's target against ``target`` afresh; per session, whether the last
    session's target was kept to start from."""
    real = reservation._oldest
    kept: list[bool] = []

    def checked(session: Any, bound: float) -> Any:
        kept.append(isinstance(session.kept.get(reservation.KEPT), reservation._Last))
        chosen = real(session, bound)
        assert chosen == reservation.target(session.snapshot, bound)
        return chosen

    monkeypatch.setattr(reservation, "_oldest", checked)
    return kept


@pytest.mark.parametrize(
    ("trace", "config"),
    [(BUSY, LARGE_GANGS), (BUSY, _keep(LARGE_GANGS)), (BUSY_USERS, _keep(SHORTEST_HISTORY))],
    ids=["large-gangs", "kept-reasons", "history-kept-reasons"],
)
def test_the_kept_target_is_the_one_found_afresh(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _checked(monkeypatch)
    _run(trace, config)
    assert sum(kept) > 20


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces())
def test_on_generated_traces_too(trace: Trace) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _checked(monkeypatch)
        _run(trace, _keep(large_gangs(**{"reservation-waiting-time": "10s"})))


def _late_pods(lines: list[str], after: int) -> list[str]:
    """The stream with every event of a gang's pods (``g...``) held back until ``after``
    markers have passed since the first of them."""
    out: list[str] = []
    held: list[tuple[int, str]] = []  # (markers left, line)
    late: set[str] = set()
    for line in lines:
        event = json.loads(line)
        if event["type"] == "SCHEDULE":
            held = [(left - 1, kept) for left, kept in held]
            out.extend(kept for left, kept in held if left <= 0)
            held = [(left, kept) for left, kept in held if left > 0]
        obj = event.get("object") or {}
        name = obj.get("metadata", {}).get("name", "")
        if obj.get("kind") == "Pod" and name.startswith("g"):
            if name not in late:
                late.add(name)
                held.append((after, line))
            else:  # its later events stay behind its first
                held.append((max((left for left, _ in held), default=after), line))
            continue
        out.append(line)
    return out + [kept for _, kept in held]


def test_an_older_gang_whose_pods_come_late_is_held_room_for_first(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _late_pods(_run(BUSY, LARGE_GANGS)[0], 45)
    kept = _checked(monkeypatch)
    with_kept = _decisions(lines, LARGE_GANGS, fresh=False)
    assert sum(kept) > 20
    assert with_kept == _decisions(lines, LARGE_GANGS, fresh=True)
