"""domain.scheduler.parked: with ``keepWaitingReasons``, a gang that has said it waits for room
and still cannot fit is passed over. Closed-loop runs with and without it bind, evict and finish
the same pods at the same times; only the waiting gangs' messages are written less often, and a
cycle that starts without the caches parks the same gangs (the rule reads the state alone)."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.engine import Engine
from domain.events import parse_event
from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.core import Node as CoreNode
from domain.objects.meta import ObjectKey
from domain.scheduler import held_room, lending, parked, parked_pool, shortfall, volcano_cycle
from domain.scheduler.config import ConfigError, SchedulerConfig, from_mapping
from domain.scheduler.infos import JobInfo
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.session import Session
from domain.scheduler.snapshot import Snapshot
from services.simulate.loop import run_closed_loop
from services.traces.model import Job, Node, Trace
from tests import builders as b
from tests import spies
from tests.decided import at_marker_times
from tests.unit.domain.scheduler.test_held_room import _task, with_plugin
from tests.unit.domain.scheduler.test_kept_snapshot import _decisions
from tests.unit.domain.scheduler.test_retry import BUSY, BUSY_USERS, LARGE_GANGS, SHORTEST_HISTORY, large_gangs

KEEP = dataclasses.replace(SchedulerConfig(), keep_waiting_reasons=True)
# The default tiers, reservation, and reservation planning on the users' runtime history.
_POLICIES = pytest.mark.parametrize(
    ("trace", "config"),
    [(BUSY, SchedulerConfig()), (BUSY, LARGE_GANGS), (BUSY_USERS, SHORTEST_HISTORY)],
    ids=["default", "large-gangs", "large-gangs-history"],
)


def _keep(config: SchedulerConfig) -> SchedulerConfig:
    return dataclasses.replace(config, keep_waiting_reasons=True)


def _run(trace: Trace, config: SchedulerConfig) -> tuple[list[str], list[tuple[Any, dict[str, Any]]]]:
    """The closed loop's event lines, and its decisions without seq and id, each at its marker's time."""
    events, decisions = io.BytesIO(), io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, decisions)
    lines = events.getvalue().decode().splitlines()
    return lines, at_marker_times(lines, decisions.getvalue().decode().splitlines())


def _split(decided: list[tuple[Any, dict[str, Any]]]) -> tuple[list[object], dict[str, list[dict[str, Any]]]]:
    """Every decision but the PodGroups' statuses, and those by PodGroup."""
    others: list[object] = []
    statuses: dict[str, list[dict[str, Any]]] = {}
    for time, decision in decided:
        if decision["kind"] == "PodGroupStatus":
            statuses.setdefault(decision["target"]["name"], []).append(decision)
        else:
            others.append((time, decision))
    return others, statuses


