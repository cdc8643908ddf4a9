"""Kueue Workloads in the closed-loop simulator: admission creates the pods, our scheduler binds
them, Finished and the deletion follow the last pod, an Evict suspends the job (pods deleted)
and the requeued workload starts over; PodsReady timeouts and backoffs get their own markers;
the quota objects; the Kueue-shape trace."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from domain.scheduler.config import SchedulerConfig, from_mapping
from services.record_files import read_records
from services.replay import replay_records
from services.simulate import kueue_quota, metrics, share
from services.simulate.baselines import fcfs
from services.simulate.loop import run_closed_loop
from services.simulate.outcome import Outcome
from services.traces import kueue_shape
from services.traces.model import Trace, TraceError
from tests.sim_traces import (
    KUEUE,
    PODS_READY,
    PODS_READY_CONFIG,
    THREE_NODES,
    marker_times,
    stream_with_every_marker,
    without_position,
)

WAIT_FOR_PODS_READY = from_mapping(PODS_READY_CONFIG)


def closed_loop(
    trace: Trace,
    objects: list[dict[str, Any]] | None = None,
    period: float = 1.0,
    config: SchedulerConfig | None = None,
) -> tuple[Outcome, bytes, bytes]:
    events, decisions = io.BytesIO(), io.BytesIO()
    config = config or SchedulerConfig()
    cluster = run_closed_loop(trace, trace.nodes, config, events, decisions, period=period, kueue_objects=objects)
    return cluster.outcome, events.getvalue(), decisions.getvalue()


def replayed(events: bytes, tmp_path: Path, config: SchedulerConfig | None = None) -> bytes:
    path = tmp_path / "events.jsonl"
    path.write_bytes(events)
    out = io.BytesIO()
    replay_records(read_records([str(path)]), out, config=config or SchedulerConfig())
    return out.getvalue()


def _changes(events: bytes) -> list[tuple[str, str, str]]:
    """(type, kind, name) of every watch event of a Pod or Workload."""
    out = []
    for line in events.splitlines():
        event = json.loads(line)
        if event["type"] != "SCHEDULE" and event["object"]["kind"] in ("Pod", "Workload"):
            out.append((event["type"], event["object"]["kind"], event["object"]["metadata"]["name"]))
    return out


def test_admission_runs_the_pods_and_preemption_starts_the_job_over() -> None:
    # Markers every second. low arrives at 0, is admitted at 1 (its pods are created then) and
    # bound at 2; mid (at 1) is admitted at 2 and bound at 3. high (at 5) finds 6 of 8 cpu
    # used: at 6 mid is evicted (its pod deleted), at 7 mid's quota is released and high
    # admitted, at 8 high is bound on mid's node; high ends at 28, mid is admitted again at 29,
    # bound at 30 and ends at 40 (its first start, 3, is its start).
    outcome, events, decisions = closed_loop(KUEUE)
    times = {job_id: (r.start, r.end, r.restarts) for job_id, r in outcome.jobs.items()}
    assert times == {"low": (2.0, 102.0, 0), "mid": (3.0, 40.0, 1), "high": (8.0, 28.0, 0)}
    kinds = [(d["seq"], d["kind"], d["target"]["name"], d["reason"]) for d in map(json.loads, decisions.splitlines())]
    assert [k for k in kinds if k[1] == "Evict"] == [(23, "Evict", "mid", "Preempted")]
    changes = _changes(events)
    mid = [change for change in changes if change[2] in ("mid", "mid-0")]
    assert mid == [
        ("ADDED", "Workload", "mid"),
        ("MODIFIED", "Workload", "mid"),  # admitted
        ("ADDED", "Pod", "mid-0"),  # the Job controller creates the pod
        ("MODIFIED", "Pod", "mid-0"),  # bound and running
        ("MODIFIED", "Workload", "mid"),  # Evicted
        ("MODIFIED", "Pod", "mid-0"),  # the suspended Job's pod is deleted
        ("DELETED", "Pod", "mid-0"),
        ("MODIFIED", "Workload", "mid"),  # quota released, requeued
        ("MODIFIED", "Workload", "mid"),  # pending, with why
        ("MODIFIED", "Workload", "mid"),  # admitted again
        ("ADDED", "Pod", "mid-0"),
        ("MODIFIED", "Pod", "mid-0"),
        ("MODIFIED", "Pod", "mid-0"),  # succeeded
        ("MODIFIED", "Workload", "mid"),  # Finished
        ("DELETED", "Pod", "mid-0"),  # the finished Job goes: pods, then the Workload
        ("DELETED", "Workload", "mid"),
    ]
    finished = [json.loads(line) for line in events.splitlines() if b'"MODIFIED"' in line and b'"Finished"' in line]
    assert [f["object"]["metadata"]["name"] for f in finished] == ["high", "mid", "low"]
    assert finished[0]["object"]["status"]["conditions"][-1]["reason"] == "Succeeded"


def test_admitted_pods_are_the_jobs_and_go_to_our_scheduler() -> None:
    _, events, _ = closed_loop(KUEUE)
    pods = [json.loads(line)["object"] for line in events.splitlines() if b'"kind":"Pod"' in line]
    workload = next(json.loads(line)["object"] for line in events.splitlines() if b'"kind":"Workload"' in line)
    pod = pods[0]
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["ownerReferences"] == workload["metadata"]["ownerReferences"]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert "annotations" not in pod["metadata"]  # no PodGroup: Kueue holds the whole job's quota


def test_simulate_then_replay_gives_the_same_decisions(tmp_path: Path) -> None:
    _, events, decisions = closed_loop(KUEUE)
    assert replayed(events, tmp_path) == decisions


def _decided_at(events: bytes, decisions: bytes) -> list[tuple[float, str, str, str]]:
    """(time of the marker, kind, target, reason) of every decision."""
    lines = events.splitlines()
    out = []
    for decision in map(json.loads, decisions.splitlines()):
        (time,) = marker_times(lines[decision["seq"]])
        out.append((round(time, 6), decision["kind"], decision["target"]["name"], decision["reason"]))
    return out


def _pods_ready(events: bytes) -> dict[str, list[str]]:
    """Each Workload's PodsReady statuses, in the order the cluster wrote them."""
    out: dict[str, list[str]] = {}
    for event in map(json.loads, events.splitlines()):
        if event["type"] == "MODIFIED" and event["object"]["kind"] == "Workload":
            ready = [c["status"] for c in event["object"]["status"]["conditions"] if c["type"] == "PodsReady"]
            if ready and out.get(event["object"]["metadata"]["name"], [None])[-1] != ready[0]:
                out.setdefault(event["object"]["metadata"]["name"], []).append(ready[0])
    return out


