"""sla and reservation: a gang past its waiting bound goes first and holds the room it waits
for, so a small job that arrives later cannot take it; closed-loop on traces small enough to
work out by hand, and the replay of each run gives its decisions again."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from domain.durations import positive_seconds
from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.meta import ObjectKey, ObjectMeta
from domain.objects.volcano import PodGroup
from domain.scheduler.config import DEFAULT_TIERS, SchedulerConfig, from_mapping
from domain.scheduler.infos import JobInfo
from domain.scheduler.plugins.sla import waiting_time
from services.record_files import read_records
from services.replay import replay_records
from services.simulate.loop import run_closed_loop
from services.simulate.outcome import Outcome
from services.traces.model import Job, Trace
from tests.sim_traces import THREE_NODES, without_position

CPU4 = {"cpu": "4"}
# Two nodes. a holds one until 100; the gang b (both nodes) arrives at 10; c (one node, 500 s)
# at 20, d (one node, 10 s) at 150.
GANG_BEHIND_SMALL = Trace(
    (
        Job("a", 0, 100, requests=CPU4),
        Job("b", 10, 100, tasks=2, requests=CPU4),
        Job("c", 20, 500, requests=CPU4),
        Job("d", 150, 10, requests=CPU4),
    ),
    THREE_NODES[:2],
)


def with_plugin(name: str, arguments: dict[str, str]) -> SchedulerConfig:
    first, second = ([{"name": p} for p in tier] for tier in DEFAULT_TIERS)
    return from_mapping({"tiers": [{"plugins": [*first, {"name": name, "arguments": arguments}]}, {"plugins": second}]})


def run(trace: Trace, config: SchedulerConfig) -> tuple[Outcome, bytes, bytes]:
    events, decisions = io.BytesIO(), io.BytesIO()
    cluster = run_closed_loop(trace, trace.nodes, config, events, decisions)
    return cluster.outcome, events.getvalue(), decisions.getvalue()


def starts(outcome: Outcome) -> dict[str, float | None]:
    return {job_id: record.start for job_id, record in outcome.jobs.items()}


def test_without_a_bound_the_small_job_takes_the_gangs_room() -> None:
    # c starts on the free node at the marker of 21; b needs both nodes, free only once c ends at 521.
    outcome, _, _ = run(GANG_BEHIND_SMALL, SchedulerConfig())
    assert starts(outcome) == {"a": 1, "b": 522, "c": 21, "d": 151}


@pytest.mark.parametrize(
    "config",
    [with_plugin("sla", {"sla-waiting-time": "5s"}), with_plugin("reservation", {"reservation-waiting-time": "5s"})],
    ids=["sla", "reservation"],
)
def test_a_gang_past_its_bound_holds_its_room(config: SchedulerConfig) -> None:
    # At 21 b (created at 10) is past 5 s: it goes first, does not fit, and holds the free node;
    # c waits. a ends at 101 (it started at 1): b starts at 102, then c and d once b ends at 202.
    outcome, _, _ = run(GANG_BEHIND_SMALL, config)
    assert starts(outcome) == {"a": 1, "b": 102, "c": 203, "d": 203}


def test_a_run_with_held_room_replays_to_the_same_decisions(tmp_path: Path) -> None:
    config = with_plugin("reservation", {"reservation-waiting-time": "5s"})
    _, events, decisions = run(GANG_BEHIND_SMALL, config)
    stream = tmp_path / "events.jsonl"
    stream.write_bytes(events)
    out = io.BytesIO()
    replay_records(read_records([str(stream)]), out, config=config)
    assert without_position(out.getvalue()) == without_position(decisions)


def test_before_its_bound_a_gang_holds_nothing() -> None:
    outcome, _, _ = run(GANG_BEHIND_SMALL, with_plugin("sla", {"sla-waiting-time": "1h"}))
    assert starts(outcome) == {"a": 1, "b": 522, "c": 21, "d": 151}


@pytest.mark.parametrize(
    ("text", "want"),
    [("1h2m3s", 3723.0), ("1.5h", 5400.0), ("90s", 90.0), ("250ms", 0.25), ("0s", None), ("ten", None), ("", None),
     (5, None), ("1h ", None)],
)  # fmt: skip
def test_positive_go_durations(text: object, want: float | None) -> None:
    assert positive_seconds(text) == want


def test_a_jobs_own_annotation_wins_over_the_argument() -> None:
    def job(annotation: str) -> JobInfo:
        meta = ObjectMeta(name="g", namespace="ns", annotations={"sla-waiting-time": annotation})
        group = PodGroup(api_version="scheduling.volcano.sh/v1beta1", kind="PodGroup", metadata=meta)
        return JobInfo(ObjectKey("ns/g"), group, "default", 1, {}, None, 0.0, PodGroupPhase.PENDING)

    assert waiting_time(job("2m"), 3600.0) == 120.0
    assert waiting_time(job("soon"), 3600.0) == 3600.0  # not a duration: ignored, as upstream
    assert waiting_time(job("soon"), None) is None