@_POLICIES
def test_parked_gangs_are_placed_as_tried_ones(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, tried = _run(trace, config)
    answers = spies.answers(monkeypatch, parked, "parked")
    _, kept = _run(trace, _keep(config))
    assert sum(answers) > 20  # gangs were passed over
    tried_others, tried_statuses = _split(tried)
    kept_others, kept_statuses = _split(kept)
    assert kept_others == tried_others  # the same binds, queue statuses and the rest, at the same times
    assert sum(map(len, kept_statuses.values())) < sum(map(len, tried_statuses.values()))
    for name, statuses in tried_statuses.items():
        kept_ones = kept_statuses[name]
        # The first word and the last are the same; in between, the same phases in fewer words.
        assert kept_ones[0] == statuses[0]
        assert kept_ones[-1] == statuses[-1]
        assert _phases(kept_ones) == _phases(statuses)


def _phases(statuses: list[dict[str, Any]]) -> list[str]:
    """The phases a PodGroup went through, in order."""
    phases = [s["phase"] for s in statuses]
    return [phase for n, phase in enumerate(phases) if n == 0 or phases[n - 1] != phase]


def test_a_cycle_without_the_caches_parks_the_same_gangs() -> None:
    """A worker restored from a snapshot starts without the scheduler's caches: it parks the same."""
    lines, _ = _run(BUSY, KEEP)
    kept = _decisions(lines, KEEP, fresh=False)
    assert len(kept) > 100
    assert kept == _decisions(lines, KEEP, fresh=True)


def test_the_switch_is_off_by_default_and_must_be_a_boolean() -> None:
    assert not SchedulerConfig().keep_waiting_reasons
    assert from_mapping({"keepWaitingReasons": True}).keep_waiting_reasons
    with pytest.raises(ConfigError, match="'keepWaitingReasons' must be true or false, not 'yes'"):
        from_mapping({"keepWaitingReasons": "yes"})


_NODES = tuple(Node(f"n{i}", {"cpu": "4"}) for i in range(3))


@st.composite
def _traces(draw: st.DrawFn) -> Trace:
    """A few gangs of whole or half nodes and single tasks, arriving faster than they end."""
    jobs = []
    for i in range(draw(st.integers(4, 14))):
        tasks = draw(st.integers(1, 4))
        cpu = draw(st.sampled_from(["1", "2", "4"]))
        arrival = draw(st.integers(0, 6)) + 4.0 * i
        jobs.append(Job(f"j{i}", arrival, float(draw(st.integers(5, 60))), tasks=tasks, requests={"cpu": cpu}))
    return Trace(tuple(jobs), _NODES)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces())
def test_parking_never_changes_a_placement(trace: Trace) -> None:
    tried_others, _ = _split(_run(trace, SchedulerConfig())[1])
    kept_others, _ = _split(_run(trace, KEEP)[1])
    assert kept_others == tried_others


def _checked_pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Check, in each session, that every gang the kept pool leaves out without a look is one a
    fresh pool would park; the number of such gangs per session, in the list returned, and -1
    for a session where one is not (the engine turns what a cycle raises into a reject, so the
    tests assert on the list after the run)."""
    of = parked_pool.Pool.__dict__["of"].__func__
    kept: list[int] = []

    def checked(cls: type[parked_pool.Pool], session: Any) -> parked_pool.Pool | None:
        pool = of(cls, session)
        if pool is not None:
            snapshot = session.snapshot
            fresh = cls(session, snapshot.unsettled, snapshot.renewal, {}, {}, {}, {})
            unasked = [key for key in pool.parked if key in snapshot.jobs and key not in pool.later]  # later: asked
            same = all(fresh.parks(snapshot.jobs[key]) for key in unasked)
            kept.append(len(unasked) if same else -1)
        return pool

    monkeypatch.setattr(parked_pool.Pool, "of", classmethod(checked))
    return kept


def _no_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parked_pool.Pool, "of", classmethod(lambda cls, session: None))


@_POLICIES
def test_the_pool_leaves_out_the_gangs_their_turn_would_pass_over(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gangs left out of allocate's order before it starts are those it would pass over at their
    turn: every decision is the same with the pool and with each gang asked at its turn. The
    pool is kept from cycle to cycle, and each gang it leaves out without a look again is one a
    fresh pool would park. With ``reservation`` the gang holding room is never left out, and
    held room lent to a gang that still cannot fit does not keep it from being parked."""
    kept = _checked_pools(monkeypatch)
    with_pool = _run(trace, _keep(config))[1]
    assert sum(kept) > 20 and -1 not in kept
    _no_pool(monkeypatch)
    assert _run(trace, _keep(config))[1] == with_pool