@pytest.mark.parametrize("period", [1.0, 0.1])
def test_pods_ready_timeout_evicts_at_its_own_marker_and_the_backoff_readmits(period: float) -> None:
    # big is admitted at p (ok at 2p: one head per ClusterQueue and cycle) and its pod is never
    # bound. With nothing else happening until ok ends at 3p + 100, big is evicted at the first
    # marker from its admission + 60 s, released in the next cycle with requeueAt 10 s later,
    # admitted again then and evicted again 60 s after that. Then no action is left and the
    # same eviction would come round for ever: the run ends after its release.
    def at(periods: int, seconds: float) -> float:
        return round(periods * period + seconds, 6)  # the stream's times have microseconds

    outcome, events, decisions = closed_loop(PODS_READY, period=period, config=WAIT_FOR_PODS_READY)
    big = [(time, kind, reason) for time, kind, name, reason in _decided_at(events, decisions) if name == "big"]
    assert big == [
        (at(1, 0), "WorkloadStatus", "QuotaReserved"),
        (at(1, 60), "WorkloadStatus", "PodsReadyTimeout"),
        (at(1, 60), "Evict", "PodsReadyTimeout"),
        (at(2, 60), "WorkloadStatus", "QuotaReleased"),
        (at(2, 70), "WorkloadStatus", "QuotaReserved"),
        (at(2, 130), "WorkloadStatus", "PodsReadyTimeout"),
        (at(2, 130), "Evict", "PodsReadyTimeout"),
        (at(3, 130), "WorkloadStatus", "QuotaReleased"),
    ]
    # A marker after each change, and one for each deadline: at(1, 60), at(2, 70), at(2, 130).
    woken = [at(1, 60), at(2, 70), at(2, 130)]
    changed = [at(k, 0) for k in (1, 2, 3, 4)] + [at(k, 60) for k in (2, 3)] + [at(3, 70)]
    changed += [at(4, 100), at(5, 100), at(3, 130), at(4, 130)]  # ok ends at 3p + 100
    assert marker_times(events) == sorted([*woken, *changed])
    # ok runs longer than the timeout: its pod runs, the Job integration says PodsReady and it
    # is never evicted; big never gets PodsReady.
    assert _pods_ready(events) == {"ok": ["True"]}
    ok, big_record = outcome.jobs["ok"], outcome.jobs["big"]
    assert (round(ok.start or 0, 6), round(ok.end or 0, 6), ok.restarts) == (at(3, 0), at(3, 100), 0)
    assert (big_record.start, big_record.end, big_record.restarts) == (None, None, 2)


@pytest.mark.parametrize("period", [1.0, 0.1])
def test_pods_ready_run_replays_and_a_marker_in_every_period_decides_the_same(period: float, tmp_path: Path) -> None:
    _, events, decisions = closed_loop(PODS_READY, period=period, config=WAIT_FOR_PODS_READY)
    assert replayed(events, tmp_path, WAIT_FOR_PODS_READY) == decisions
    # No period that got no marker would have decided anything: every deadline was woken for.
    dense = stream_with_every_marker(events, period)
    assert dense.count(b'"SCHEDULE"') > 5 * events.count(b'"SCHEDULE"')
    assert without_position(replayed(dense, tmp_path, WAIT_FOR_PODS_READY)) == without_position(decisions)


