"""domain.scheduler.snapshot: the jobs a snapshot takes from the job table kept between cycles
(and the sums and job sets the table keeps), and its nodes from the node table and loads kept
between cycles, are those of a snapshot built from scratch, after every event of every
scenario and of a synthetic stream (with its cycles' binds, pipelines, evictions and statuses
folded in); the pods' facts kept between cycles then hold the state's own pod objects alone.
And the memos kept between cycles (those tables, node rankings, the PodGroups whose status is
settled) decide what a cycle with none of them decides. What held room reads of a kept task
for its runtime (read once per task) is what it reads of a new one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from domain.cache import ClusterCache
from domain.engine import Engine
from domain.events import InvalidEvent, ScheduleMarker, parse_event
from domain.scheduler import runtimes, snapshot
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from tests import builders as b
from tests.builders import Wire
from tests.scenarios.test_scenarios import discover, load
from tests.streams import Shape, synthetic_stream


def _view(state: ClusterState, config: SchedulerConfig, cache: ClusterCache) -> list[object]:
    view = snapshot.build(state, config, cache.volcano, cache.changes)
    nodes = [
        (name, node.node, node.allocatable, node.labels, list(node.idle.items())) for name, node in view.nodes.items()
    ]
    return nodes + [
        (
            job.key, id(job.group), job.queue, job.min_member, job.min_task_member, job.min_resources, job.created,
            job.phase, list(job.allocated.items()), job.topology, job.terminating, job.priority, job.min_sub_groups,
            [(s.name, [t.key for t in s.tasks]) for s in job.subgroups],
            [(t.key, id(t.pod), t.job, t.request, t.status, t.node, t.priority, t.role, runtimes.read(view, t))
             for t in job.tasks],
        )
        for job in view.jobs.values()
    ] + [(t.key, t.status, t.node) for t in view.pipelined] + [
        (name, queue.allocated, queue.asked, sorted(view.queued.get(name, ()))) for name, queue in view.queues.items()
    ] + [view.waiting_keys(), view.best_effort, view.unadmitted, view.reserving, sorted(view.rejected)]  # fmt: skip


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
        cache = engine.cache(state)
        before = cache.volcano.jobs
        fresh = dataclasses.replace(state)
        assert _view(state, config, cache) == _view(fresh, config, ClusterCache(fresh))
        kept_pods = cache.volcano.facts.pods.items()  # the pods' facts hold no pod object gone or replaced
        assert all(state.pods().get(key) is pod for key, (pod, _) in kept_pods)
        kept += before is not None and cache.volcano.jobs is before
    return kept


@pytest.mark.parametrize("path", discover(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_snapshot_is_built_snapshot_in_scenarios(path: Path) -> None:
    scenario = load(path)
    _check(scenario.events.read_text().splitlines(), scenario.config)


def test_kept_snapshot_is_built_snapshot_in_a_synthetic_stream() -> None:
    lines = synthetic_stream("c1", Shape(nodes=6, gangs=40, marker_every=5))
    assert _check(lines, SchedulerConfig()) > 100


def _decisions(lines: list[str], config: SchedulerConfig, *, fresh: bool, held: bool = False) -> list[object]:
    """Every decision of the stream; with ``fresh``, each cycle starts without the memos; with
    ``held``, each marker's decisions are followed by the room held in its cycle."""
    engine = Engine(config, on_markers=lambda _: True)
    out: list[object] = []
    for line in lines:
        try:
            event = parse_event(line)
        except InvalidEvent:
            continue
        if fresh:
            engine.caches.pop(event.cluster, None)
        out.extend((d.kind, d.target, d.reason, d.fields) for d in engine.handle(event).decisions)
        if held and isinstance(event, ScheduleMarker):
            out.append(engine.state(event.cluster).held)
    return out


@pytest.mark.parametrize("path", discover(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_memos_decide_as_fresh_ones_in_scenarios(path: Path) -> None:
    scenario = load(path)
    lines = scenario.events.read_text().splitlines()
    assert _decisions(lines, scenario.config, fresh=False) == _decisions(lines, scenario.config, fresh=True)


def test_kept_memos_decide_as_fresh_ones_in_a_synthetic_stream() -> None:
    lines = synthetic_stream("c1", Shape(nodes=6, gangs=60, marker_every=3))
    kept = _decisions(lines, SchedulerConfig(), fresh=False)
    assert len(kept) > 200
    assert kept == _decisions(lines, SchedulerConfig(), fresh=True)


def test_a_kept_task_reads_its_runtime_as_a_new_one() -> None:
    """Held room reads a running task's estimate, user and start once, while the job is kept: a
    PodGroup's or a pod's estimate written again and a pod's user label changed are read anew."""
    config = dataclasses.replace(SchedulerConfig(), runtime_history_label="team")

    def group(estimate: str, rv: str) -> Wire:
        wire = b.pod_group("g", min_member=2, rv=rv, phase="Running")
        wire["metadata"]["annotations"] = {runtimes.ESTIMATE: estimate}
        return wire

    def pod(name: str, *, rv: str = "1", estimate: str | None = None, team: str = "a") -> Wire:
        wire = b.pod(name, group="g", rv=rv, node_name="n", phase="Running")
        wire["metadata"]["labels"] = {"team": team}
        if estimate is not None:
            wire["metadata"]["annotations"][runtimes.ESTIMATE] = estimate
        wire["status"]["startTime"] = b.iso(5)
        return wire

    lines = [
        b.added(b.node("n", cpu="4", memory="8Gi")), b.added(group("100s", "1")),
        b.added(pod("g-0")), b.added(pod("g-1")), b.marker(6), b.marker(7),
        b.modified(group("50s", "2")), b.marker(8),
        b.modified(pod("g-0", rv="2", estimate="20s")), b.marker(9),
        b.modified(pod("g-1", rv="2", team="b")), b.marker(10),
    ]  # fmt: skip
    assert _check(lines, config) > 3