def test_a_gang_lent_held_room_that_still_cannot_fit_is_parked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held room lent to a gang is room that was free: when too few of its copies fit even with
    it, the gang is passed over at its turn like any other (and keeps its status). The answer is
    counted without lending (the holds keep their room), and it is the one asked with the room
    really lent: at a gang's turn, and for the woken gangs the pool asks after the first job's
    attempt, per shape and need. (What each call found is kept and asserted after the run: the
    engine turns what a cycle raises into a reject.)"""
    real, real_groups = parked.parked, parked_pool.short_when_lent
    calls: list[tuple[bool, bool, bool]] = []  # per answer with room lent: parked, holds unchanged, as asked lent

    def asked_lent(session: Any, lent: list[held_room.Held], asked: dict[tuple[object, int], Any]) -> dict[Any, bool]:
        lending.lend(lent)
        nodes = session.snapshot.node_list()
        answers = {group: shortfall.too_few(session, tasks, nodes, group[1]) for group, tasks in asked.items()}
        lending.hold_again(lent)
        return answers

    def spy(session: Any, job: Any, lent: list[held_room.Held] | None = None) -> bool:
        before = [dict(held.statement.held_totals()) for held in lent or ()]
        answer = real(session, job, lent)
        if lent:
            same = [held.statement.held_totals() for held in lent] == before
            lending.lend(lent)
            asked = real(session, job)
            lending.hold_again(lent)
            calls.append((answer, same, answer == asked))
        return answer

    def groups_spy(session: Any, lent: list[held_room.Held], asked: dict[tuple[object, int], Any]) -> dict[Any, bool]:
        before = [dict(held.statement.held_totals()) for held in lent]
        answers = real_groups(session, lent, asked)
        same = [held.statement.held_totals() for held in lent] == before
        lent_answers = asked_lent(session, lent, asked)
        calls.extend((answer, same, answer == lent_answers[group]) for group, answer in answers.items())
        return answers

    monkeypatch.setattr(parked, "parked", spy)
    monkeypatch.setattr(parked_pool, "short_when_lent", groups_spy)
    _run(BUSY_USERS, _keep(SHORTEST_HISTORY))
    assert any(answer for answer, _, _ in calls) and not all(answer for answer, _, _ in calls)
    assert all(same and as_lent for _, same, as_lent in calls)


# Plugins that let gangs hold room: the oldest past 10 s (reservation), every job past 10 s (sla).
_HOLDING = (
    KEEP,
    _keep(large_gangs(**{"reservation-waiting-time": "10s"})),
    _keep(with_plugin("sla", {"sla-waiting-time": "10s"})),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces(), st.sampled_from(_HOLDING))
def test_the_pool_decides_as_turns_do(trace: Trace, config: SchedulerConfig) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        kept = _checked_pools(monkeypatch)
        with_pool = _run(trace, config)[1]
        assert -1 not in kept
        _no_pool(monkeypatch)
        assert _run(trace, config)[1] == with_pool


def _shrunk(lines: list[str], after: int) -> list[str]:
    """The stream with each gang told, ``after`` cycles once its PodGroup arrived, that one
    member is enough (a change of the job while it may be parked)."""
    out: list[str] = []
    due: dict[str, list[Any]] = {}  # gang -> [cycles left, its PodGroup as it arrived]
    for line in lines:
        event = json.loads(line)
        group = event.get("object") or {}
        if event["type"] == "SCHEDULE":
            for name, entry in list(due.items()):
                entry[0] -= 1
                if not entry[0]:
                    changed = copy.deepcopy(entry[1])
                    changed["spec"]["minMember"] = 1
                    changed["metadata"]["resourceVersion"] = str(10**6 + len(out))
                    out.append(json.dumps({"type": "MODIFIED", "cluster": event["cluster"], "object": changed}))
                    del due[name]
        elif event["type"] == "ADDED" and group.get("kind") == "PodGroup":
            due[group["metadata"]["name"]] = [after, group]
        out.append(line)
    return out


def _replays_as_turns(lines: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Replayed, ``lines`` give the same decisions with the kept pool (checked each session, and
    leaving gangs out) and with each gang asked at its turn."""
    kept = _checked_pools(monkeypatch)
    with_pool = _decisions(lines, KEEP, fresh=False)
    assert sum(kept) > 20 and -1 not in kept
    _no_pool(monkeypatch)
    assert _decisions(lines, KEEP, fresh=False) == with_pool