def test_pods_ready_follows_the_admission_and_running_jobs_are_not_evicted() -> None:
    # The preemption run of the first test, under a 1 min PodsReady timeout: every job's pods run
    # within a second of its admission, so nothing times out and the same decisions come at the
    # same times (their conditions now include PodsReady). mid's PodsReady goes False when its
    # quota is released and True again once it runs again.
    outcome, events, decisions = closed_loop(KUEUE, config=WAIT_FOR_PODS_READY)
    times = {job_id: (r.start, r.end, r.restarts) for job_id, r in outcome.jobs.items()}
    assert times == {"low": (2.0, 102.0, 0), "mid": (3.0, 40.0, 1), "high": (8.0, 28.0, 0)}
    assert _pods_ready(events) == {"low": ["True"], "mid": ["True", "False", "True"], "high": ["True"]}
    _, plain_events, plain = closed_loop(KUEUE)
    assert _decided_at(events, decisions) == _decided_at(plain_events, plain)


def test_without_wait_for_pods_ready_nothing_is_woken() -> None:
    # No deadline: markers only after changes, big holds its quota for ever, no PodsReady.
    outcome, events, decisions = closed_loop(PODS_READY)
    assert marker_times(events) == [1, 2, 3, 4, 104, 105]
    assert b'"Evict"' not in decisions and b"PodsReady" not in events
    assert outcome.jobs["big"].restarts == 0


def test_derived_quota_shares_the_nodes_among_the_queues() -> None:
    objects = kueue_quota.derived([*KUEUE.jobs, KUEUE.jobs[0].__class__("other", 0, 1, queue="b", scheduler="kueue")],
                            THREE_NODES)  # fmt: skip
    kinds = [(obj["kind"], obj["metadata"]["name"]) for obj in objects]
    assert kinds == [
        ("ResourceFlavor", "default"),
        ("ClusterQueue", "b"),
        ("ClusterQueue", "team"),
        ("LocalQueue", "b"),
        ("LocalQueue", "team"),
    ]
    group = objects[1]["spec"]["resourceGroups"][0]
    assert group["flavors"][0]["resources"] == [{"name": "cpu", "nominalQuota": "6"}]  # 12 cpu / 2 queues
    assert objects[1]["spec"]["cohort"] == "default"


def test_quota_file_is_read_in_creation_order(tmp_path: Path) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(
        "kind: LocalQueue\nmetadata: {name: lq}\nspec: {clusterQueue: cq}\n---\n"
        "- kind: ClusterQueue\n  metadata: {name: cq}\n  spec: {}\n- kind: ResourceFlavor\n  metadata: {name: f}\n"
    )
    assert [obj["kind"] for obj in kueue_quota.read(path)] == ["ResourceFlavor", "ClusterQueue", "LocalQueue"]
    path.write_text("kind: Pod\nmetadata: {name: p}\n")
    with pytest.raises(TraceError, match="expected Kueue objects"):
        kueue_quota.read(path)


def test_kueue_shape_counts() -> None:
    trace = kueue_shape.trace(1.0)
    assert len(trace.jobs) == 15_000
    assert {job.queue for job in trace.jobs} == set(kueue_shape.queue_names())
    assert len(kueue_shape.queue_names()) == 30
    objects = kueue_shape.queues()
    cohorts = {obj["spec"]["cohort"] for obj in objects if obj["kind"] == "ClusterQueue"}
    assert len(cohorts) == 5


def test_kueue_shape_runs_closed_loop_and_replays(tmp_path: Path) -> None:
    trace = kueue_shape.trace(0.02)
    outcome, events, decisions = closed_loop(trace, kueue_shape.queues(), period=0.1)
    assert all(record.end is not None for record in outcome.jobs.values())
    assert replayed(events, tmp_path) == decisions


def test_queue_share_against_its_nominal_quota() -> None:
    outcome, _, _ = closed_loop(KUEUE)
    deserved = share.kueue(kueue_quota.derived(KUEUE.jobs, KUEUE.nodes), outcome.capacity)
    assert deserved == {"team": {"cpu": 1.0, "memory": 0.0}}  # all 8 cpu; memory is not in its quota
    team = metrics.compute(outcome, deserved)["queues"]["team"]
    # cpu-seconds held over [0, 102]: low 4 x 100, mid 2 x (3 + 10), high 4 x 20
    assert team["allocated"]["cpu"] == pytest.approx((400 + 26 + 80) / (8 * 102))
    assert team["ratio"]["cpu"] == team["allocated"]["cpu"]
    assert metrics.compute(fcfs(KUEUE, KUEUE.nodes), deserved)["queues"]["team"]["deserved"]["cpu"] == 1.0
    assert share.volcano(["b", "a", "b"], {"cpu": 8000}) == {"a": {"cpu": 0.5}, "b": {"cpu": 0.5}}
