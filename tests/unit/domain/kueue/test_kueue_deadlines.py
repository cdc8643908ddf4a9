"""domain.kueue.deadlines through Engine.next_deadline: the instant at which a Kueue cycle acts
with no new event (PodsReady timeout, requeue backoff, second-pass backoff), read after every
marker of the scenarios that pin those steps down; and a marker at that instant acts while one
just before it does not."""

from __future__ import annotations

import json
import tomllib
from datetime import datetime, timedelta
from pathlib import Path

from domain.engine import Engine
from domain.events import ScheduleMarker, parse_event
from domain.scheduler.config import SchedulerConfig, from_mapping
from tests import builders as b

SCENARIOS = Path(__file__).parents[3] / "scenarios" / "kueue"
PODS_READY = SCENARIOS / "025-pods-ready-timeout-requeues-with-backoff"
SECOND_PASS = SCENARIOS / "035-s3-no-replacement-without-fail-fast-backs-off-until-a-node-fits"


def _config(scenario: Path) -> SchedulerConfig:
    return from_mapping(tomllib.loads((scenario / "scenario.toml").read_text()).get("config"))


def _at(seconds: float) -> datetime:
    return datetime.fromisoformat(b.iso(seconds))


def _deadlines(scenario: Path) -> list[tuple[datetime, datetime | None]]:
    """(marker time, next deadline after that marker's cycle) for each marker of the scenario."""
    engine = Engine(_config(scenario), on_markers=lambda _: True)
    out: list[tuple[datetime, datetime | None]] = []
    for line in (scenario / "events.jsonl").read_text().splitlines():
        event = parse_event(line)
        engine.handle(event)
        if isinstance(event, ScheduleMarker):
            out.append((event.time, engine.next_deadline("c1")))
    return out


def test_pods_ready_timeout_then_requeue_backoff_then_timeout_again() -> None:
    # Admitted at 0 with a 1m timeout: evicted at the first cycle from 60 on (01:01); released at
    # 01:40 with requeueAt 10 s later; admitted again at 02:02, so the next timeout is 03:02.
    # An evicted workload waits for nothing timed (its quota goes once its pods are gone).
    assert _deadlines(PODS_READY) == [
        (_at(0), _at(60)),
        (_at(30), _at(60)),
        (_at(61), None),
        (_at(100), _at(110)),
        (_at(122), _at(182)),
    ]


def test_second_pass_backoff() -> None:
    # The failed node is listed at 00:02 (the second pass comes with the next cycle, timed or
    # not); the re-placement fails at 00:03 (next try 2 s later) and 00:05 (4 s later), and
    # succeeds at 00:09.
    assert _deadlines(SECOND_PASS) == [
        (_at(1), None),
        (_at(2), None),
        (_at(3), _at(5)),
        (_at(4), _at(5)),
        (_at(5), _at(9)),
        (_at(6), _at(9)),
        (_at(8), _at(9)),
        (_at(9), None),
    ]


def test_a_marker_at_the_deadline_acts_and_one_just_before_does_not() -> None:
    engine = Engine(_config(PODS_READY), on_markers=lambda _: True)
    setup = (PODS_READY / "events.jsonl").read_text().splitlines()[:5]  # the objects, the marker at 0
    for line in setup:
        engine.handle(parse_event(line))
    acted: list[str] = []
    for _ in range(4):  # timeout, backoff, timeout, backoff
        deadline = engine.next_deadline("c1")
        assert deadline is not None
        before = (deadline - timedelta(microseconds=1) - b.T0).total_seconds()
        assert engine.handle(parse_event(b.marker(before))).decisions == []
        decided = engine.handle(parse_event(b.marker((deadline - b.T0).total_seconds()))).decisions
        acted.append("/".join(d.reason for d in decided))
        # the step a decision makes due at the next cycle, at any time: the release of the quota
        engine.handle(parse_event(b.marker((deadline - b.T0).total_seconds() + 1)))
    assert acted == ["PodsReadyTimeout/PodsReadyTimeout", "QuotaReserved"] * 2


def test_no_deadline_without_workloads_or_once_the_pods_are_ready() -> None:
    assert Engine(SchedulerConfig()).next_deadline("c1") is None  # a cluster it has not seen
    engine = Engine(_config(PODS_READY), on_markers=lambda _: True)
    lines = (PODS_READY / "events.jsonl").read_text().splitlines()
    for line in lines[:5]:
        engine.handle(parse_event(line))
    assert engine.next_deadline("c1") == _at(60)
    # The Job controller writes PodsReady=True: no timeout is running any more.
    event = json.loads(lines[3])
    workload = event["object"]
    assert workload["kind"] == "Workload"
    conditions = [{"type": t, "status": "True", "reason": t, "message": ""} for t in ("QuotaReserved", "Admitted")]
    conditions.append({"type": "PodsReady", "status": "True", "reason": "PodsReady", "message": ""})
    workload["metadata"]["resourceVersion"] = "105"
    workload["status"] = {"conditions": conditions, "admission": {"clusterQueue": "cq", "podSetAssignments": []}}
    engine.handle(parse_event(json.dumps({**event, "type": "MODIFIED"})))
    assert engine.next_deadline("c1") is None
