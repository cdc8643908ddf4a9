"""domain.scheduler.snapshot: the jobs a snapshot copies from the job table kept between cycles,
and its nodes from the node table and loads kept between cycles, are those of a snapshot
built from scratch, after every event of every scenario and of a synthetic stream (with its
cycles' binds, pipelines, evictions and statuses folded in)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from domain.engine import Engine
from domain.events import InvalidEvent, parse_event
from domain.scheduler import snapshot
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from tests.scenarios.test_scenarios import discover, load
from tests.streams import Shape, synthetic_stream


def _view(state: ClusterState, config: SchedulerConfig) -> list[object]:
    view = snapshot.build(state, config)
    nodes = [
        (name, node.node, node.allocatable, node.labels, list(node.idle.items())) for name, node in view.nodes.items()
    ]
    return nodes + [
        (
            job.key, id(job.group), job.queue, job.min_member, job.min_task_member, job.min_resources, job.created,
            job.phase, job.allocated, job.topology, job.terminating, job.priority, job.min_sub_groups,
            [(s.name, [t.key for t in s.tasks]) for s in job.subgroups],
            [(t.key, id(t.pod), t.job, t.request, t.status, t.node, t.priority, t.role) for t in job.tasks],
        )
        for job in view.jobs.values()
    ] + [(t.key, t.status, t.node) for t in view.pipelined]  # fmt: skip


def _check(lines: list[str], config: SchedulerConfig) -> int:
    """Compare after every line; the number of times the table was kept."""
    engine = Engine(config, on_markers=lambda _: True)
    kept = 0
    for line in lines:
        try:
            event = parse_event(line)
        except InvalidEvent:
            continue
        engine.handle(event)
        state = engine.state(event.cluster)
        before = state.derived.get("jobs")
        fresh = dataclasses.replace(state, derived={}, changed={})
        assert _view(state, config) == _view(fresh, config)
        kept += before is not None and state.derived.get("jobs") is before
    return kept


@pytest.mark.parametrize("path", discover(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_snapshot_is_built_snapshot_in_scenarios(path: Path) -> None:
    scenario = load(path)
    _check(scenario.events.read_text().splitlines(), scenario.config)


def test_kept_snapshot_is_built_snapshot_in_a_synthetic_stream() -> None:
    lines = synthetic_stream("c1", Shape(nodes=6, gangs=40, marker_every=5))
    assert _check(lines, SchedulerConfig()) > 100
