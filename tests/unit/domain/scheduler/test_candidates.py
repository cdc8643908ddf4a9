"""domain.scheduler.candidates: node rankings carried from one cycle to the next decide exactly
what rankings made afresh in every cycle decide."""

from __future__ import annotations

from collections import Counter
from typing import cast
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.decisions import Decision
from domain.engine import Engine
from domain.events import parse_event
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.scheduler import candidates as candidates_module
from domain.scheduler.candidates import Candidates
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugins import binpack, nodeorder, predicates
from domain.scheduler.session import Session
from domain.scheduler.snapshot import Snapshot
from tests import builders as b
from tests.streams import Shape, synthetic_stream

SHAPE = Shape(nodes=12, gangs=60, marker_every=7)


def _run(lines: list[str], *, forget: bool) -> tuple[list[Decision], int]:
    """The decisions, and how many cycles reused the last cycle's candidates."""
    engine = Engine(SchedulerConfig(), on_markers=lambda _: True)
    out: list[Decision] = []
    carried = 0
    for line in lines:
        cache = engine.cache(engine.state("c1"))
        before = cache.volcano.rankings
        if forget:
            engine.caches.clear()
        out.extend(engine.handle(parse_event(line)).decisions)
        after = engine.cache(engine.state("c1")).volcano.rankings
        carried += before is not None and after is before
    return out, carried


def test_carried_rankings_decide_as_fresh_ones() -> None:
    lines = synthetic_stream("c1", SHAPE)
    carried, reused = _run(lines, forget=False)
    fresh, _ = _run(lines, forget=True)
    assert reused > 10  # the rankings really were carried over
    assert sum(d.kind == "Bind" for d in carried) > 50
    assert [d.to_dict() for d in carried] == [d.to_dict() for d in fresh]


_amount = st.integers(min_value=0, max_value=8)


def _nodes(free: list[tuple[int, int]]) -> list[NodeInfo]:
    return [
        NodeInfo(f"n{i:02d}", cast(Node, None), {"cpu": 8, "memory": 8}, {"cpu": c, "memory": m}, {})
        for i, (c, m) in enumerate(free)
    ]


def predicate(task: TaskInfo, node: NodeInfo) -> list[str]:
    return [f"Insufficient {n}" for n, a in sorted(task.request.items()) if a > node.idle[n]]


def score(task: TaskInfo, node: NodeInfo) -> float:
    return float(node.idle["cpu"] - task.request["cpu"] + 2 * (node.idle["memory"] % 3))


@given(
    free=st.lists(st.tuples(_amount, _amount), min_size=1, max_size=12),
    asks=st.lists(st.tuples(_amount, _amount), min_size=1, max_size=6),
)
def test_a_first_question_scanned_answers_as_a_ranking_does(
    free: list[tuple[int, int]], asks: list[tuple[int, int]]
) -> None:
    """A shape asked once is answered by a scan, later by its kept ranking: the same node (best
    score, ties to the name) and the same reasons, whichever way."""
    nodes = _nodes(free)
    for cpu, memory in asks:
        task = TaskInfo(ObjectKey("c1/p"), cast(Pod, None), ObjectKey("c1/g"), {"cpu": cpu, "memory": memory},
                        TaskStatus.PENDING)  # fmt: skip
        candidates = Candidates(predicate, score)
        scanned, ranked = (candidates.best(("shape",), task, nodes) for _ in range(2))
        assert scanned[0] is ranked[0]
        assert (scanned[1].nodes, dict(scanned[1].reasons)) == (ranked[1].nodes, dict(ranked[1].reasons))


