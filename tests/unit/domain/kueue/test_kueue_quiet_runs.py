"""A LocalQueue's quiet runs (``domain.kueue.workloads.Quiet``): the next walk passes over a run
without reading its workloads, so a run that survives the queue's changes must cover exactly the
workloads it covered when the walk found it, none of them changed since."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from domain.kueue.workloads import Quiet, WorkloadInfo, _Queued


@dataclass(eq=False)
class _Workload:
    """What the queue reads of a workload: its key and its order key."""

    key: str
    order: tuple[int, int, str]


def _queue(orders: list[tuple[int, int]]) -> _Queued:
    queued = _Queued()
    for n, (priority, created) in enumerate(orders):
        queued.add(cast(WorkloadInfo, _Workload(f"w{n}", (priority, created, f"w{n}"))))
    return queued


def _covered(queued: _Queued, run: Quiet) -> list[Any]:
    return [queued.order[i][1] for i in range(run.start, run.end)]


orders = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50)), min_size=1, max_size=30)
changes = st.lists(st.tuples(st.sampled_from(["add", "remove", "changed"]), st.integers(0, 3), st.integers(0, 60)))


@given(orders, st.data(), changes)
def test_a_quiet_run_covers_the_workloads_it_was_found_on_or_is_dropped(
    initial: list[tuple[int, int]], data: st.DataObject, steps: list[tuple[str, int, int]]
) -> None:
    queued = _queue(initial)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(queued.order)), max_size=6)))
    runs = [Quiet(a, b, {}) for a, b in itertools.pairwise(cuts) if a < b][::2]
    queued.quiet = {run.start: run for run in runs}
    found = {id(run): _covered(queued, run) for run in runs}
    touched: set[int] = set()  # the workloads that left or changed
    for n, (step, priority, created) in enumerate(steps):
        if step == "add":
            queued.add(cast(WorkloadInfo, _Workload(f"new{n}", (priority, created, f"new{n}"))))
        elif queued.order:
            info = queued.order[(priority * 61 + created) % len(queued.order)][1]
            touched.add(id(info))
            (queued.remove if step == "remove" else queued.changed)(info)
        for start, run in queued.quiet.items():
            assert start == run.start
            assert _covered(queued, run) == found[id(run)]
            assert not touched & {id(info) for info in found[id(run)]}
