"""Node scores as upstream computes them (issue 12 items 7 and 17): Volcano's binpack_test.go
TestNode score tables, and kube-scheduler's integer resource scores in nodeorder."""

from __future__ import annotations

from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import quantity
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey
from domain.scheduler.infos import TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.plugins import binpack, nodeorder

GPU, FOO = "nvidia.com/gpu", "example.com/foo"


def _resources(cpu: str, memory: str, **extra: str) -> dict[str, int]:
    out = {quantity.CPU: quantity.parse_milli(cpu), quantity.MEMORY: quantity.parse_milli(memory)}
    out.update({name: quantity.parse_milli(amount) for name, amount in extra.items()})
    return out


def _task(request: dict[str, int]) -> TaskInfo:
    return TaskInfo(
        ObjectKey("c1/p"), cast(Pod, None), ObjectKey("c1/pg1"), request, TaskStatus.PENDING
    )  # scores never look at the pod


def _node(name: str, allocatable: dict[str, int], used: dict[str, int] | None = None) -> NodeInfo:
    idle = {k: v - (used or {}).get(k, 0) for k, v in allocatable.items()}
    return NodeInfo(name, cast(Node, None), allocatable, idle, {})  # nor at the node object


# binpack_test.go TestNode: p1 (1 cpu, 1Gi) already sits on n1 and p2 (1.5 cpu) on n3, so they count as used.
N1 = _node("n1", _resources("2", "4Gi"), _resources("1", "1Gi"))
N2 = _node("n2", _resources("4", "16Gi", **{GPU: "4"}))
N3 = _node("n3", _resources("2", "4Gi", **{FOO: "16"}), _resources("1.5", "0Gi"))
P1 = _resources("1", "1Gi")
P2 = _resources("1.5", "0Gi")
P3 = _resources("2", "10Gi", **{GPU: "2"})
P4 = _resources("3", "4Gi", **{FOO: "3"})
FIRST_ARGUMENTS = {
    "binpack.weight": 10, "binpack.cpu": 2, "binpack.memory": 3, "binpack.resources": "nvidia.com/gpu, example.com/foo",
    "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": 8,
}  # fmt: skip


SECOND_ARGUMENTS = {
    "binpack.weight": 1, "binpack.cpu": 1, "binpack.memory": 1, "binpack.resources": "nvidia.com/gpu",
    "binpack.resources.nvidia.com/gpu": 23,
}  # fmt: skip
CASES = [
    (FIRST_ARGUMENTS, 10, P1, (700, 137.5, 0)),
    (FIRST_ARGUMENTS, 10, P2, (0, 375, 0)),
    (FIRST_ARGUMENTS, 10, P3, (0, 531.25, 0)),
    (FIRST_ARGUMENTS, 10, P4, (0, 173.076923076, 0)),
    (SECOND_ARGUMENTS, 1, P1, (75, 15.625, 0)),
    (SECOND_ARGUMENTS, 1, P2, (0, 37.5, 0)),
    (SECOND_ARGUMENTS, 1, P3, (0, 50.5, 0)),
    (SECOND_ARGUMENTS, 1, P4, (0, 50, 0)),
]


@pytest.mark.parametrize(
    ("arguments", "weight", "request_", "want"),
    CASES,
    ids=[f"case{i // 4 + 1}-p{i % 4 + 1}" for i in range(len(CASES))],
)
def test_binpack_scores_equal_upstreams_table(
    arguments: dict[str, object], weight: int, request_: dict[str, int], want: tuple[float, float, float]
) -> None:
    weights = binpack.weights_of({"arguments": arguments})
    got = [binpack.score(_task(request_), node, weights, weight) for node in (N1, N2, N3)]
    assert got == pytest.approx(want)


def test_balanced_allocation_is_one_minus_the_standard_deviation_truncated() -> None:
    # Fractions 1/4, 1/2 and (GPU asked) 1/4: mean 1/3, std 0.1179 -> int(88.2) = 88.
    node = _node("n", _resources("4", "4Gi", **{GPU: "4"}))
    task = _task(_resources("1", "2Gi", **{GPU: "1"}))
    assert nodeorder.balanced(task, node) == 88
    # Without a GPU request the GPU is left out: |1/4 - 1/2| / 2 = 0.125 -> 87.
    assert nodeorder.balanced(_task(_resources("1", "2Gi")), node) == 87


def test_least_and_most_requested_are_kube_schedulers_integers() -> None:
    node = _node("n", _resources("3", "3Gi"))
    task = _task(_resources("1", "1Gi"))
    # (3 - 1) * 100 // 3 = 66 for each; kube-scheduler's integer division, not 66.67.
    assert nodeorder.least_requested(task, node) == 66
    assert nodeorder.most_requested(task, node) == 33


_amount = st.integers(min_value=0, max_value=10**7)


@given(
    request=st.dictionaries(st.sampled_from([quantity.CPU, quantity.MEMORY, GPU]), _amount, max_size=3),
    allocatable=st.dictionaries(st.sampled_from([quantity.CPU, quantity.MEMORY, GPU]), _amount, max_size=3),
    used=st.dictionaries(st.sampled_from([quantity.CPU, quantity.MEMORY, GPU]), _amount, max_size=3),
)
def test_the_default_scores_in_one_pass_equal_their_sum(
    request: dict[str, int], allocatable: dict[str, int], used: dict[str, int]
) -> None:
    task, node = _task(request), _node("n", allocatable, used)
    expected = nodeorder.least_requested(task, node) + nodeorder.balanced(task, node)
    assert nodeorder.least_requested_balanced(task, node) == expected
