"""domain.saved_state: the engine's state to a versioned JSON-able dict and back; a replay from a
snapshot plus the rest of the stream equals a replay from the start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domain import saved_state
from domain.decisions import Decision
from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig, from_mapping
from tests import builders as b
from tests.unit.domain import test_engine as streams
from tests.unit.domain.scheduler import test_held_room as held


def _engine() -> Engine:
    return Engine(SchedulerConfig(), on_markers=lambda _: False)


def _feed(engine: Engine, lines: list[str]) -> list[Decision]:
    return [d for line in lines for d in engine.handle(parse_event(line)).decisions]


def _through_json(data: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(data))
    return loaded


def _resumes_at_every_cut(config: SchedulerConfig, lines: list[str], want: list[Decision]) -> None:
    """Cut the stream (with markers) at every line: the head's snapshot, restored into a new
    engine that takes the tail, decides ``want`` in all."""
    for cut in range(len(lines) + 1):
        head = Engine(config, on_markers=lambda _: True)
        got = _feed(head, lines[:cut])
        resumed = Engine(config, on_markers=lambda _: True)
        saved_state.restore(resumed, _through_json(saved_state.take(head)))
        got += _feed(resumed, lines[cut:])
        assert got == want, cut


def _cascade_stream() -> list[str]:
    cascade = streams.CASCADES[0]
    return [*streams._setup(cascade), streams._job_terminating(), *streams._with_markers(streams._deletions(cascade))]


def _mixed_stream() -> list[str]:
    return [
        *streams._busy_stream(),
        b.added(b.queue("q", state="Closed"), cluster="c2"),
        b.added(b.node("m-0", gpu="1"), cluster="c2"),
        b.added(b.pod("p", gpu="1", uid="u1"), cluster="c2"),
        b.deleted(b.pod("gone", uid="u9"), cluster="c2"),
        b.added(b.pod("late", node_name="x", phase="Succeeded")),
        b.modified(b.pod("late", node_name="x", phase="Running", rv="2")),  # illegal: recorded
        b.marker(4),
    ]


SCENARIOS = Path(__file__).parents[2] / "scenarios"
STREAMS = {"busy gangs": streams._busy_stream, "S1 cascade": _cascade_stream, "two clusters": _mixed_stream}


@pytest.mark.parametrize("name", STREAMS)
def test_snapshot_plus_tail_equals_full_replay_at_every_cut(name: str) -> None:
    lines = STREAMS[name]()
    full = _engine()
    want = _feed(full, lines)
    want_state = saved_state.take(full)
    assert want, "the stream must decide something"
    for cut in range(len(lines) + 1):
        head = _engine()
        got = _feed(head, lines[:cut])
        resumed = _engine()
        saved_state.restore(resumed, _through_json(saved_state.take(head)))
        got += _feed(resumed, lines[cut:])
        assert got == want, cut
        assert saved_state.take(resumed) == want_state, cut


def test_a_cut_while_a_preemptor_waits_for_its_victim_resumes_exactly() -> None:
    """An eviction and the preemptor's pipelined node are state: a restore in between must keep
    both, or the victim would be evicted again and the released room taken by someone else."""
    config = from_mapping({"actions": "enqueue, allocate, preempt, backfill"})
    lines = [
        b.added(b.node("n", cpu="4")),
        b.added(b.pod_group("low", phase="Running")),
        b.added(b.pod("low-0", group="low", cpu="4", node_name="n", phase="Running", priority=1)),
        b.added(b.pod_group("high")),
        b.added(b.pod("high-0", group="high", cpu="4", priority=100)),
        b.marker(1),
        b.marker(2),
        b.deleted(b.pod("low-0", group="low", cpu="4", node_name="n", phase="Running", priority=1, rv="2")),
        b.marker(3),
    ]
    want = _feed(Engine(config, on_markers=lambda _: True), lines)
    kinds = [(d.seq, d.kind.value, d.target.name, d.reason) for d in want]
    assert kinds[:2] == [
        (5, "Evict", "low-0", "preempt: for ns/high-0"),
        (5, "PodGroupStatus", "high", "WaitingForPreemption"),
    ]
    assert (8, "Bind", "high-0", "Scheduled") in kinds
    _resumes_at_every_cut(config, lines, want)


def test_a_cut_while_a_second_pass_backs_off_resumes_exactly() -> None:
    """The second pass's failed attempts and its next time are state (S3): a restore in between
    must keep them, or the replacement would be tried, and made, earlier than in one run."""
    scenario = SCENARIOS / "kueue" / "035-s3-no-replacement-without-fail-fast-backs-off-until-a-node-fits"
    lines = (scenario / "events.jsonl").read_text().splitlines()
    want = _feed(Engine(SchedulerConfig(), on_markers=lambda _: True), lines)
    assert [(d.seq, d.reason) for d in want][-1] == (18, "NodeReplaced")
    _resumes_at_every_cut(SchedulerConfig(), lines, want)


def test_a_snapshot_round_trips() -> None:
    engine = _engine()
    _feed(engine, _mixed_stream())
    data = saved_state.take(engine)
    restored = _engine()
    saved_state.restore(restored, _through_json(data))
    assert saved_state.take(restored) == data
    assert restored.clusters["c1"].objects == engine.clusters["c1"].objects
    assert restored.clusters["c1"].machines == engine.clusters["c1"].machines
    assert restored.clusters["c1"].counters["illegal_transition"] == 1


def test_the_format_is_versioned_and_documented_by_its_keys() -> None:
    engine = _engine()
    _feed(engine, [b.added(b.node("n", cpu="500m")), b.added(b.pod("p", node_name="n", phase="Running"))])
    data = saved_state.take(engine)
    assert data["version"] == saved_state.SNAPSHOT_VERSION == 1
    cluster = data["clusters"]["c1"]
    assert set(cluster) == {
        "nextSeq",
        "clock",
        "onMarkers",
        "eventsSinceMarker",
        "counters",
        "tombstones",
        "localQueueUsage",
        "runtimeHistory",
        "objects",
    }
    node = cluster["objects"][0]
    assert node["object"]["status"]["allocatable"]["cpu"] == 500  # milli-units
    assert node["status"]["phase"] == "Ready"
    assert cluster["objects"][1]["status"]["phase"] == "Running"


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(saved_state.SnapshotError, match="snapshot version 2 is not supported"):
        saved_state.restore(_engine(), {"version": 2, "clusters": {}})


def test_a_cut_while_local_queues_carry_admission_fair_sharing_usage_resumes_exactly() -> None:
    """Each LocalQueue's sampled usage and entry penalties are state: a restore in between must
    keep them, or the next admission would go to the other LocalQueue."""
    scenario = SCENARIOS / "kueue" / "041-admission-fair-sharing-usage-decays-over-time"
    lines = (scenario / "events.jsonl").read_text().splitlines()
    afs = {"usageHalfLifeTime": "10m", "usageSamplingInterval": "5m"}
    config = from_mapping({"kueue": {"admissionFairSharing": afs}})
    want = _feed(Engine(config, on_markers=lambda _: True), lines)
    assert [(d.seq, d.target.name) for d in want if d.reason == "QuotaReserved"] == [
        (8, "b-1"),
        (12, "b-2"),
        (15, "a-1"),
    ]
    _resumes_at_every_cut(config, lines, want)


def test_a_cut_while_runtimes_wait_for_their_marker_resumes_exactly() -> None:
    """The runtime history, and the pods seen ending whose runtimes the next marker settles, are
    state: a restore in between must keep them, or the small job would not be lent held room."""
    _, events, decisions = held.run(held.HISTORY, held.HISTORY_CONFIG)
    lines = events.decode().splitlines()
    want = _feed(Engine(held.HISTORY_CONFIG, on_markers=lambda _: True), lines)
    assert sum(d.target.name == "c-0" and d.kind.value == "Bind" for d in want) == 1
    assert len(want) == len(decisions.splitlines())
    _resumes_at_every_cut(held.HISTORY_CONFIG, lines, want)