@pytest.mark.parametrize("after", [5, 8])
def test_a_parked_gang_whose_job_changes_is_asked_again(after: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _replays_as_turns(_shrunk(_run(BUSY, KEEP)[0], after), monkeypatch)


def test_the_pool_needs_no_echo_of_the_statuses_it_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the cluster's echo of our PodGroup statuses (a stream where they have not come
    back yet), the pool decides as turns do: a status close wrote wakes its gang by itself."""
    lines = [line for line in _run(BUSY, KEEP)[0] if not ('"MODIFIED"' in line and '"kind":"PodGroup"' in line)]
    _replays_as_turns(lines, monkeypatch)


def test_explain_still_sees_what_an_attempt_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dry run (``explain``) parks nobody: each gang waiting for room, parked in the cycles
    around it, is tried and its room recorded."""
    lines, _ = _run(BUSY, KEEP)
    engine = Engine(KEEP, on_markers=lambda _: True)
    answers = spies.answers(monkeypatch, parked_pool.Pool, "parks")
    watched = 0
    for index, line in enumerate(lines):
        engine.handle(parse_event(line))
        if index % 40 or not any(answers):
            continue
        state = engine.state("default")
        waiting = frozenset(
            key
            for key, machine in state.machines.get("PodGroup", {}).items()
            if machine.reported and machine.reported[0] == "Inqueue" and machine.reported[1]
            and machine.reported[1][0][2] == "NotEnoughResources"
        )  # fmt: skip
        seen = volcano_cycle.dry_run(state, KEEP, waiting)
        assert waiting <= seen.room.keys()
        watched += len(waiting)
    assert watched > 20


def test_gangs_woken_by_free_room_that_held_room_leaves_short_stay_parked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parked gang whose copies fit the nodes' free room again, but not once the first job
    tried (the reservation's target) holds its room, is asked after that job's attempt and stays
    parked, out of the order: every decision is the same as with each gang asked at its turn."""
    real = parked_pool.Pool.ask
    kept: list[int] = []  # per session that asked, the gangs left parked

    def counted(pool: parked_pool.Pool, later: parked_pool.Later, holds: list[held_room.Held], order: Any) -> None:
        real(pool, later, holds, order)
        kept.append(sum(job.key in pool.parked for _, job in later))

    monkeypatch.setattr(parked_pool.Pool, "ask", counted)
    with_pool = _run(BUSY_USERS, _keep(SHORTEST_HISTORY))[1]
    assert sum(kept) > 100
    _no_pool(monkeypatch)
    assert _run(BUSY_USERS, _keep(SHORTEST_HISTORY))[1] == with_pool


def test_room_lent_is_counted_as_if_given_back() -> None:
    """Node a (2 cpu) has 1 free and 1 held for a gang; node b (2 cpu) has none free and 2 held,
    and a check of the node fails there whatever its room. With the held room lent, a 1-cpu
    shape fits twice on a (its free cpu and the lent one: not its one copy now plus two more)
    and never on b: 2 copies, too few for 3, enough for 2."""
    nodes: dict[str, NodeInfo] = {}
    for name, free in (("a", 1000), ("b", 0)):
        node = b.typed(b.node(name, cpu="2", memory="8Gi"))
        assert isinstance(node, CoreNode)
        nodes[name] = NodeInfo(name, node, {"cpu": 2000, "pods": 110_000}, {"cpu": free, "pods": 109_000}, {})
    task = _task("g-0", "1")
    gang = JobInfo(ObjectKey("ns/g"), None, "default", 3, {}, None, 0.0, PodGroupPhase.INQUEUE, tasks=[task])
    session = Session(Snapshot(nodes, {}, {gang.key: gang}, [], [], {}), SchedulerConfig())
    session.add_predicate("test", lambda _, node: ["held back"] if node.name == "b" else [])
    more = {"a": {"cpu": 1000}, "b": {"cpu": 2000}}
    listed = list(nodes.values())
    assert shortfall.too_few(session, [task], listed, 2)  # one copy now
    assert shortfall.too_few(session, [task], listed, 3, more)
    assert not shortfall.too_few(session, [task], listed, 2, more)
