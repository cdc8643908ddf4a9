"""domain.scheduler.node_columns: node-local predicates and scores over node columns answer exactly
as they do node by node (the same floats, not nearly), so the best node of a set is the scan's."""

from __future__ import annotations

from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from domain import quantity
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.infos import TaskInfo, TaskStatus
from domain.scheduler.node_columns import NodeColumns, Rows
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugins import binpack, nodeorder, predicates
from domain.scheduler.session import Session
from domain.scheduler.snapshot import Snapshot
from tests import builders as b

GPU, FOO = "nvidia.com/gpu", "example.com/foo"
RESOURCES = (quantity.CPU, quantity.MEMORY, GPU, FOO, "pods")
KINDS = (
    b.typed(b.node("n", cpu="8", memory="8")),
    b.typed(b.node("n", unschedulable=True)),
    b.typed(b.node("n", ready="False")),
    b.typed(b.node("n", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])),
    b.typed(b.node("n", labels={"gpu": "a100"})),
    b.typed(b.node("n", labels={"gpu": "v100"})),
)
SELECTORS = (None, {"gpu": "a100"})
AFFINITIES = (None, {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "v100"]}]}]}}})  # fmt: skip
TOLERATES = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]

# Amounts as the scheduler keeps them (thousandths), in one unit per example (a CPU, a MiB, 8 GiB of
# memory): round ones, so that nodes tie and fractions meet, and any others; now and then one past
# 2**53, where the columns give way to the scan.
_unit = st.sampled_from([1000, 2**20 * 1000, 8 * 2**30 * 1000])
_past = st.sampled_from([None, None, None, None, None, None, None, 1 << 53, 1 << 60])


