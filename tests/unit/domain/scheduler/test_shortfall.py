"""domain.scheduler.shortfall: the findings worked out for a gang of alike tasks that cannot all
be placed are those of the attempt they stand for. Closed-loop runs of busy traces (gangs of
1-cpu tasks on 2-cpu nodes, as an HPC trace gives; gangs pinned to some nodes; uneven nodes; mixed shapes)
decide the same, byte for byte, with the shortfall and with every attempt made."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest

from domain import quantity
from domain.scheduler import shortfall
from domain.scheduler.candidates import Candidates, Ranking
from domain.scheduler.config import SchedulerConfig
from services.simulate.loop import run_closed_loop
from services.traces.model import Job, Node, Trace, with_estimates
from tests import spies
from tests.unit.domain.scheduler.test_retry import BUSY, LARGE_GANGS, SHORTEST_HISTORY, with_users

HPC = Trace(
    tuple(
        Job(f"j{i}", 3.0 * i, 20.0 + 17 * (i % 6), tasks=1 + (i * 7) % 13, requests={"cpu": "1", "memory": "1Gi"})
        for i in range(80)
    ),
    tuple(Node(f"n{i}", {"cpu": "2", "memory": "4Gi"}) for i in range(8)),
)
# Half the gangs may use only the "a" nodes: the others fail the node affinity whatever their room.
PINNED = Trace(
    tuple(
        Job(j.id, j.submit, j.duration, tasks=j.tasks, requests=j.requests, node_affinity={"pool": ("a",)})
        if i % 2
        else j
        for i, j in enumerate(HPC.jobs)
    ),
    tuple(Node(f"n{i}", {"cpu": "2", "memory": "4Gi"}, {"pool": "ab"[i % 2]}) for i in range(8)),
)
ODD_NODES = Trace(
    HPC.jobs,
    tuple(Node(f"n{i}", {"cpu": str(1 + i % 3), "memory": f"{1 + i}Gi"}) for i in range(8)),
)


def _run(trace: Trace, config: SchedulerConfig) -> tuple[bytes, bytes]:
    events, decisions = io.BytesIO(), io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, decisions)
    return events.getvalue(), decisions.getvalue()


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (HPC, SchedulerConfig()),
        (ODD_NODES, SchedulerConfig()),
        (PINNED, SchedulerConfig()),
        (BUSY, SchedulerConfig()),
        (HPC, LARGE_GANGS),
    ],
    ids=["hpc", "uneven nodes", "node affinity", "busy", "hpc large-gangs"],
)
def test_shortfalls_decide_as_attempts(trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    found = spies.answers(monkeypatch, shortfall, "find")
    with_shortfalls = _run(trace, config)
    assert sum(answer is not None for answer in found) > 20
    monkeypatch.setattr(shortfall, "find", lambda *_: None)
    assert with_shortfalls == _run(trace, config)


@pytest.mark.parametrize("trace", [HPC, ODD_NODES, PINNED, BUSY], ids=["hpc", "uneven nodes", "node affinity", "busy"])
def test_a_rankings_kept_copies_are_those_counted_afresh(trace: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each time a shape's room is asked (parked gangs woken by room, shortfalls), the copies its
    ranking kept as nodes changed are what a count over its feasible nodes finds now."""
    real = Candidates.standing
    asked: list[int] = []

    def counted_afresh(self: Candidates, *args: Any, **kwargs: Any) -> Ranking | None:
        ranking = real(self, *args, **kwargs)
        if ranking is not None:
            request = [(name, amount) for name, amount in ranking.task.request.items() if amount > 0]
            fresh = {n: min(ranking.nodes[n].idle.get(r, 0) // a for r, a in request) for n in ranking.feasible}
            assert (ranking.copies, ranking.total) == (fresh, sum(fresh.values()))
            asked.append(ranking.total)
        return ranking

    monkeypatch.setattr(Candidates, "standing", counted_afresh)
    _run(trace, dataclasses.replace(SchedulerConfig(), keep_waiting_reasons=True))
    assert len(asked) > 50 and len(set(asked)) > 3


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (with_estimates(BUSY, "exact"), LARGE_GANGS),
        (with_users(HPC, 4), SHORTEST_HISTORY),
    ],
    ids=["estimates", "history"],
)
def test_copies_in_lent_room_kept_are_those_counted_afresh(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``too_few`` with held room lent counts the copies as if that room were given back, once
    per lent room while no node changes: each answer is the one a count over every node, each
    asked with its free room and the room lent there, gives."""
    real = shortfall.too_few
    kept: list[bool] = []

    def counted_afresh(session: Any, tasks: Any, nodes: Any, need: int, more: Any = None) -> bool:
        if not more:
            return real(session, tasks, nodes, need, more)
        room = shortfall._room(session, tasks[0], nodes)
        kept.append(room is not None and room.more is not None and room.more[0] is more)
        answer = real(session, tasks, nodes, need, more)
        fresh, request = 0, [(r, a) for r, a in tasks[0].request.items() if a > 0]
        for node in nodes:
            idle = dict(node.idle)
            quantity.add(idle, more.get(node.name, {}))
            if not session.predicate(tasks[0], node.with_idle(idle)):
                fresh += min(idle.get(r, 0) // a for r, a in request)
        assert answer == (fresh < need)
        return answer

    monkeypatch.setattr(shortfall, "too_few", counted_afresh)
    _run(trace, dataclasses.replace(config, keep_waiting_reasons=True))
    assert sum(kept) > 10 and not all(kept)
