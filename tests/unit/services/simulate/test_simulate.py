"""The closed-loop simulator and the baselines on traces small enough to work out by hand, the
metrics on them, and the marker rule: skipping the periods in which nothing changed decides
exactly what a marker in every period would."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from domain.scheduler.config import SchedulerConfig, from_mapping
from services.record_files import read_records
from services.replay import replay_records
from services.simulate import metrics
from services.simulate.baselines import easy, fcfs, greedy
from services.simulate.clock import marker_after, marker_at, simulated, wall
from services.simulate.loop import run_closed_loop
from services.simulate.outcome import JobRecord, Outcome, Timeline
from services.traces.dlrm import NODE_SHAPES, ROLE_LABEL, sized_nodes
from services.traces.model import Job, Trace
from tests.sim_traces import (
    PREEMPTION,
    PREEMPTION_CONFIG,
    SMALL,
    THREE_NODES,
    stream_with_every_marker,
    without_position,
)


def closed_loop(trace: Trace, config: SchedulerConfig | None = None) -> tuple[Outcome, bytes, bytes]:
    events, decisions = io.BytesIO(), io.BytesIO()
    cluster = run_closed_loop(trace, trace.nodes, config or SchedulerConfig(), events, decisions)
    return cluster.outcome, events.getvalue(), decisions.getvalue()


def times(outcome: Outcome) -> dict[str, tuple[float | None, float | None]]:
    return {job_id: (record.start, record.end) for job_id, record in outcome.jobs.items()}


def test_our_policy_on_the_small_trace() -> None:
    # Markers every second: arrivals at 0 are placed at the marker of 1; b ends at 51, and at the
    # marker of 52 the gang c (2 nodes) still does not fit but d does (Volcano does not reserve);
    # d ends at 82 and e takes its node at 83; a ends at 101 and c starts at 102.
    outcome, _, _ = closed_loop(SMALL)
    assert times(outcome) == {
        "a": (1, 101),
        "b": (1, 51),
        "c": (102, 202),
        "d": (52, 82),
        "e": (83, 283),
    }
    assert outcome.pending_reasons == {"NotEnoughResources": 7}


def test_fcfs_on_the_small_trace() -> None:
    # c heads the queue from 10 and blocks d and e until a ends at 100; d ends at 130, then e.
    assert times(fcfs(SMALL, SMALL.nodes)) == {
        "a": (0, 100),
        "b": (0, 50),
        "c": (100, 200),
        "d": (100, 130),
        "e": (130, 330),
    }


def test_easy_on_the_small_trace() -> None:
    # c's shadow time is 100 (a ends). At 50, d (30 s) ends by then: backfilled. At 80 e (200 s)
    # would not end by 100, but a's two nodes are enough for c: backfilled too.
    assert times(easy(SMALL, SMALL.nodes)) == {
        "a": (0, 100),
        "b": (0, 50),
        "c": (100, 200),
        "d": (50, 80),
        "e": (80, 280),
    }


def test_greedy_first_fit_lets_a_small_job_delay_a_gang() -> None:
    # Two nodes. At 20 c fits the node a leaves free: greedy starts it, so the gang b waits for
    # c's end (520); EASY keeps that node for b (c would not end by b's shadow time, 100), and
    # FCFS lets nobody pass b.
    trace = Trace(
        (
            Job("a", 0, 100, requests={"cpu": "4"}),
            Job("b", 10, 100, tasks=2, requests={"cpu": "4"}),
            Job("c", 20, 500, requests={"cpu": "4"}),
        ),
        THREE_NODES[:2],
    )
    assert times(greedy(trace, trace.nodes)) == {"a": (0, 100), "b": (520, 620), "c": (20, 520)}
    assert times(easy(trace, trace.nodes)) == {"a": (0, 100), "b": (100, 200), "c": (200, 700)}
    assert times(fcfs(trace, trace.nodes)) == {"a": (0, 100), "b": (100, 200), "c": (200, 700)}
    by_size = metrics.compute(greedy(trace, trace.nodes))["by_size"]
    assert (by_size["1"]["wait"]["max"], by_size["2-8"]["wait"]["max"]) == (0, 510)


@pytest.mark.parametrize(("estimate", "want_c"), [(None, (20, 70)), (60, (20, 70)), (500, (200, 250))])
def test_easy_plans_with_the_estimates_it_is_given(estimate: float | None, want_c: tuple[float, float]) -> None:
    # b's shadow time is 100 (a ends). c runs 50 s: planned with its runtime, or an estimate that
    # ends by 100, it is backfilled at 20; estimated at 500 s it would delay b, and waits.
    trace = Trace(
        (
            Job("a", 0, 100, requests={"cpu": "4"}),
            Job("b", 10, 100, tasks=2, requests={"cpu": "4"}),
            Job("c", 20, 50, requests={"cpu": "4"}, estimate=estimate),
        ),
        THREE_NODES[:2],
    )
    assert times(easy(trace, trace.nodes)) == {"a": (0, 100), "b": (100, 200), "c": want_c}


def test_jobs_never_started_are_censored_at_the_end_of_the_run() -> None:
    # A gang that never gets its two nodes: its wait runs to the outcome's last instant.
    outcome = Outcome("p", {"cpu": 8000}, {})
    outcome.jobs["small"] = JobRecord(Job("small", 0, 10), start=5, end=15)
    outcome.jobs["gang"] = JobRecord(Job("gang", 10, 10, tasks=2))
    outcome.track(0, {}, 2)
    outcome.track(400, {}, 1)
    computed = metrics.compute(outcome)
    assert computed["censored"] == {"count": 1, "mean": 390, "max": 390}
    assert computed["wait"]["all"]["mean"] == 5
    assert computed["wait_with_censored"]["mean"] == (5 + 390) / 2
    assert computed["by_size"]["2-8"]["censored"] == {"count": 1, "mean": 390, "max": 390}
    assert "never started (censored)" in metrics.table({"p": computed})


def test_metrics_of_the_small_trace() -> None:
    ours = metrics.compute(closed_loop(SMALL)[0])
    assert ours["wait"]["all"] == {
        "count": 5,
        "mean": 35.8,
        "p50": 32.0,
        "p95": pytest.approx(84.2),
        "p99": pytest.approx(90.44),
        "max": 92,
    }
    assert ours["makespan"] == 283
    assert list(ours["by_size"]) == ["1", "2-8"]
    assert ours["by_size"]["2-8"]["wait"]["mean"] == (1 + 92) / 2
    assert ours["by_size"]["2-8"]["censored"] == {"count": 0}
    assert ours["censored"] == {"count": 0}
    assert ours["wait"]["by_queue"]["default"]["count"] == 5
    # busy cpu-seconds: 2*100 + 50 + 2*100 + 30 + 200 = 680 over 3 nodes * 4 cpus * 283 s
    assert ours["utilisation"]["cpu"] == pytest.approx(680 * 4 / (12 * 283))
    assert ours["pending_reasons"] == {"NotEnoughResources": 7}
    baseline = metrics.compute(fcfs(SMALL, SMALL.nodes))
    assert baseline["wait"]["all"]["mean"] == (0 + 0 + 90 + 80 + 100) / 5
    assert baseline["makespan"] == 330
    # bounded slowdowns under FCFS: a and b 1, c (90 + 100) / 100, d (80 + 30) / 30, e (100 + 200) / 200
    assert baseline["bounded_slowdown"]["mean"] == pytest.approx((1 + 1 + 1.9 + 110 / 30 + 1.5) / 5)
    assert "utilisation" in metrics.table({"schedstream": ours, "fcfs": baseline})


def test_preemption_evicts_and_the_task_starts_over() -> None:
    outcome, events, _ = closed_loop(PREEMPTION, from_mapping(PREEMPTION_CONFIG))
    assert outcome.jobs["low"].restarts == 2
    assert outcome.jobs["forever"].start is not None
    assert outcome.jobs["forever"].end is None  # unknown duration: runs until the end
    lines = [json.loads(line) for line in events.splitlines()]
    deleted = [
        (line["object"]["kind"], line["object"]["metadata"]["name"]) for line in lines if line["type"] == "DELETED"
    ]
    # the evicted pods, then each completed job: its pods before its PodGroup
    assert deleted[:2] == [("Pod", "low-0"), ("Pod", "low-1")]
    assert deleted[2:5] == [("Pod", "gang-0"), ("Pod", "gang-1"), ("PodGroup", "gang")]
    assert ("PodGroup", "forever") not in deleted


@pytest.mark.parametrize(("trace", "config"), [(SMALL, {}), (PREEMPTION, PREEMPTION_CONFIG)], ids=["small", "preempt"])
def test_skipped_idle_periods_decide_nothing(trace: Trace, config: dict[str, str], tmp_path: Path) -> None:
    scheduler = from_mapping(config) if config else SchedulerConfig()
    _, events, decisions = closed_loop(trace, scheduler)
    dense = stream_with_every_marker(events, 1.0)
    assert dense.count(b'"SCHEDULE"') > 2 * events.count(b'"SCHEDULE"')
    path = tmp_path / "dense.jsonl"
    path.write_bytes(dense)
    out = io.BytesIO()
    replay_records(read_records([str(path)]), out, config=scheduler)
    assert without_position(out.getvalue()) == without_position(decisions)


def test_timeline_integral_and_percentiles() -> None:
    line = Timeline()
    line.set(0, 2)
    line.set(10, 2)  # no change: no point
    line.set(10, 4)
    line.set(20, 0)
    assert line.points == [(0, 2), (10, 4), (20, 0)]
    assert line.integral(0, 30) == 60
    assert line.integral(5, 15) == 30
    assert metrics.percentile([1, 2, 3, 4], 50) == 2.5
    assert metrics.summary([]) == {"count": 0}
    assert metrics.size_class(1) == "1" and metrics.size_class(33) == "33+"


def test_bucket_means_agree_with_the_integral() -> None:
    line = Timeline()
    for time, value in [(0, 1), (3, 5), (3.5, 0), (7, 2), (9.99, 4)]:
        line.set(time, value)
    means = line.means(0, 12, 7)
    width = 12 / 7
    assert means == pytest.approx([line.integral(i * width, (i + 1) * width) / width for i in range(7)])


def test_a_marker_gets_no_second_marker_at_its_own_time() -> None:
    # k * 0.1 / 0.1 is a hair under k for some k (43, 81, ...): the marker of period k must not
    # fall again in period k, which ran 109 cycles at one instant of a Kueue-shape run.
    assert 43 * 0.1 / 0.1 < 43
    assert all(marker_after(k * 0.1, 0.1) == (k + 1) * 0.1 for k in range(2000))
    assert marker_after(0.3, 0.1) == 4 * 0.1  # an event at k*period belongs to period k


def test_a_deadline_on_the_grid_gets_the_marker_at_its_own_time() -> None:
    # A deadline read back from the stream's clock (k * 0.1 to the microsecond) may divide to a
    # hair above k: its marker is k * 0.1 itself, the one marker_after gives that period.
    deadlines = [simulated(datetime.fromisoformat(wall(k * 0.1))) for k in range(1, 2000)]
    assert all(marker_at(at, 0.1) == marker_after((k - 1) * 0.1, 0.1) for k, at in enumerate(deadlines, 1))
    assert marker_at(60.000001, 0.1) == 601 * 0.1  # a microsecond past the grid: the next marker


def test_dlrm_nodes_are_sized_for_each_roles_peak() -> None:
    gpu = {"cpu": "8", "nvidia.com/gpu": "1", "memory": "40Gi"}
    jobs = (
        *(Job(f"hn-{i}", 0, 10, requests=gpu, labels={ROLE_LABEL: "HN"}) for i in range(9)),  # 9 GPUs at once
        Job("hn-late", 10, None, requests=gpu, labels={ROLE_LABEL: "HN"}),  # after those ended
        Job("cn", 5, None, requests={"cpu": "192"}, labels={ROLE_LABEL: "CN"}),
        Job("cn-2", 6, None, requests={"cpu": "96"}, labels={ROLE_LABEL: "CN"}),
    )
    nodes = sized_nodes(Trace(jobs))
    assert [node.name for node in nodes] == ["dlrm-hn-0000", "dlrm-hn-0001", "dlrm-cn-0000", "dlrm-cn-0001"]
    assert nodes[0].allocatable == NODE_SHAPES["HN"]
    assert nodes[-1].labels == {ROLE_LABEL: "CN"}


def test_the_binpack_example_policy_keeps_a_node_whole_where_the_default_spreads() -> None:
    # Two 4-cpu nodes; a and b (2 cpu, 100 s) arrive at 0, big (4 cpu, 10 s) at 10. The default
    # tiers' nodeorder spreads a and b over both nodes, so big waits for a to end at 101; with
    # examples/policies/binpack.yaml they share a node and big starts at the next marker.
    two_cpu = {"cpu": "2", "memory": "1Gi"}
    trace = Trace(
        (
            Job("a", 0, 100, requests=two_cpu),
            Job("b", 0, 100, requests=two_cpu),
            Job("big", 10, 10, requests={"cpu": "4", "memory": "1Gi"}),
        ),
        THREE_NODES[:2],
    )
    spread = closed_loop(trace)[0]
    assert times(spread)["big"] == (102, 112)
    assert spread.pending_reasons == {"NotEnoughResources": 1}
    policy = yaml.safe_load((Path(__file__).parents[4] / "examples" / "policies" / "binpack.yaml").read_text())
    packed = closed_loop(trace, from_mapping(policy))[0]
    assert times(packed) == {"a": (1, 101), "b": (1, 101), "big": (11, 21)}
    assert packed.pending_reasons == {}


def test_the_large_gangs_binpack_policy_starts_a_whole_node_pod_that_spreading_leaves_waiting_for_ever() -> None:
    # Two 4-cpu nodes; a and b (2 cpu) arrive at 0 and never end, big (4 cpu, 10 s) at 10. Under
    # large-gangs.yaml nodeorder spreads a and b, and big never starts: holding room cannot help
    # it, since nothing on either node ever ends (openb's whole-node pods).
    # large-gangs-binpack.yaml packs a and b onto one node, and big starts at the next marker.
    two_cpu = {"cpu": "2", "memory": "1Gi"}
    trace = Trace(
        (
            Job("a", 0, None, requests=two_cpu),
            Job("b", 0, None, requests=two_cpu),
            Job("big", 10, 10, requests={"cpu": "4", "memory": "1Gi"}),
        ),
        THREE_NODES[:2],
    )
    policies = Path(__file__).parents[4] / "examples" / "policies"
    spread = closed_loop(trace, from_mapping(yaml.safe_load((policies / "large-gangs.yaml").read_text())))[0]
    assert times(spread) == {"a": (1, None), "b": (1, None), "big": (None, None)}
    packed = closed_loop(trace, from_mapping(yaml.safe_load((policies / "large-gangs-binpack.yaml").read_text())))[0]
    assert times(packed) == {"a": (1, None), "b": (1, None), "big": (11, 21)}
