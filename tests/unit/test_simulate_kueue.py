"""Kueue Workloads in the closed-loop simulator: admission creates the pods, our scheduler binds
them, Finished and the deletion follow the last pod, an Evict suspends the job (pods deleted)
and the requeued workload starts over; the quota objects; the Kueue-shape trace."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from domain.scheduler.config import SchedulerConfig
from services.inputs import read_records
from services.replay import replay_records
from services.simulate import metrics, quota, share
from services.simulate.baselines import fcfs
from services.simulate.loop import run_closed_loop
from services.simulate.outcome import Outcome
from services.traces import kueue_shape
from services.traces.model import Trace, TraceError
from tests.sim_traces import KUEUE, THREE_NODES


def closed_loop(
    trace: Trace, objects: list[dict[str, Any]] | None = None, period: float = 1.0
) -> tuple[Outcome, bytes, bytes]:
    events, decisions = io.BytesIO(), io.BytesIO()
    cluster = run_closed_loop(
        trace, trace.nodes, SchedulerConfig(), events, decisions, period=period, kueue_objects=objects
    )
    return cluster.outcome, events.getvalue(), decisions.getvalue()


def replayed(events: bytes, tmp_path: Path) -> bytes:
    path = tmp_path / "events.jsonl"
    path.write_bytes(events)
    out = io.BytesIO()
    replay_records(read_records([str(path)]), out, config=SchedulerConfig())
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


def test_derived_quota_shares_the_nodes_among_the_queues() -> None:
    objects = quota.derived([*KUEUE.jobs, KUEUE.jobs[0].__class__("other", 0, 1, queue="b", scheduler="kueue")],
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
    assert [obj["kind"] for obj in quota.read(path)] == ["ResourceFlavor", "ClusterQueue", "LocalQueue"]
    path.write_text("kind: Pod\nmetadata: {name: p}\n")
    with pytest.raises(TraceError, match="expected Kueue objects"):
        quota.read(path)


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
    deserved = share.kueue(quota.derived(KUEUE.jobs, KUEUE.nodes), outcome.capacity)
    assert deserved == {"team": {"cpu": 1.0, "memory": 0.0}}  # all 8 cpu; memory is not in its quota
    team = metrics.compute(outcome, deserved)["queues"]["team"]
    # cpu-seconds held over [0, 102]: low 4 x 100, mid 2 x (3 + 10), high 4 x 20
    assert team["allocated"]["cpu"] == pytest.approx((400 + 26 + 80) / (8 * 102))
    assert team["ratio"]["cpu"] == team["allocated"]["cpu"]
    assert metrics.compute(fcfs(KUEUE, KUEUE.nodes), deserved)["queues"]["team"]["deserved"]["cpu"] == 1.0
    assert share.volcano(["b", "a", "b"], {"cpu": 8000}) == {"a": {"cpu": 0.5}, "b": {"cpu": 0.5}}
