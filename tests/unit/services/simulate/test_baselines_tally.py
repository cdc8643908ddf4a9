"""The baselines' kept tallies (how many tasks of a shape each node takes) against a count made
afresh, after any run of starts and ends: a start or an end moves its own shape's tally by one
copy a task, without counting; every other shape's tally reads the nodes that changed from the
log. A node at ``MOST`` copies is counted again rather than moved."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.quantity import MILLI, parse_milli
from services.simulate.baselines import Placement, _Cluster, _Tally
from services.traces.model import Job, Node

_ROOMS = [
    {"cpu": "4", "memory": "8Gi"},
    {"cpu": "2", "memory": "4Gi", "pods": "3"},
    {"cpu": "8", "memory": "16Gi"},
    {"cpu": "2000000", "memory": "8Ei", "pods": "2000000000"},  # more than MOST copies of 1m and 1 byte
]
_JOBS = [
    Job(f"j{i}", 0, 1, tasks=tasks, requests={"cpu": cpu, "memory": memory}, node_affinity=affinity)
    for i, (tasks, cpu, memory, affinity) in enumerate(
        [
            (1, "1", "1Gi", {}),
            (2, "1", "1Gi", {}),
            (3, "1m", "1", {}),
            (1, "1m", "1", {"role": ("b",)}),
            (2, "2", "2Gi", {"role": ("a",)}),
            (1, "500m", "6Gi", {}),
        ]
    )
]


def _request(job: Job) -> dict[str, int]:
    return {"pods": MILLI, **{name: parse_milli(amount) for name, amount in job.requests.items()}}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(range(len(_ROOMS))), st.sampled_from("ab")), min_size=1, max_size=5),
    st.lists(st.sampled_from(range(len(_JOBS))), max_size=40),
)
def test_a_kept_tally_is_the_count_made_afresh_after_any_starts_and_ends(
    nodes: list[tuple[int, str]], steps: list[int]
) -> None:
    cluster = _Cluster.of(tuple(Node(f"n{i}", _ROOMS[room], {"role": role}) for i, (room, role) in enumerate(nodes)))
    running: dict[str, Placement] = {}
    for step in steps:
        job = _JOBS[step]
        request = _request(job)
        if job.id in running:  # it ends
            cluster.release(job, running.pop(job.id), request)
        elif (placement := cluster.place(job, request)) is not None:
            running[job.id] = placement
        for other in _JOBS:
            kept = cluster.tally(other, _request(other))
            afresh = _Tally.of(_request(other), cluster.free, cluster.allowed(other))
            assert (kept.copies, kept.total) == (afresh.copies, afresh.total)
