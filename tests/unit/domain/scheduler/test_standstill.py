"""Standstill: a marker after which the cluster only wrote back our statuses runs no cycle while
what the last cycle read of its instant stands (``standstill``), and that changes nothing. Each
closed-loop run here is compared, byte for byte, with the same run where every such cycle runs;
the instants themselves are checked on traces small enough to work out by hand."""

from __future__ import annotations

import dataclasses
import io
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.engine import Engine
from domain.scheduler import standstill
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.object_facts import seconds
from services.simulate.cluster import SimCluster
from services.simulate.loop import run_closed_loop
from services.traces.events import START
from services.traces.model import Trace, with_estimates
from tests.timer_markers import check_idle_markers
from tests.unit.domain.scheduler.test_held_room import GANG_BEHIND_SMALL, RESERVE, TWO_BACKFILLS
from tests.unit.domain.scheduler.test_parked import _keep, _traces
from tests.unit.domain.scheduler.test_retry import (
    BUSY,
    BUSY_USERS,
    LARGE_GANGS,
    SHORTEST_HISTORY,
    SLA_GANGS,
    large_gangs,
    with_users,
)

Run = tuple[bytes, bytes, list[tuple[float, float | None]]]


def _run(trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch, *, skip: bool = True) -> Run:
    """The closed loop's events and decisions, and per marker its time and, when its cycle ran,
    until when that cycle's outcome stands (None when it was not run), both in simulated
    seconds. With ``skip`` False every cycle runs."""
    stands = Engine._stands
    origin = seconds(START)
    markers: list[tuple[float, float | None]] = []
    ran: list[bool] = []

    def counted(engine: Engine, state: object, instant: object) -> bool:
        answer = skip and stands(engine, state, instant)  # type: ignore[arg-type]
        ran.append(not answer)
        return answer

    schedule = SimCluster.schedule

    def recorded(cluster: SimCluster, time: float) -> object:
        ran.clear()
        decisions = schedule(cluster, time)
        cache = cluster.engine.cache(cluster.engine.state(cluster.cluster)).volcano
        markers.append((time, standstill.of(cache) - origin if all(ran) else None))
        return decisions

    monkeypatch.setattr(Engine, "_stands", counted)
    monkeypatch.setattr(SimCluster, "schedule", recorded)
    events, decisions = io.BytesIO(), io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, decisions)
    monkeypatch.undo()
    return events.getvalue(), decisions.getvalue(), markers


def _skipped(run: Run) -> int:
    return sum(until is None for _, until in run[2])


def test_without_a_target_the_outcome_stands_until_the_next_job_passes_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gang b (both nodes) arrives at 10 beside a, which runs until 101; the bound is 5 s. The
    cycle at 11 finds no job past it: its outcome stands until 15, so the marker at 12, after the
    cluster wrote back b's status, runs no cycle. From 21 on b is the target: without runtimes
    nothing it reads of the instant can change, so its outcome stands for ever."""
    run = _run(GANG_BEHIND_SMALL, RESERVE, monkeypatch)
    markers = dict(run[2])
    assert markers[11] == 15
    assert markers[12] is None
    assert markers[21] == math.inf
    assert run[:2] == _run(GANG_BEHIND_SMALL, RESERVE, monkeypatch, skip=False)[:2]


def test_held_room_stands_until_the_first_end_and_lent_room_until_its_job_would_end_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two nodes: a runs until 101, x until 1001; the gang b (both nodes) arrives at 10 and is the
    target from 21, its shadow time x's end, 1001. Its plans read the instant against the pods'
    ends: the cycle at 21 stands until a's, 101. At 102 l (500 s), which ends by 1001, is lent
    the node b now holds: lent while it would, until 501, and that cycle stands until then. The
    next, with l running on that node, stands until l's end, 602."""
    run = _run(TWO_BACKFILLS, RESERVE, monkeypatch)
    markers = dict(run[2])
    assert markers[21] == 101
    assert markers[102] == 501
    assert markers[103] == 602
    assert run[:2] == _run(TWO_BACKFILLS, RESERVE, monkeypatch, skip=False)[:2]


def test_sla_stands_until_the_next_job_passes_its_waiting_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sla`` with 30 s: the first gang waiting on the busy trace, g4 (arrived at 28), passes it
    at 58; a cycle before then stands at most until then."""
    run = _run(BUSY, SLA_GANGS, monkeypatch)
    assert all(until is None or until > time for time, until in run[2])
    assert any(until == 58 for _, until in run[2])
    assert run[:2] == _run(BUSY, SLA_GANGS, monkeypatch, skip=False)[:2]


SLOWDOWN = large_gangs(**{"reservation-slowdown-first": True})


@pytest.mark.parametrize(
    ("trace", "config", "skips"),
    [
        (BUSY, LARGE_GANGS, True),
        (with_estimates(BUSY, "exact"), _keep(LARGE_GANGS), True),
        (BUSY_USERS, _keep(SHORTEST_HISTORY), True),
        (BUSY_USERS, dataclasses.replace(SLOWDOWN, runtime_history_label="swf/user"), False),
    ],
    ids=["large-gangs", "estimates-kept-reasons", "history-kept-reasons", "slowdown-first"],
)
def test_echo_markers_run_no_cycle_and_change_nothing(
    trace: Trace, config: SchedulerConfig, skips: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many echo markers run no cycle (none where slowdowns rank the jobs: they change at every
    instant), and the run is the one where they all run, byte for byte."""
    run = _run(trace, config, monkeypatch)
    assert (_skipped(run) >= 5) is skips
    assert run[:2] == _run(trace, config, monkeypatch, skip=False)[:2]


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (BUSY, SchedulerConfig()),
        (BUSY, LARGE_GANGS),
        (with_estimates(BUSY, "exact"), _keep(LARGE_GANGS)),
        (BUSY_USERS, _keep(SHORTEST_HISTORY)),
        (BUSY, SLA_GANGS),
    ],
    ids=["default", "large-gangs", "estimates-kept-reasons", "history-kept-reasons", "sla"],
)
def test_a_timer_marker_called_idle_decides_nothing(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live worker's timer writes no marker where ``Engine.idle`` says it would decide
    nothing: on the busy trace's stream under five policies, markers added where the timer could
    have written them decide nothing wherever they are called idle, and many are; the stream
    played without those decides the same."""
    idle, added = check_idle_markers(_run(trace, config, monkeypatch, skip=False)[0].splitlines(), config)
    assert idle > 0.2 * added > 5, (idle, added)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces(), st.sampled_from(["estimates", "history", "sla"]))
def test_on_generated_traces_too(trace: Trace, policy: str) -> None:
    config = {
        "estimates": _keep(large_gangs(**{"reservation-waiting-time": "10s"})),
        "history": dataclasses.replace(
            large_gangs(**{"reservation-waiting-time": "10s", "reservation-shortest-first": True}),
            runtime_history_label="swf/user",
        ),
        "sla": SLA_GANGS,
    }[policy]
    trace = with_estimates(trace, "exact") if policy == "estimates" else with_users(trace, 2)
    with pytest.MonkeyPatch.context() as monkeypatch:
        skipping = _run(trace, config, monkeypatch)
        running = _run(trace, config, monkeypatch, skip=False)
        assert skipping[:2] == running[:2]
        check_idle_markers(running[0].splitlines(), config)
