"""domain.kueue.deadlines through Engine.next_deadline: the instant at which a Kueue cycle acts
with no new event (PodsReady timeout, requeue backoff, second-pass backoff), read after every
marker of the scenarios that pin those steps down; and a marker at that instant acts while one
just before it does not."""

from __future__ import annotations

import json
import tomllib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from domain.engine import Engine
from domain.events import ScheduleMarker, parse_event
from domain.scheduler.config import SchedulerConfig, from_mapping
from tests import builders as b

KUEUE = "kueue.x-k8s.io/v1beta1"
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


def test_the_timer_wants_a_marker_once_a_deadline_is_due_though_nothing_waits() -> None:
    """The worker's timer asks ``Engine.wants_cycle`` and then ``Engine.idle``. An admitted
    workload whose pods are not ready waits for nothing of ours (its pods are the Job
    controller's), so only its PodsReady deadline can bring the marker that evicts it: before
    60 s the timer wants none (and one would be idle), from 60 s on it wants one, not idle, and
    that marker evicts."""
    engine = Engine(_config(PODS_READY), on_markers=lambda _: True)
    for line in (PODS_READY / "events.jsonl").read_text().splitlines()[:5]:  # the objects, the marker at 0
        engine.handle(parse_event(line))
    assert engine.handle(parse_event(b.marker(1))).decisions == []
    assert not engine.state("c1").wants_cycle()
    assert not engine.wants_cycle("c1", _at(30)) and engine.idle("c1", _at(30))
    assert engine.wants_cycle("c1", _at(60)) and not engine.idle("c1", _at(60))
    decided = engine.handle(parse_event(b.marker(60))).decisions
    assert [d.reason for d in decided] == ["PodsReadyTimeout"] * 2


def _afs_strict_fifo() -> list[str]:
    """A StrictFIFO ClusterQueue of 4 cpu under Admission Fair Sharing: lq-a (no usage) runs a
    2-cpu workload and heads the queue with a 4-cpu one that cannot fit; lq-b's status says it
    consumed 8 cpu, and its 2-cpu workload waits behind."""

    def workload(name: str, ns: str, cpu: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
        container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
        pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}
        obj = {
            "apiVersion": KUEUE,
            "kind": "Workload",
            "metadata": {**b.meta(name, ns), "creationTimestamp": b.iso(-3600)},
            "spec": {"queueName": f"lq-{ns}", "podSets": [pod_set]},
        }
        return {**obj, "status": status} if status else obj

    assignment = {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 1}
    admitted = {
        "conditions": [{"type": t, "status": "True", "reason": t} for t in ("QuotaReserved", "Admitted")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [assignment]},
    }
    flavor = {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}
    usage = {"consumedResources": {"cpu": "8"}, "lastUpdate": b.iso(0)}
    queue_spec = {
        "queueingStrategy": "StrictFIFO",
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}],
        "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
    }
    objects = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": b.meta("default"), "spec": {}},
        {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": b.meta("cq"), "spec": queue_spec},
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": b.meta("lq-a", "a"), "spec": {"clusterQueue": "cq"}},
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": b.meta("lq-b", "b"),
            "spec": {"clusterQueue": "cq"},
            "status": {"fairSharing": {"admissionFairSharingStatus": usage}},
        },
        workload("a-run", "a", "2", admitted),
        workload("a-big", "a", "4"),
        workload("b-small", "b", "2"),
    ]
    return [b.added(obj) for obj in objects]


def test_under_admission_fair_sharing_a_sample_is_a_deadline_while_workloads_wait() -> None:
    """The usages move only when sampled (every 5 min here), and they order the waiting
    workloads: with no event at all, lq-b's workload heads the StrictFIFO queue once lq-b's
    usage has decayed below lq-a's, and is admitted. A timer (every 5 s) that writes no marker
    ``Engine.idle`` calls idle skips most of them and still admits it at the same instant as
    one that writes every marker, with the same decisions throughout."""
    afs = {"usageHalfLifeTime": "10m", "usageSamplingInterval": "5m"}
    config = from_mapping({"kueue": {"admissionFairSharing": afs}})

    def play(skip: bool) -> tuple[list[tuple[int, str, str]], int]:
        engine = Engine(config, on_markers=lambda _: True)
        for line in _afs_strict_fifo():
            engine.handle(parse_event(line))
        decided: list[tuple[int, str, str]] = []
        skipped = 0
        for second in range(1, 2400, 5):
            if skip and engine.idle("c1", _at(second)):
                skipped += 1
                continue
            processed = engine.handle(parse_event(b.marker(second)))
            decided += [(second, d.target.name, d.reason) for d in processed.decisions]
        return decided, skipped

    every, _ = play(skip=False)
    timer, skipped = play(skip=True)
    assert timer == every
    assert [(name, reason) for _, name, reason in every if name == "b-small"][-1:] == [("b-small", "QuotaReserved")]
    assert skipped > 400


def test_a_sample_is_a_deadline_only_where_it_can_matter() -> None:
    """A LocalQueue's next sample is a deadline while it holds admitted workloads (the sample adds
    what they hold then) or while workloads wait in it and in another LocalQueue of its
    ClusterQueue (the order among them); not for workloads waiting in one LocalQueue alone."""
    afs = {"usageHalfLifeTime": "10m", "usageSamplingInterval": "5m"}
    config = from_mapping({"kueue": {"admissionFairSharing": afs}})
    *objects, a_run, a_big, b_small = _afs_strict_fifo()

    def deadline(*workloads: str) -> datetime | None:
        engine = Engine(config, on_markers=lambda _: True)
        for line in [*objects, *workloads, b.marker(1), b.marker(2)]:
            engine.handle(parse_event(line))
        return engine.next_deadline("c1")

    def huge(workload: str) -> str:  # more than the ClusterQueue's quota
        return workload.replace('"cpu": "4"', '"cpu": "8"').replace('"cpu": "2"', '"cpu": "8"')

    huge_a, huge_b = huge(a_big), huge(b_small)
    assert deadline(a_run) == _at(301)  # lq-a's first sample at 1 s, the next 5 min later
    assert deadline(huge_a) is None  # one LocalQueue waiting, nothing admitted
    assert deadline(huge_a, huge_b) == _at(300)  # two waiting; lq-b's status says it was sampled at 0
