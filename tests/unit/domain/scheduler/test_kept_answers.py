"""Answers kept from session to session and brought up to date with the jobs that changed are
those a look at every job gives, in every session of closed-loop runs:

- ``reservation``'s oldest-first target (also on a stream where gangs' pods come long after
  their PodGroups: an older job becomes one to hold room for while a younger one does);
- ``runtimes.ends``, the known ends of the pods on each node.

What each call found is kept and asserted after the run: the engine turns what a cycle raises
into a reject, so an assertion inside a cycle would not fail the test."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.scheduler import runtimes
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.plugins import reservation
from services.traces.model import Trace, with_estimates
from tests.unit.domain.scheduler.test_kept_snapshot import _decisions
from tests.unit.domain.scheduler.test_parked import _keep, _run, _traces
from tests.unit.domain.scheduler.test_retry import (
    BUSY,
    BUSY_USERS,
    LARGE_GANGS,
    SHORTEST_HISTORY,
    large_gangs,
    with_users,
)

# Per call: whether a kept answer was there to start from, and whether the answer is the fresh one.
Calls = list[tuple[bool, bool]]


def _checked(
    monkeypatch: pytest.MonkeyPatch,
    owner: object,
    name: str,
    kept: Callable[[Any, Any], bool],
    afresh: Callable[[Any, Any], object],
) -> Calls:
    """Wrap ``owner.name`` (two arguments): ``kept`` says whether a kept answer was there
    before the call, ``afresh`` gives the answer without it."""
    real = getattr(owner, name)
    calls: Calls = []

    def checked(first: Any, second: Any) -> Any:
        was_kept = kept(first, second)
        answer = real(first, second)
        calls.append((was_kept, answer == afresh(first, second)))
        return answer

    monkeypatch.setattr(owner, name, checked)
    return calls


def _targets(monkeypatch: pytest.MonkeyPatch) -> Calls:
    return _checked(
        monkeypatch, reservation, "_oldest",
        kept=lambda session, _: isinstance(session.kept.get(reservation.KEPT), reservation._Last),
        afresh=lambda session, bound: reservation.target(session.snapshot, bound),
    )  # fmt: skip


def _ends(monkeypatch: pytest.MonkeyPatch) -> Calls:
    real = runtimes.ends
    return _checked(
        monkeypatch, runtimes, "ends",
        kept=lambda _, cache: isinstance(cache.get(runtimes.KEPT), runtimes._Holding),
        afresh=lambda snapshot, _: real(snapshot),
    )  # fmt: skip


def _asserted(calls: Calls, *, kept: int = 0) -> None:
    assert sum(was_kept for was_kept, _ in calls) >= kept
    assert all(same for _, same in calls)


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (BUSY, LARGE_GANGS),
        (with_estimates(BUSY, "exact"), LARGE_GANGS),
        (with_estimates(BUSY, "exact"), _keep(LARGE_GANGS)),
        (BUSY_USERS, _keep(SHORTEST_HISTORY)),
    ],
    ids=["large-gangs", "estimates", "estimates-kept-reasons", "history-kept-reasons"],
)
def test_kept_targets_and_ends_are_the_ones_found_afresh(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets, ends = _targets(monkeypatch), _ends(monkeypatch)
    _run(trace, config)
    _asserted(targets, kept=20)
    _asserted(ends, kept=20)


@pytest.mark.parametrize(
    ("trace", "config"),
    [(with_estimates(BUSY, "exact"), _keep(LARGE_GANGS)), (BUSY_USERS, _keep(SHORTEST_HISTORY))],
    ids=["estimates-kept-reasons", "history-kept-reasons"],
)
def test_the_last_ends_are_given_again_when_nothing_they_read_changed(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole answer, or (when it is worked out again) the ends of each job that did not
    change: both are used again many times, and every answer is the fresh one."""
    real = runtimes.ends
    answers: list[tuple[bool, bool]] = []  # per call: the last answer given again, and the fresh one
    last: list[object] = [None]
    real_again = runtimes._JobEnds.again
    jobs_again: list[bool] = []

    def again(self: Any, now: float, runs: Any) -> bool:
        jobs_again.append(real_again(self, now, runs))
        return jobs_again[-1]

    monkeypatch.setattr(runtimes._JobEnds, "again", again)

    lists: list[bool] = []  # per node whose ends are as the last answer's: whether the same list
    earliest: list[bool] = []  # per call: whether the earliest kept with the answer is its earliest

    def ends(snapshot: Any, kept: Any) -> Any:
        answer = real(snapshot, kept)
        answers.append((answer is last[0], answer == real(snapshot)))
        soonest = min((end for known in answer.values() for end, _ in known), default=math.inf)
        earliest.append(runtimes.earliest(answer, kept) == soonest)
        if isinstance(last[0], dict) and answer is not last[0]:
            lists.extend(known is last[0][node] for node, known in answer.items() if last[0].get(node) == known)
        last[0] = answer
        return answer

    monkeypatch.setattr(runtimes, "ends", ends)
    _run(trace, config)
    assert sum(again for again, _ in answers) >= 20
    assert sum(jobs_again) >= 20
    assert all(same for _, same in answers)
    assert len(lists) >= 20
    assert all(lists)  # a reader may compare them by identity
    assert earliest and all(earliest)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces())
def test_on_generated_traces_too(trace: Trace) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        targets, ends = _targets(monkeypatch), _ends(monkeypatch)
        _run(with_estimates(trace, "exact"), _keep(large_gangs(**{"reservation-waiting-time": "10s"})))
        _asserted(targets)
        _asserted(ends)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces(), st.integers(1, 3))
def test_on_generated_traces_with_a_runtime_history(trace: Trace, users: int) -> None:
    """Predictions from users' last runtimes, which change at markers without their jobs changing."""
    history = dataclasses.replace(
        large_gangs(**{"reservation-waiting-time": "10s", "reservation-shortest-first": True}),
        runtime_history_label="swf/user",
    )
    with pytest.MonkeyPatch.context() as monkeypatch:
        targets, ends = _targets(monkeypatch), _ends(monkeypatch)
        _run(with_users(trace, users), _keep(history))
        _asserted(targets)
        _asserted(ends)


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
    calls = _targets(monkeypatch)
    with_kept = _decisions(lines, LARGE_GANGS, fresh=False)
    _asserted(calls, kept=20)
    assert with_kept == _decisions(lines, LARGE_GANGS, fresh=True)
