"""Held plans: a gang past its bound whose plans would read what they read last time holds the
same nodes, with the shadow time moved as the module says, without planning again."""

from __future__ import annotations

import pytest

from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.core import Node
from domain.objects.meta import ObjectKey
from domain.scheduler import held_plans, held_room, runtimes
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import JobInfo, TaskInfo
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.object_facts import seconds
from domain.scheduler.runtimes import Ends
from domain.scheduler.session import Session
from domain.scheduler.snapshot import Snapshot
from services.traces.model import Trace, with_estimates
from tests import builders as b
from tests.unit.domain.scheduler.test_held_room import (
    HISTORY_CONFIG,
    LENT_IN_VAIN,
    SHORT_HPC,
    SLA,
    _task,
    run,
)
from tests.unit.domain.scheduler.test_retry import BUSY_USERS, LARGE_GANGS, LARGE_GANGS_HISTORY
from tests.unit.domain.scheduler.test_shortfall import HPC, ODD_NODES, PINNED


def _planned_afresh(session: Session, tasks: list[TaskInfo], ends: Ends) -> tuple[list[str], float]:
    """What ``held_room.hold`` plans for ``tasks`` when it keeps no plan: its two plans."""
    planned = held_room.plans(session, tasks, ends)
    assert planned is not None
    return planned


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (HPC, LARGE_GANGS),
        (ODD_NODES, LARGE_GANGS),
        (PINNED, LARGE_GANGS),
        (SHORT_HPC, SLA),
        (BUSY_USERS, LARGE_GANGS_HISTORY),
        (LENT_IN_VAIN, HISTORY_CONFIG),
    ],
    ids=["hpc", "uneven nodes", "node affinity", "sla", "runtime history", "a gang lent room in vain"],
)
@pytest.mark.parametrize("estimates", ["none", "exact"])
def test_a_plan_used_again_is_what_planning_afresh_chooses(
    trace: Trace, config: SchedulerConfig, estimates: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At each hold that uses the last plans again, planning afresh chooses the same nodes and
    the same shadow time; and a run that uses them unchecked, and one that never uses a plan
    again, decide the same, byte for byte."""
    told = with_estimates(trace, estimates)
    plain = run(told, config)[1:]
    real = held_plans.again
    used: list[float] = []

    def checked(session: Session, job: JobInfo, tasks: list[TaskInfo], ends: Ends) -> tuple[list[str], float] | None:
        known = real(session, job, tasks, ends)
        if known is not None:
            assert _planned_afresh(session, tasks, ends) == known
            used.append(known[1])
        return known

    monkeypatch.setattr(held_plans, "again", checked)
    assert run(told, config)[1:] == plain
    assert used
    monkeypatch.setattr(held_plans, "again", lambda *_: None)
    assert run(told, config)[1:] == plain


def test_a_plan_is_used_again_only_while_every_end_is_later_than_the_instant() -> None:
    """Node p (2 cpu) runs r (1 cpu) until 30; q (2 cpu) runs s (2 cpu) until 20. The gang's two
    1-cpu members first go to p (free now) and q (free at 20): shadow 20; then both to q, the
    node that frees up last by then. Planned again at 10 with the same ends, they go to the same
    nodes. At 20, q frees up at the instant, p is free then too and covers more: the latest
    plan puts a member on p, so the gang is planned again. Another free room, or other
    members, are planned again too."""
    node_p, node_q = b.typed(b.node("p", cpu="2", memory="8Gi")), b.typed(b.node("q", cpu="2", memory="8Gi"))
    assert isinstance(node_p, Node) and isinstance(node_q, Node)
    nodes = {
        "p": NodeInfo("p", node_p, {"cpu": 2000, "pods": 110_000}, {"cpu": 1000, "pods": 109_000}, {}),
        "q": NodeInfo("q", node_q, {"cpu": 2000, "pods": 110_000}, {"cpu": 0, "pods": 109_000}, {}),
    }
    running = [_task("r", "1", node="p", runs="30s"), _task("s", "2", node="q", runs="20s")]
    members = [_task("g-0", "1"), _task("g-1", "1")]
    gang = JobInfo(ObjectKey("ns/g"), None, "default", 2, {}, None, 0.0, PodGroupPhase.INQUEUE, tasks=members)
    jobs = {gang.key: gang} | {
        t.job: JobInfo(t.job, None, "default", 1, {}, None, 0.0, PodGroupPhase.RUNNING, tasks=[t]) for t in running
    }
    start = seconds(running[0].pod.status.start_time)
    config = SchedulerConfig()
    cache: dict[str, object] = {}

    def at(now: float) -> tuple[Session, Ends]:
        session = Session(Snapshot(nodes, {}, jobs, [], [], {}, now=start + now), config)
        session.kept = cache
        return session, runtimes.ends(session.snapshot)

    session, ends = at(0)
    assert held_plans.again(session, gang, members, ends) is None  # nothing kept yet
    places, shadow = _planned_afresh(session, members, ends)
    assert (places, shadow) == (["q", "q"], start + 20)
    held_plans.keep(session, gang, members, ends, places=places, shadow=shadow)
    session, ends = at(10)
    assert held_plans.again(session, gang, members[:1], ends) is None  # fewer members
    assert held_plans.again(session, gang, [members[0], _task("g-2", "1")], ends) is None  # another one
    assert held_plans.again(session, gang, members, ends) == (["q", "q"], start + 20)
    assert _planned_afresh(session, members, ends) == (["q", "q"], start + 20)
    session, ends = at(20)
    assert min(end for known in ends.values() for end, _ in known) == start + 20
    assert held_plans.again(session, gang, members, ends) is None
    assert _planned_afresh(session, members, ends) == (["p", "q"], start + 20)
    held_plans.keep(session, gang, members, ends, places=["p", "q"], shadow=start + 20)
    nodes["q"].idle["cpu"] = 1000
    session, ends = at(20)
    assert held_plans.again(session, gang, members, ends) is None  # another free room


def test_a_plan_whose_nodes_all_held_their_members_then_has_the_new_instant_as_its_shadow() -> None:
    """Both nodes hold a member now (say a queue's quota, not room, kept the gang waiting): the
    shadow time is the instant, and used again later, the later instant, as planning afresh says."""
    node_p, node_q = b.typed(b.node("p", cpu="2", memory="8Gi")), b.typed(b.node("q", cpu="2", memory="8Gi"))
    assert isinstance(node_p, Node) and isinstance(node_q, Node)
    nodes = {
        name: NodeInfo(name, node, {"cpu": 2000, "pods": 110_000}, {"cpu": 2000, "pods": 110_000}, {})
        for name, node in (("p", node_p), ("q", node_q))
    }
    members = [_task("g-0", "2"), _task("g-1", "2")]
    gang = JobInfo(ObjectKey("ns/g"), None, "default", 2, {}, None, 0.0, PodGroupPhase.INQUEUE, tasks=members)
    cache: dict[str, object] = {}
    config = SchedulerConfig()
    for now in (100.0, 160.0):
        session = Session(Snapshot(nodes, {}, {gang.key: gang}, [], [], {}, now=now), config)
        session.kept = cache
        known = held_plans.again(session, gang, members, {})
        afresh = _planned_afresh(session, members, {})
        assert afresh == (["p", "q"], now)
        assert known == (None if now == 100.0 else afresh)
        if known is None:
            held_plans.keep(session, gang, members, {}, places=afresh[0], shadow=afresh[1])
    session = Session(Snapshot(nodes, {}, {gang.key: gang}, [], [], {}, now=160.0), SchedulerConfig())
    session.kept = cache
    assert held_plans.again(session, gang, members, {}) is None  # another configuration
