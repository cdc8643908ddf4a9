"""domain.scheduler.predicates: can this pod run on this node, and why not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.reasons import FitSummary, failed_words, gang_unschedulable
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugins import predicates as predicates_plugin
from domain.scheduler.predicates import (
    NOT_READY,
    SELECTOR_MISMATCH,
    UNSCHEDULABLE,
    UNTOLERATED_TAINT,
    fit_failures,
)
from domain.scheduler.session import Session
from domain.scheduler.snapshot import Snapshot
from tests import builders as b

Wire = dict[str, Any]


@dataclass(frozen=True)
class FitCase:
    name: str
    pod: Wire
    node: Wire
    want_failures: list[str]
    used: dict[str, int] = field(default_factory=dict)
    """Milli-units already taken on the node by other pods."""


def _node(**kwargs: Any) -> Wire:
    return b.node("n-1", cpu="4", memory="8Gi", gpu="2", **kwargs)


def _pod(**kwargs: Any) -> Wire:
    return b.pod("p", cpu=kwargs.pop("cpu", "1"), memory=kwargs.pop("memory", "1Gi"), **kwargs)


def _affinity(*exprs: Wire, fields: tuple[Wire, ...] = ()) -> Wire:
    term: Wire = {}
    if exprs:
        term["matchExpressions"] = list(exprs)
    if fields:
        term["matchFields"] = list(fields)
    return b.required_affinity(term)


_LABELED = {"zone": "a", "disk": "nvme", "gpu-count": "4"}
E = b.expr

FIT_CASES = [
    FitCase("a pod that fits", _pod(), _node(), []),
    FitCase("a pod that fits exactly", _pod(cpu="4", memory="8Gi", gpu="2"), _node(), []),
    FitCase("insufficient cpu", _pod(cpu="4100m"), _node(), ["Insufficient cpu"]),
    FitCase("insufficient memory", _pod(memory="9Gi"), _node(), ["Insufficient memory"]),
    FitCase("insufficient gpu", _pod(gpu="3"), _node(), ["Insufficient nvidia.com/gpu"]),
    FitCase("gpu asked of a node without gpus", _pod(gpu="1"), b.node("cpu-only"), ["Insufficient nvidia.com/gpu"]),
    FitCase(
        "insufficient cpu after what is already used",
        _pod(cpu="2"),
        _node(),
        ["Insufficient cpu"],
        used={"cpu": 2500},
    ),
    FitCase(
        "several shortages, sorted by resource",
        _pod(cpu="5", memory="9Gi", gpu="3"),
        _node(),
        ["Insufficient cpu", "Insufficient memory", "Insufficient nvidia.com/gpu"],
    ),
    FitCase("insufficient pods", _pod(), b.node("full", pods="1"), ["Insufficient pods"], used={"pods": 1000}),
    FitCase("an unschedulable node", _pod(), _node(unschedulable=True), [UNSCHEDULABLE]),
    FitCase("a node whose Ready condition is False", _pod(), _node(ready="False"), [NOT_READY]),
    FitCase("a node whose Ready condition is Unknown", _pod(), _node(ready="Unknown"), [NOT_READY]),
    FitCase("a node without conditions counts as ready", _pod(), _node(ready=None), []),
    FitCase("unschedulable is reported before a shortage", _pod(cpu="100"), _node(unschedulable=True), [UNSCHEDULABLE]),
    FitCase(
        "a matching nodeSelector",
        _pod(node_selector={"zone": "a", "disk": "nvme"}),
        _node(labels=_LABELED),
        [],
    ),
    FitCase(
        "a nodeSelector value mismatch",
        _pod(node_selector={"zone": "b"}),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase("a nodeSelector label the node lacks", _pod(node_selector={"ssd": "yes"}), _node(), [SELECTOR_MISMATCH]),
    FitCase(
        "affinity In matches",
        _pod(affinity=_affinity(E("zone", "In", "b", "a"))),
        _node(labels=_LABELED),
        [],
    ),
    FitCase(
        "affinity In does not match",
        _pod(affinity=_affinity(E("zone", "In", "b", "c"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "affinity In on a missing label",
        _pod(affinity=_affinity(E("rack", "In", "r1"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "affinity NotIn excludes the value",
        _pod(affinity=_affinity(E("zone", "NotIn", "a"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "affinity NotIn matches a missing label",
        _pod(affinity=_affinity(E("rack", "NotIn", "r1"))),
        _node(labels=_LABELED),
        [],
    ),
    FitCase("affinity Exists", _pod(affinity=_affinity(E("disk", "Exists"))), _node(labels=_LABELED), []),
    FitCase(
        "affinity Exists on a missing label",
        _pod(affinity=_affinity(E("ssd", "Exists"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "affinity DoesNotExist on a missing label",
        _pod(affinity=_affinity(E("ssd", "DoesNotExist"))),
        _node(labels=_LABELED),
        [],
    ),
    FitCase(
        "affinity DoesNotExist on a present label",
        _pod(affinity=_affinity(E("disk", "DoesNotExist"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase("affinity Gt true", _pod(affinity=_affinity(E("gpu-count", "Gt", "3"))), _node(labels=_LABELED), []),
    FitCase(
        "affinity Gt equal is false",
        _pod(affinity=_affinity(E("gpu-count", "Gt", "4"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase("affinity Lt true", _pod(affinity=_affinity(E("gpu-count", "Lt", "5"))), _node(labels=_LABELED), []),
    FitCase(
        "affinity Lt false",
        _pod(affinity=_affinity(E("gpu-count", "Lt", "4"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "affinity Gt on a label that is not a number",
        _pod(affinity=_affinity(E("zone", "Gt", "1"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "affinity Gt on a missing label",
        _pod(affinity=_affinity(E("rack", "Gt", "1"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "expressions in one term are ANDed",
        _pod(affinity=_affinity(E("zone", "In", "a"), E("disk", "In", "hdd"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "terms are ORed",
        _pod(
            affinity=b.required_affinity(
                {"matchExpressions": [E("zone", "In", "z")]}, {"matchExpressions": [E("disk", "Exists")]}
            )
        ),
        _node(labels=_LABELED),
        [],
    ),
    FitCase(
        "an empty term matches nothing",
        _pod(affinity=b.required_affinity({})),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "matchFields metadata.name In the node's name",
        _pod(affinity=_affinity(fields=(E("metadata.name", "In", "n-1"),))),
        _node(),
        [],
    ),
    FitCase(
        "matchFields metadata.name In another name",
        _pod(affinity=_affinity(fields=(E("metadata.name", "In", "n-2"),))),
        _node(),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "matchFields metadata.name NotIn the node's name",
        _pod(affinity=_affinity(fields=(E("metadata.name", "NotIn", "n-1"),))),
        _node(),
        [SELECTOR_MISMATCH],
    ),
    FitCase(
        "a nodeSelector and affinity must both match",
        _pod(node_selector={"zone": "b"}, affinity=_affinity(E("disk", "Exists"))),
        _node(labels=_LABELED),
        [SELECTOR_MISMATCH],
    ),
    FitCase("an untolerated NoSchedule taint", _pod(), _node(taints=[b.taint("gpu", "yes")]), [UNTOLERATED_TAINT]),
    FitCase(
        "an untolerated NoExecute taint",
        _pod(),
        _node(taints=[b.taint("gpu", "yes", "NoExecute")]),
        [UNTOLERATED_TAINT],
    ),
    FitCase(
        "a PreferNoSchedule taint is ignored", _pod(), _node(taints=[b.taint("gpu", "yes", "PreferNoSchedule")]), []
    ),
    FitCase(
        "an Equal toleration with the taint's value",
        _pod(tolerations=[{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]),
        _node(taints=[b.taint("gpu", "yes")]),
        [],
    ),
    FitCase(
        "an Equal toleration with another value",
        _pod(tolerations=[{"key": "gpu", "operator": "Equal", "value": "no", "effect": "NoSchedule"}]),
        _node(taints=[b.taint("gpu", "yes")]),
        [UNTOLERATED_TAINT],
    ),
    FitCase(
        "a toleration without operator defaults to Equal",
        _pod(tolerations=[{"key": "gpu", "value": "yes"}]),
        _node(taints=[b.taint("gpu", "yes")]),
        [],
    ),
    FitCase(
        "an Exists toleration ignores the value",
        _pod(tolerations=[{"key": "gpu", "operator": "Exists"}]),
        _node(taints=[b.taint("gpu", "anything", "NoExecute")]),
        [],
    ),
    FitCase(
        "an Exists toleration with an empty key tolerates every taint",
        _pod(tolerations=[{"operator": "Exists"}]),
        _node(taints=[b.taint("a", "1"), b.taint("b", "2", "NoExecute")]),
        [],
    ),
    FitCase(
        "an empty key with Equal tolerates nothing",
        _pod(tolerations=[{"operator": "Equal"}]),
        _node(taints=[b.taint("a")]),
        [UNTOLERATED_TAINT],
    ),
    FitCase(
        "a toleration for another effect",
        _pod(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}]),
        _node(taints=[b.taint("gpu", "yes", "NoSchedule")]),
        [UNTOLERATED_TAINT],
    ),
    FitCase(
        "a toleration for another key",
        _pod(tolerations=[{"key": "cpu", "operator": "Exists"}]),
        _node(taints=[b.taint("gpu", "yes")]),
        [UNTOLERATED_TAINT],
    ),
    FitCase(
        "every blocking taint needs its own toleration",
        _pod(tolerations=[{"key": "a", "operator": "Exists"}]),
        _node(taints=[b.taint("a"), b.taint("b")]),
        [UNTOLERATED_TAINT],
    ),
    FitCase(
        "a taint is checked before resources",
        _pod(cpu="100"),
        _node(taints=[b.taint("gpu")]),
        [UNTOLERATED_TAINT],
    ),
]


@pytest.mark.parametrize("case", FIT_CASES, ids=lambda c: c.name)
def test_fit_failures(case: FitCase) -> None:
    pod, node = b.typed(case.pod), b.typed(case.node)
    assert isinstance(pod, Pod)
    assert isinstance(node, Node)
    free = node.allocatable()
    for name, amount in case.used.items():
        free[name] = free.get(name, 0) - amount
    assert fit_failures(pod, pod.spec.requests(), node, free) == case.want_failures


@dataclass(frozen=True)
class SummaryCase:
    name: str
    nodes: int
    failures: list[list[str]]
    want_message: str


SUMMARY_CASES = [
    SummaryCase(
        "shortages and taints counted, reasons sorted",
        3,
        [["Insufficient cpu"], [UNTOLERATED_TAINT], ["Insufficient cpu"]],
        "0/3 nodes are unavailable: 2 Insufficient cpu, 1 node(s) had untolerated taint.",
    ),
    SummaryCase(
        "a node with two shortages counts in both",
        2,
        [["Insufficient cpu", "Insufficient memory"], [UNSCHEDULABLE]],
        "0/2 nodes are unavailable: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) were unschedulable.",
    ),
    SummaryCase(
        "selector and readiness",
        4,
        [[SELECTOR_MISMATCH], [SELECTOR_MISMATCH], [NOT_READY], [SELECTOR_MISMATCH]],
        "0/4 nodes are unavailable: 3 node(s) didn't match Pod's node affinity/selector, 1 node(s) were not ready.",
    ),
    SummaryCase("an empty cluster", 0, [], "0/0 nodes are unavailable: no nodes in the cluster."),
]


@pytest.mark.parametrize("case", SUMMARY_CASES, ids=lambda c: c.name)
def test_fit_summary_message(case: SummaryCase) -> None:
    summary = FitSummary(case.nodes)
    for reasons in case.failures:
        summary.add(reasons)
    assert summary.message() == case.want_message


def test_fit_summary_from_real_fit_failures() -> None:
    pod = b.typed(_pod(cpu="3"))
    nodes = [
        b.typed(b.node("a", cpu="2")),
        b.typed(b.node("b", taints=[b.taint("dedicated", "infra")])),
        b.typed(b.node("c", cpu="2")),
    ]
    assert isinstance(pod, Pod)
    summary = FitSummary(len(nodes))
    for node in nodes:
        assert isinstance(node, Node)
        summary.add(fit_failures(pod, pod.spec.requests(), node, node.allocatable()))
    assert summary.message() == "0/3 nodes are unavailable: 2 Insufficient cpu, 1 node(s) had untolerated taint."


def test_gang_message_counts_tasks_then_gives_the_first_failed_tasks_node_summary() -> None:
    gpu, taint = FitSummary(4), FitSummary(4)
    gpu.add(["Insufficient nvidia.com/gpu"] * 3 + [UNTOLERATED_TAINT])
    taint.add([UNTOLERATED_TAINT] * 4)
    message = gang_unschedulable(3, 4, failed_words(("w-1", gpu), [gpu, taint, gpu]))
    assert message == (
        "3/4 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint. "
        "Origin reason is w-1: 0/4 nodes are unavailable: "
        "3 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint."
    )
    twins = failed_words(("w-1", gpu), [gpu, gpu])  # one summary for all: its top counted once
    assert twins.startswith("2 Insufficient nvidia.com/gpu. Origin reason is w-1: 0/4 nodes")


def test_the_predicates_plugin_answers_as_fit_failures_with_its_answers_kept() -> None:
    """The plugin keeps the answers of the node object's checks between sessions: every pod of
    the cases on every node of the cases (one name, many node objects, each with room taken
    away), asked in turn over two sessions, gets what ``fit_failures`` says."""
    kept: dict[str, object] = {}
    pods = [b.typed(case.pod) for case in FIT_CASES]
    nodes = [b.typed(case.node) for case in FIT_CASES]
    for _ in range(2):
        session = Session(Snapshot({}, {}, {}, [], [], {}), SchedulerConfig())
        session.kept = kept
        predicates_plugin.build({}).on_open(session)
        for node in nodes:
            assert isinstance(node, Node)
            for used in ({}, {"cpu": 3500}):
                free = {name: amount - used.get(name, 0) for name, amount in node.allocatable().items()}
                info = NodeInfo("n-1", node, node.allocatable(), free, dict(node.metadata.labels))
                for pod in pods:
                    assert isinstance(pod, Pod)
                    task = TaskInfo(ObjectKey("ns/p"), pod, ObjectKey("ns/p"), pod.spec.requests(), TaskStatus.PENDING)
                    assert session.predicate(task, info) == fit_failures(pod, task.request, node, free)
    assert len(kept) == 1


def test_the_answers_of_nodes_that_left_are_dropped() -> None:
    """A long-running worker sees nodes come and go: the kept answers follow the snapshot's
    nodes (a session over fewer nodes than are kept drops the others')."""
    kept: dict[str, object] = {}
    node = b.typed(FIT_CASES[0].node)
    pod = b.typed(FIT_CASES[0].pod)
    assert isinstance(node, Node) and isinstance(pod, Pod)
    task = TaskInfo(ObjectKey("ns/p"), pod, ObjectKey("ns/p"), pod.spec.requests(), TaskStatus.PENDING)
    infos = {n: NodeInfo(n, node, node.allocatable(), node.allocatable(), {}) for n in ("n-1", "n-2")}
    for names in (["n-1", "n-2"], ["n-1"]):
        session = Session(Snapshot({n: infos[n] for n in names}, {}, {}, [], [], {}), SchedulerConfig())
        session.kept = kept
        predicates_plugin.build({}).on_open(session)
        for name in names:
            session.predicate(task, infos[name])
    (answers,) = kept.values()
    assert isinstance(answers, dict) and sorted(answers) == ["n-1"]