def _amounts(unit: int, most: int) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, most).map(lambda n: n * unit), st.integers(0, most * unit))


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[NodeInfo], list[TaskInfo]]:
    unit = draw(_unit)
    nodes = []
    for i in range(draw(st.integers(1, 10))):
        allocatable = draw(st.dictionaries(st.sampled_from(RESOURCES), _amounts(unit, 64), max_size=5))
        # Free room is mostly a share of allocatable, sometimes past it or below zero (a node that
        # shrank under its pods), sometimes missing a resource the node has.
        idle = {name: amount - draw(st.integers(-2, 8)) * amount // 8 for name, amount in allocatable.items()}
        idle.update(draw(st.dictionaries(st.sampled_from(RESOURCES), _amounts(unit, 64), max_size=1)))
        nodes.append(NodeInfo(f"n{i:02d}", cast(Node, draw(st.sampled_from(KINDS))), allocatable, idle, {}))
    past = draw(_past)
    if past is not None:
        draw(st.sampled_from(nodes)).idle[draw(st.sampled_from(RESOURCES))] = past
    tasks = []
    for _ in range(draw(st.integers(1, 4))):
        tolerations = TOLERATES if draw(st.booleans()) else ()
        selector, affinity = draw(st.sampled_from(SELECTORS)), draw(st.sampled_from(AFFINITIES))
        pod = b.pod("p", cpu=None, memory=None, tolerations=tolerations, node_selector=selector, affinity=affinity)
        pod = b.typed(pod)
        request = draw(st.dictionaries(st.sampled_from(RESOURCES), _amounts(unit, 16), max_size=5))
        tasks.append(TaskInfo(ObjectKey("c1/p"), cast(Pod, pod), ObjectKey("c1/g"), request, TaskStatus.PENDING))
    return nodes, tasks


_weight = st.sampled_from([0, 1, 2, 7])
_options = st.fixed_dictionaries({
    "leastrequested.weight": _weight, "mostrequested.weight": _weight, "balancedresource.weight": _weight,
    "binpack.weight": _weight, "binpack.cpu": _weight, "binpack.memory": _weight,
    "binpack.resources": st.sampled_from(["", GPU, f"{GPU}, {FOO}"]),
    f"binpack.resources.{GPU}": _weight, f"binpack.resources.{FOO}": st.sampled_from([1, 23, 1 << 40]),
})  # fmt: skip


def _session(nodes: list[NodeInfo], options: dict[str, object], default: bool) -> Session:
    """A session with predicates, nodeorder and binpack: the default arguments, or ``options``."""
    session = Session(Snapshot({n.name: n for n in nodes}, {}, {}, [], [], {}), SchedulerConfig())
    arguments = {} if default else options
    for plugin in (predicates, nodeorder, binpack):
        plugin.build({"arguments": arguments, **arguments}).on_open(session)
    return session


@given(case=_case(), options=_options, default=st.booleans())
def test_columns_answer_as_each_node_does(
    case: tuple[list[NodeInfo], list[TaskInfo]], options: dict[str, object], default: bool
) -> None:
    """Each node's place in the fit mask and its score over columns are its own answers, to the
    last bit; where that cannot be promised the columns say None."""
    nodes, tasks = case
    session = _session(nodes, options, default)
    columns = session.columns()
    assert columns is not None
    table = NodeColumns.of_nodes(nodes).current()
    by_name = sorted(nodes, key=lambda n: n.name)
    for task in tasks:
        fits = columns.fit(task, table) if table.small else None
        if fits is not None:
            assert list(fits) == [not session.predicate(task, n) for n in by_name]
        scores = columns.score(task, Rows(table, None))
        if scores is not None and table.small:
            assert [float(s) for s in scores] == [session.node_score(task, n) for n in by_name]


@given(case=_case(), options=_options, default=st.booleans(), changes=st.lists(st.integers(0, 9), max_size=4))
def test_the_best_over_columns_is_the_scans(
    case: tuple[list[NodeInfo], list[TaskInfo]], options: dict[str, object], default: bool, changes: list[int]
) -> None:
    """The best node over columns is a scan's (best score, ties to the name), or None for the
    scan to answer, after any changes of free room and node objects (a node takes another's)."""
    nodes, tasks = case
    session = _session(nodes, options, default)
    columns = session.columns()
    assert columns is not None
    table = NodeColumns.of_nodes(nodes)
    for task, index in zip(tasks, [*changes, *[None] * len(tasks)], strict=False):
        best = columns.best(task, table)
        feasible = [(-session.node_score(task, n), n.name, n) for n in nodes if not session.predicate(task, n)]
        assert best is None or best is min(feasible, key=lambda e: e[:2])[2]
        fits = columns.fit(task, table) if table.small else None
        if feasible and fits is not None and columns.score(task, Rows(table, None)) is not None:
            assert best is not None  # the columns answered: no scan needed
        if index is not None:
            node, other = nodes[index % len(nodes)], nodes[(index + 1) % len(nodes)]
            node.idle.clear()
            node.idle.update(other.idle)
            node.node = other.node  # its labels, taints, readiness too
            table.changed(node)


def test_a_relabelled_node_is_checked_again() -> None:
    """The node checks kept for a shape with a node selector go when a node object changes: a
    node relabelled to match is chosen, and one relabelled away is not."""
    resources = {quantity.CPU: 8000, quantity.MEMORY: 8000}
    a100, v100 = KINDS[4], KINDS[5]
    nodes = [NodeInfo(name, cast(Node, v100), resources, dict(resources), {}) for name in ("n0", "n1")]
    session = _session(nodes, {}, default=True)
    columns = session.columns()
    assert columns is not None
    table = NodeColumns.of_nodes(nodes)
    pod = b.typed(b.pod("p", cpu=None, memory=None, node_selector={"gpu": "a100"}))
    task = TaskInfo(ObjectKey("c1/p"), cast(Pod, pod), ObjectKey("c1/g"), {quantity.CPU: 1000}, TaskStatus.PENDING)
    assert columns.best(task, table) is None  # no node matches: the scan tells why
    for node, kind, chosen in ((nodes[1], a100, "n1"), (nodes[0], a100, "n0"), (nodes[0], v100, "n1")):
        node.node = cast(Node, kind)
        table.changed(node)
        found = columns.best(task, table)
        assert found is not None and found.name == chosen
