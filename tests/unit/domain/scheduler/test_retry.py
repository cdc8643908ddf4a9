"""domain.scheduler.retry: a gang that failed and sees the same job and nodes with the same free
room gets its last findings again instead of a new attempt, and that decides exactly what a new
attempt decides (held room lent by runtime estimates included): closed-loop runs of a busy
trace, replayed with the memos kept and with every cycle starting without them."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest

from domain.scheduler import retry
from domain.scheduler.actions import allocate
from domain.scheduler.config import SchedulerConfig, from_mapping
from domain.scheduler.infos import JobInfo, TaskStatus
from domain.scheduler.session import Session
from services.simulate.loop import run_closed_loop
from services.traces.model import Job, Node, Trace, with_estimates
from tests import spies
from tests.unit.domain.scheduler.test_kept_snapshot import _decisions

NODES = tuple(Node(f"n{i}", {"cpu": "4"}) for i in range(4))
# Small jobs arrive faster than they end, and gangs of 3 and 4 whole nodes wait among them.
BUSY = Trace(
    tuple(
        Job(f"g{i}", 7.0 * i, 40.0 + 13 * (i % 5), tasks=3 + i % 2, requests={"cpu": "4"})
        if i % 4 == 0
        else Job(f"s{i}", 7.0 * i, 25.0 + 11 * (i % 7), requests={"cpu": str(1 + i % 3)})
        for i in range(60)
    ),
    NODES,
)


def large_gangs(**arguments: object) -> SchedulerConfig:
    """examples/policies/large-gangs.yaml with a 30 s bound and ``arguments`` to reservation."""
    reservation = {"reservation-waiting-time": "30s", **arguments}
    return from_mapping(
        {
            "tiers": [
                {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"},
                             {"name": "reservation", "arguments": reservation}]},
                {"plugins": [{"name": n} for n in ("drf", "predicates", "proportion", "nodeorder", "binpack")]},
            ]
        }
    )  # fmt: skip


LARGE_GANGS = large_gangs()
# Volcano's sla plugin in the place of reservation: every gang past 30 s holds room.
SLA_GANGS = from_mapping(
    {
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"},
                         {"name": "sla", "arguments": {"sla-waiting-time": "30s"}}]},
            {"plugins": [{"name": n} for n in ("drf", "predicates", "proportion", "nodeorder", "binpack")]},
        ]
    }
)  # fmt: skip
# BUSY's jobs by four users, and LARGE_GANGS planning held room on their runtime history.


def with_users(trace: Trace, users: int) -> Trace:
    """``trace`` with its jobs labelled by ``users`` users in turn (``swf/user``, as SWF's)."""
    jobs = tuple(dataclasses.replace(job, labels={"swf/user": f"u{i % users}"}) for i, job in enumerate(trace.jobs))
    return Trace(jobs, trace.nodes)


BUSY_USERS = with_users(BUSY, 4)
LARGE_GANGS_HISTORY = dataclasses.replace(LARGE_GANGS, runtime_history_label="swf/user")
# examples/policies/large-gangs-history.yaml: the other jobs shortest predicted first.
SHORTEST_HISTORY = dataclasses.replace(
    large_gangs(**{"reservation-shortest-first": True}), runtime_history_label="swf/user"
)


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (BUSY, SchedulerConfig()),
        (BUSY, LARGE_GANGS),
        (with_estimates(BUSY, "exact"), LARGE_GANGS),
        (BUSY_USERS, LARGE_GANGS_HISTORY),
        (BUSY_USERS, SHORTEST_HISTORY),
        (with_estimates(BUSY, "exact"), SLA_GANGS),
    ],
    ids=[
        "default",
        "large-gangs",
        "large-gangs with runtime estimates",
        "large-gangs with runtime history",
        "large-gangs-history",
        "sla with runtime estimates",
    ],
)
def test_kept_attempts_decide_as_new_ones(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, io.BytesIO())
    lines = events.getvalue().decode().splitlines()
    repeats = spies.answers(monkeypatch, retry, "repeat")
    kept = _decisions(lines, config, fresh=False)
    assert sum(repeats) > 20  # attempts were kept, not made again
    assert kept == _decisions(lines, config, fresh=True)


@pytest.mark.parametrize("config", [SchedulerConfig(), LARGE_GANGS], ids=["default", "large-gangs"])
def test_a_failed_attempt_leaves_what_it_saw(config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """``remember`` looks after the attempt: a failed plain attempt must leave the job and the
    nodes exactly as the look before it would have seen them."""
    events = io.BytesIO()
    run_closed_loop(BUSY, BUSY.nodes, config, events, io.BytesIO())
    compared: list[tuple[object, bool]] = []  # checked here: the engine skips a cycle that raises
    place = allocate._place

    def checked(session: Session, job: JobInfo, *args: Any, **kwargs: Any) -> bool:
        before = retry.look(session, job) if retry.can_keep(session, job) else None
        again = place(session, job, *args, **kwargs)
        failed = job.placed() < job.min_member and any(t.status is TaskStatus.PENDING for t in job.tasks)
        if before is not None and failed:
            after = retry.look(session, job)
            compared.append((job.key, before.room == after.room and before.same_job(job, after.nodes)))
        return again

    monkeypatch.setattr(allocate, "_place", checked)
    _decisions(events.getvalue().decode().splitlines(), config, fresh=False)
    assert len(compared) > 20
    assert [key for key, same in compared if not same] == []


@pytest.mark.parametrize(
    ("trace", "config"),
    [(BUSY_USERS, SHORTEST_HISTORY), (with_estimates(BUSY, "exact"), SLA_GANGS)],
    ids=["large-gangs-history", "sla with runtime estimates"],
)
def test_a_gang_let_hold_room_holds_it_again_after_a_kept_attempt(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gang past its bound fails alike while nothing it reads changes; its kept attempt is
    followed by the same hold a new one makes: the same decisions and the same room held for
    operators, cycle by cycle. With ``sla`` several gangs hold room on one node: a job lent
    theirs that changes nothing leaves each holding what it held (as a kept attempt, which
    lends nothing, does)."""
    events = io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, io.BytesIO())
    lines = events.getvalue().decode().splitlines()
    holders: list[object] = []  # the gangs let hold room whose attempt was kept
    repeat = retry.repeat

    def spied(session: Session, job: JobInfo, lent: Any = None) -> bool:
        kept = repeat(session, job, lent)
        if kept and session.job_pipelined(job):
            holders.append(job.key)
        return kept

    monkeypatch.setattr(retry, "repeat", spied)
    kept = _decisions(lines, config, fresh=False, held=True)
    assert len(holders) > 5
    assert kept == _decisions(lines, config, fresh=True, held=True)