@given(
    free=st.lists(st.tuples(_amount, _amount), min_size=1, max_size=12),
    changes=st.lists(st.tuples(st.integers(min_value=0, max_value=11), _amount, _amount), max_size=8),
    ask=st.tuples(_amount, _amount),
    asked=st.integers(min_value=1, max_value=12),
)
def test_a_ranking_started_from_its_first_scan_answers_as_a_full_evaluation(
    free: list[tuple[int, int]], changes: list[tuple[int, int, int]], ask: tuple[int, int], asked: int
) -> None:
    """A shape's second question starts its ranking from the first scan and evaluates again only
    the nodes changed in between: the best node and the reasons are those of every node now. The
    question may be about some of the nodes only (a network domain); any node may change."""
    every = _nodes(free)
    nodes = every[:asked]
    task = TaskInfo(ObjectKey("c1/p"), cast(Pod, None), ObjectKey("c1/g"), {"cpu": ask[0], "memory": ask[1]},
                    TaskStatus.PENDING)  # fmt: skip
    candidates = Candidates(predicate, score)
    candidates.best(("shape",), task, nodes)  # the first question: a scan, kept as a draft
    for index, cpu, memory in changes:
        node = every[index % len(every)]
        node.idle.update(cpu=cpu, memory=memory)
        candidates.changed(node)
    best, summary = candidates.best(("shape",), task, nodes)
    feasible = [(-score(task, n), n.name, n) for n in nodes if not predicate(task, n)]
    assert best is (min(feasible, key=lambda e: e[:2])[2] if feasible else None)
    reasons = Counter(r for n in nodes for r in predicate(task, n))
    assert best is not None or dict(summary.reasons) == dict(reasons)


_NODES = {False: b.typed(b.node("n", cpu="8", memory="8")), True: b.typed(b.node("n", unschedulable=True))}


_few = st.integers(min_value=0, max_value=2)  # alike nodes are common


@given(
    free=st.lists(st.tuples(_few, _few, st.booleans()), min_size=1, max_size=12),
    rounds=st.lists(
        st.tuples(st.lists(st.tuples(st.integers(0, 11), _few, _few), max_size=4), _few, _few),
        min_size=1,
        max_size=12,
    ),
    asked=st.integers(min_value=1, max_value=12),
    over_columns=st.sampled_from([1, 2, candidates_module.ASKED_OVER_COLUMNS]),
)
def test_first_questions_over_node_columns_answer_as_a_scan(
    free: list[tuple[int, int, bool]],
    rounds: list[tuple[list[tuple[int, int, int]], int, int]],
    asked: int,
    over_columns: int,
) -> None:
    """With node-local predicates and scores (``holds``), a shape's first questions are answered
    over node columns (``node_columns``), and later ones by its ranking: the best node is that of
    every node, after any changes of free room, over all nodes or some of them (a network domain)."""
    every = [
        NodeInfo(f"n{i:02d}", cast(Node, _NODES[off]), {"cpu": 8, "memory": 8}, {"cpu": c, "memory": m}, {})
        for i, (c, m, off) in enumerate(free)
    ]
    session = Session(Snapshot({n.name: n for n in every}, {}, {}, [], [], {}), SchedulerConfig())
    for plugin in (predicates, nodeorder, binpack):
        plugin.build({}).on_open(session)
    holds = {n.name: n for n in every}
    candidates = Candidates(session.predicate, session.node_score, columns=session.columns(), holds=holds)
    with patch.object(candidates_module, "ASKED_OVER_COLUMNS", over_columns):
        _ask(candidates, session, every, rounds, asked)


def _ask(
    candidates: Candidates,
    session: Session,
    every: list[NodeInfo],
    rounds: list[tuple[list[tuple[int, int, int]], int, int]],
    asked: int,
) -> None:
    for changes, cpu, memory in rounds:
        for index, c, m in changes:
            node = every[index % len(every)]
            node.idle.update(cpu=c, memory=m)
            candidates.changed(node)
        pod = b.typed(b.pod("p", cpu=None, memory=None))
        task = TaskInfo(ObjectKey("c1/p"), cast(Pod, pod), ObjectKey("c1/g"), {"cpu": cpu, "memory": memory},
                        TaskStatus.PENDING)  # fmt: skip
        for where, nodes in (("", every), ("some", every[:asked])):
            best, _ = candidates.best(("shape", cpu, memory, where), task, nodes, where)
            feasible = [(-session.node_score(task, n), n.name, n) for n in nodes if not session.predicate(task, n)]
            assert best is (min(feasible, key=lambda e: e[:2])[2] if feasible else None)


def _local_candidates(every: list[NodeInfo]) -> tuple[Candidates, Session]:
    session = Session(Snapshot({n.name: n for n in every}, {}, {}, [], [], {}), SchedulerConfig())
    for plugin in (predicates, nodeorder, binpack):
        plugin.build({}).on_open(session)
    holds = {n.name: n for n in every}
    return Candidates(session.predicate, session.node_score, columns=session.columns(), holds=holds), session


def _asked_often(candidates: Candidates, task: TaskInfo, nodes: list[NodeInfo]) -> NodeInfo | None:
    """The answer of ``task``'s shape's ranking (asked past the questions over node columns)."""
    best = None
    for _ in range(candidates_module.ASKED_OVER_COLUMNS + 1):
        best, _ = candidates.best((task.shape(), ""), task, nodes)
    return best


@pytest.mark.parametrize("kinds_kept", [candidates_module.KINDS_KEPT, -3], ids=["as shipped", "one kind numbered"])
def test_alike_nodes_share_answers_only_while_alike(kinds_kept: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Node-local answers are kept by what a node is and its free room: a node whose object
    changes (made unschedulable) is evaluated again, not answered as its old twin; and nodes that
    differ only in labels are told apart for a task with a node selector (it reads the labels).
    With room for one kind's number only (two nodes: 2 * 2 - 3), every new kind drops the
    numbers and the answers kept by them, and the answers are the same."""
    monkeypatch.setattr(candidates_module, "KINDS_KEPT", kinds_kept)
    zone_a = cast(Node, b.typed(b.node("a", cpu="8", memory="8", labels={"zone": "a"})))
    zone_b = cast(Node, b.typed(b.node("b", cpu="8", memory="8", labels={"zone": "b"})))
    every = [NodeInfo(name, obj, {"cpu": 8, "memory": 8}, {"cpu": 8, "memory": 8}, {})
             for name, obj in (("n0", zone_a), ("n1", zone_b))]  # fmt: skip
    candidates, session = _local_candidates(every)
    assert candidates.holds is not None
    plain = TaskInfo(ObjectKey("c1/p"), cast(Pod, b.typed(b.pod("p", cpu=None, memory=None))), ObjectKey("c1/g"),
                     {"cpu": 2, "memory": 2}, TaskStatus.PENDING)  # fmt: skip
    assert _asked_often(candidates, plain, every) is every[0]  # a tie: to the name
    off = NodeInfo("n0", cast(Node, b.typed(b.node("a", unschedulable=True))), {"cpu": 8, "memory": 8},
                   {"cpu": 8, "memory": 8}, {})  # fmt: skip
    every[0] = candidates.holds["n0"] = off  # as the next snapshot builds it, handed over by ``carry``
    candidates = candidates_module.carry(
        candidates, session.predicate, session.node_score, candidates.holds, {"n0"}, columns=session.columns()
    )
    assert candidates.best((plain.shape(), ""), plain, every)[0] is every[1]
    picky_pod = cast(Pod, b.typed(b.pod("q", cpu=None, memory=None, node_selector={"zone": "b"})))
    picky = TaskInfo(ObjectKey("c1/q"), picky_pod, ObjectKey("c1/g"), {"cpu": 2, "memory": 2}, TaskStatus.PENDING)
    alike = [NodeInfo(name, obj, {"cpu": 8, "memory": 8}, {"cpu": 8, "memory": 8}, {})
             for name, obj in (("n0", zone_a), ("n1", zone_b))]  # fmt: skip
    candidates, _ = _local_candidates(alike)
    assert _asked_often(candidates, picky, alike) is alike[1]
    alike[1].idle.update(cpu=0)
    candidates.changed(alike[1])
    assert candidates.best((picky.shape(), ""), picky, alike)[0] is None
