"""sla and reservation: a gang past its waiting bound goes first and holds the room it waits
for, so a small job that arrives later cannot take it; closed-loop on traces small enough to
work out by hand, and the replay of each run gives its decisions again. With runtime estimates
(``runtimes.ESTIMATE``, SWF's requested time, ``simulate --estimates``) room is held on the
nodes that free up first, and a later job whose estimate ends before the held gang could start
(its shadow time) may use that room, as EASY backfill allows."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from domain import quantity
from domain.durations import positive_seconds
from domain.lifecycle.pod_group import PodGroupPhase
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey, ObjectMeta
from domain.objects.volcano import PodGroup
from domain.scheduler import held_room, lending, node_offers, registry, retry, runtimes
from domain.scheduler.actions import allocate
from domain.scheduler.config import DEFAULT_TIERS, SchedulerConfig, from_mapping
from domain.scheduler.infos import JobInfo, TaskInfo, TaskStatus
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.object_facts import seconds
from domain.scheduler.plugins.sla import waiting_time
from domain.scheduler.runtimes import Ends
from domain.scheduler.session import Session
from domain.scheduler.snapshot import Snapshot
from services.record_files import read_records
from services.replay import replay_records
from services.simulate.loop import run_closed_loop
from services.simulate.outcome import Outcome
from services.traces.model import Job, Trace, TraceError, with_estimates
from tests import builders as b
from tests import spies
from tests.sim_traces import THREE_NODES, without_position
from tests.unit.domain.scheduler.test_kept_snapshot import _decisions
from tests.unit.domain.scheduler.test_retry import BUSY, BUSY_USERS, LARGE_GANGS, LARGE_GANGS_HISTORY, large_gangs
from tests.unit.domain.scheduler.test_shortfall import HPC, ODD_NODES, PINNED

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


CPU2 = {"cpu": "2"}
RESERVE = with_plugin("reservation", {"reservation-waiting-time": "5s"})

# Two 4-cpu nodes. a holds one until 101; the gang b (both nodes) arrives at 10 and from 16 holds
# the free node; c (500 s) arrives at 20, e (50 s) at 30.
SHORT_BEFORE_GANG = Trace(
    (
        Job("a", 0, 100, requests=CPU4, estimate=100),
        Job("b", 10, 100, tasks=2, requests=CPU4, estimate=100),
        Job("c", 20, 500, requests=CPU4, estimate=500),
        Job("e", 30, 50, requests=CPU4, estimate=50),
    ),
    THREE_NODES[:2],
)

# Three 4-cpu nodes: f and g run until 101 on two of them; the gang b (two whole nodes) arrives
# at 10, c (500 s) at 20.
EXTRA_NODE = Trace(
    (
        Job("f", 0, 100, requests=CPU4, estimate=100),
        Job("g", 0, 100, requests=CPU4, estimate=100),
        Job("b", 10, 100, tasks=2, requests=CPU4, estimate=100),
        Job("c", 20, 500, requests=CPU4, estimate=500),
    ),
    THREE_NODES,
)
# Three 4-cpu nodes: a (2 cpu) runs on n0 until 1001, f (4 cpu) on n1 until 101; n2 is free. The
# gang b (two whole nodes) arrives at 10; c (2 cpu, 50 s) at 20 fits only n0's free half.
GANG_AND_HALF_NODE = Trace(
    (
        Job("a", 0, 1000, requests=CPU2, estimate=1000),
        Job("f", 0, 100, requests=CPU4, estimate=100),
        Job("b", 10, 100, tasks=2, requests=CPU4, estimate=100),
        Job("c", 20, 50, requests=CPU2),
    ),
    THREE_NODES,
)


USER = "swf/user"
HISTORY_CONFIG = dataclasses.replace(RESERVE, runtime_history_label=USER)


def _of(user: str) -> dict[str, str]:
    return {USER: user}


# Two 4-cpu nodes, no estimates. v's first two pods run 50 s, s0 5 s. f (user v, 50 s) starts on
# one node at 61; the gang b (both nodes, user w) arrives at 62 and from 68 holds the other. c
# (user s, 20 s) arrives at 70, d (user x, 5 s) at 72.
HISTORY = Trace(
    (
        Job("p", 0, 50, requests=CPU4, labels=_of("v")),
        Job("q", 0, 50, requests=CPU4, labels=_of("v")),
        Job("s0", 52, 5, requests=CPU4, labels=_of("s")),
        Job("f", 60, 50, requests=CPU4, labels=_of("v")),
        Job("b", 62, 100, tasks=2, requests=CPU4, labels=_of("w")),
        Job("c", 70, 20, requests=CPU4, labels=_of("s")),
        Job("d", 72, 5, requests=CPU4, labels=_of("x")),
    ),
    THREE_NODES[:2],
)


def test_a_users_last_runtimes_lend_held_room_without_estimates() -> None:
    # Without history b holds the free node and everyone after it waits until it ends at 212.
    assert starts(run(HISTORY, RESERVE)[0]) == {"p": 1, "q": 1, "s0": 53, "f": 61, "b": 112, "c": 213, "d": 213}
    # With it, f is predicted to end at 111 (v's runs took 50 s), b's shadow time; c is predicted
    # to end at 76 (s0 took 5 s) and uses the held node, d's user has no finished pod and waits.
    assert starts(run(HISTORY, HISTORY_CONFIG)[0]) == {"p": 1, "q": 1, "s0": 53, "f": 61, "b": 112, "c": 71, "d": 213}


def test_a_prediction_under_the_given_estimate_wins() -> None:
    """c asks for 1,000 s (SWF's requested time, mostly far more than a job runs); its user's
    history predicts 5 s. Batch systems end a job at its estimate, so it runs at most that long,
    and the shorter of the two is its runtime (Tsafrir, Etsion and Feitelson cap predictions at
    the user's estimate): c uses the held node, as with the history alone. Told the estimate
    only, c waits for b."""
    asked = Trace(
        tuple(dataclasses.replace(j, estimate=1000) if j.id == "c" else j for j in HISTORY.jobs), HISTORY.nodes
    )
    assert starts(run(asked, HISTORY_CONFIG)[0]) == {"p": 1, "q": 1, "s0": 53, "f": 61, "b": 112, "c": 71, "d": 213}
    assert starts(run(asked, RESERVE)[0])["c"] == 213


def test_a_running_pod_ends_by_the_shorter_of_its_estimate_and_prediction() -> None:
    """f runs from 61 and asks for 1,000 s; its user's pods ran 50 s. The held gang b's shadow
    time is f's predicted end, 111, not 1,061: m (the same user, arriving at 73) would end after
    it, so it is not lent b's node, and b starts at 112. Taking the estimate for f's end, m
    would be lent the node and delay b to 143."""
    asked = tuple(dataclasses.replace(j, estimate=1000) if j.id == "f" else j for j in HISTORY.jobs)
    trace = Trace((*asked, Job("m", 73, 50, requests=CPU4, labels=_of("v"))), HISTORY.nodes)
    assert starts(run(trace, HISTORY_CONFIG)[0]) == {
        "p": 1, "q": 1, "s0": 53, "f": 61, "b": 112, "c": 71, "d": 213, "m": 213,
    }  # fmt: skip


SHORTEST_FIRST = with_plugin("reservation", {"reservation-waiting-time": "5s", "reservation-shortest-first": True})
# Two 4-cpu nodes: a runs on one until 101, x on the other until 1001. The gang b (both nodes)
# arrives at 10 and holds a's node from 101 with shadow time 1001; l (500 s) arrives at 20, s
# (50 s) at 30: both would end by 1001, so both may use the held node, one after the other.
TWO_BACKFILLS = Trace(
    (
        Job("a", 0, 100, requests=CPU4, estimate=100),
        Job("x", 0, 1000, requests=CPU4, estimate=1000),
        Job("b", 10, 100, tasks=2, requests=CPU4, estimate=100),
        Job("l", 20, 500, requests=CPU4, estimate=500),
        Job("s", 30, 50, requests=CPU4, estimate=50),
    ),
    THREE_NODES[:2],
)


def test_shortest_first_backfills_the_shorter_job_first() -> None:
    assert starts(run(TWO_BACKFILLS, RESERVE)[0]) == {"a": 1, "x": 1, "b": 1002, "l": 102, "s": 603}
    assert starts(run(TWO_BACKFILLS, SHORTEST_FIRST)[0]) == {"a": 1, "x": 1, "b": 1002, "l": 153, "s": 102}


@pytest.mark.parametrize(
    "trace", [HPC, with_estimates(TWO_BACKFILLS, "none")], ids=["hpc, no estimates", "two backfills, no estimates"]
)
def test_without_runtimes_shortest_first_decides_as_created_first(trace: Trace) -> None:
    """Without estimates or a history every job ties, and the order is that of creation."""
    shortest = large_gangs(**{"reservation-shortest-first": True})
    assert run(trace, shortest)[1:] == run(trace, LARGE_GANGS)[1:]


SLOWDOWN_FIRST = with_plugin("reservation", {"reservation-waiting-time": "5s", "reservation-slowdown-first": True})
# Two 4-cpu nodes: a runs on one until 101, x on the other until 1001. The gangs l (5,000 s) and
# s (20 s) need both nodes and arrive at 5 and 10; at the marker of 21 both are past 5 s. The
# oldest, l, would wait 16 s and run 5,000 (slowdown 1.003); s would wait 11 s and run 20 (1.55).
LONG_AND_SHORT_GANG = Trace(
    (
        Job("a", 0, 100, requests=CPU4, estimate=100),
        Job("x", 0, 1000, requests=CPU4, estimate=1000),
        Job("l", 5, 5000, tasks=2, requests=CPU4, estimate=5000),
        Job("s", 10, 20, tasks=2, requests=CPU4, estimate=20),
    ),
    THREE_NODES[:2],
)


def test_slowdown_first_holds_room_for_the_short_gang_before_the_older_long_one() -> None:
    """The target holds the nodes as they free up and starts once x ends: l first by age, then s
    after l's 5,000 s; s first by slowdown, then l after s's 20 s."""
    assert starts(run(LONG_AND_SHORT_GANG, RESERVE)[0]) == {"a": 1, "x": 1, "l": 1002, "s": 6003}
    assert starts(run(LONG_AND_SHORT_GANG, SLOWDOWN_FIRST)[0]) == {"a": 1, "x": 1, "l": 1023, "s": 1002}


@pytest.mark.parametrize(
    "trace", [HPC, with_estimates(LONG_AND_SHORT_GANG, "none")], ids=["hpc", "long and short gang"]
)
def test_without_runtimes_slowdown_first_holds_room_for_the_oldest(trace: Trace) -> None:
    """Without estimates or a history every job counts as 10 s long, and the oldest is the target."""
    by_slowdown = large_gangs(**{"reservation-slowdown-first": True})
    assert run(trace, by_slowdown)[1:] == run(trace, LARGE_GANGS)[1:]


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


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (GANG_BEHIND_SMALL, RESERVE),
        (SHORT_BEFORE_GANG, RESERVE),
        (HISTORY, HISTORY_CONFIG),
        (TWO_BACKFILLS, SHORTEST_FIRST),
        (LONG_AND_SHORT_GANG, SLOWDOWN_FIRST),
    ],
    ids=["held room", "lent room", "lent on runtime history", "shortest first", "slowdown first"],
)
def test_a_run_with_held_room_replays_to_the_same_decisions(
    trace: Trace, config: SchedulerConfig, tmp_path: Path
) -> None:
    _, events, decisions = run(trace, config)
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


@pytest.mark.parametrize(
    ("trace", "want"),
    [
        # b holds n1 from 16 with shadow time 101 (a's start 1 + 100). c (21 + 500) would delay
        # it and waits; e (31 + 50 = 81) cannot, and runs on the held node; b still starts at 102.
        (SHORT_BEFORE_GANG, {"a": 1, "b": 102, "c": 203, "e": 31}),
        (with_estimates(SHORT_BEFORE_GANG, "none"), {"a": 1, "b": 102, "c": 203, "e": 203}),
        # b holds n2 and n1 (free at 101), not n0's free half (whose pod runs until 1001): c runs there.
        (GANG_AND_HALF_NODE, {"a": 1, "f": 1, "b": 102, "c": 21}),
        # Without estimates n0's free half covers more of a task than n1: b holds it, c waits for b.
        (with_estimates(GANG_AND_HALF_NODE, "none"), {"a": 1, "f": 1, "b": 102, "c": 102}),
        # b starts at 102 either way: it holds f's and g's nodes, and c runs at once on the third.
        (EXTRA_NODE, {"f": 1, "g": 1, "b": 102, "c": 21}),
        (with_estimates(EXTRA_NODE, "none"), {"f": 1, "g": 1, "b": 102, "c": 102}),
    ],
    ids=[
        "a job that ends before the gang can start uses its held room",
        "without estimates nothing uses held room",
        "the gang holds the nodes that free up first",
        "without estimates the gang holds the nodes closest to holding it",
        "of the nodes that free up by its shadow time the gang holds those that free up last",
        "without estimates the gang holds the free node and c waits for b to start",
    ],
)
def test_runtime_estimates(trace: Trace, want: dict[str, float]) -> None:
    outcome, _, _ = run(trace, RESERVE)
    assert starts(outcome) == want


def test_the_simulator_writes_the_estimate_and_the_start_time() -> None:
    _, events, _ = run(SHORT_BEFORE_GANG, SchedulerConfig())
    objects = [json.loads(line)["object"] for line in events.splitlines() if b'"object"' in line]
    group = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "e")
    assert group["metadata"]["annotations"] == {"schedstream.io/runtime-estimate": "50s"}
    running = next(o for o in objects if o["kind"] == "Pod" and o["status"]["phase"] == "Running")
    assert running["status"]["startTime"] == "2026-01-01T00:00:01Z"


@pytest.mark.parametrize("trace", [HPC, with_estimates(HPC, "exact")], ids=["no estimates", "exact estimates"])
def test_a_history_of_users_no_pod_names_changes_no_decision(trace: Trace) -> None:
    """With a history label that no pod carries, nothing is predicted: the decisions are those
    of the policy without a history, only the stream tells each pod's start time."""
    history = dataclasses.replace(LARGE_GANGS, runtime_history_label=USER)
    _, events, decisions = run(trace, history)
    _, plain_events, plain_decisions = run(trace, LARGE_GANGS)
    assert decisions == plain_decisions
    starts, plain_starts = events.count(b'"startTime"'), plain_events.count(b'"startTime"')
    assert starts > 0
    assert starts >= plain_starts  # every bound pod's, with estimates or not


def test_with_a_runtime_history_the_simulator_writes_every_start_time() -> None:
    def start_times(config: SchedulerConfig) -> set[str]:
        _, events, _ = run(HISTORY, config)
        pods = [json.loads(line)["object"] for line in events.splitlines() if b'"kind":"Pod"' in line]
        return {o["metadata"]["name"] for o in pods if "startTime" in o["status"]}

    assert start_times(RESERVE) == set()  # no estimates: the streams stay as they were
    assert start_times(HISTORY_CONFIG) == {f"{job.id}-{task}" for job in HISTORY.jobs for task in range(job.tasks)}


@pytest.mark.parametrize(("mode", "want"), [("none", [None, None]), ("trace", [7.0, None]), ("exact", [5.0, 9.0])])
def test_estimates_modes(mode: str, want: list[float | None]) -> None:
    trace = Trace((Job("x", 0, 5, estimate=7), Job("y", 1, 9)))
    assert [job.estimate for job in with_estimates(trace, mode).jobs] == want


def test_an_unknown_estimates_mode_is_an_error() -> None:
    with pytest.raises(TraceError, match="estimates must be one of none, trace, exact"):
        with_estimates(Trace(()), "guess")


SLA = with_plugin("sla", {"sla-waiting-time": "30s"})
SHORT_HPC = Trace(HPC.jobs[:30], HPC.nodes)  # sla holds room for every gang past its bound: a shorter run


@pytest.mark.parametrize(
    ("trace", "config"),
    [(HPC, LARGE_GANGS), (ODD_NODES, LARGE_GANGS), (PINNED, LARGE_GANGS), (SHORT_HPC, SLA)],
    ids=["hpc", "uneven nodes", "node affinity", "sla"],
)
@pytest.mark.parametrize("estimates", ["none", "exact"])
def test_plans_keep_what_nodes_offer_alike_members(
    trace: Trace, config: SchedulerConfig, estimates: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan ranks again, for a member alike the one before, only the node that one took, and
    the plans of one hold share what untouched nodes offer: the runs decide the same, byte for
    byte, as when no two members are alike (every member ranks every node afresh). With sla,
    every gang past its bound holds room, several in one cycle."""
    told = with_estimates(trace, estimates)
    likeness = spies.answers(monkeypatch, held_room, "_likeness")
    _, events, decisions = run(told, config)
    assert len(likeness) > 20 + len(set(likeness))
    monkeypatch.setattr(held_room, "_likeness", lambda _: object())
    assert (events, decisions) == run(told, config)[1:]


def _task(name: str, cpu: str, *, node: str = "", runs: str | None = None) -> TaskInfo:
    """A task of the gang ``ns/g`` (pending), or a pod running on ``node`` since 0 for ``runs``."""
    wire = b.pod(name, cpu=cpu, memory=None, node_name=node, phase="Running" if node else "Pending")
    if runs is not None:
        wire["metadata"]["annotations"] = {runtimes.ESTIMATE: runs}
        wire["status"]["startTime"] = b.iso(0)
    pod = b.typed(wire)
    assert isinstance(pod, Pod)
    status = TaskStatus.RUNNING if node else TaskStatus.PENDING
    return TaskInfo(ObjectKey(f"ns/{name}"), pod, ObjectKey("ns/g" if not node else f"ns/{name}"),
                    pod.spec.requests(), status, node)  # fmt: skip


def test_when_the_latest_nodes_cannot_hold_the_gang_it_holds_the_first_plan_again() -> None:
    """Node p (3 cpu) has 1 free now, 2 at 30 and 3 at 50; q (2 cpu) frees up whole at 20. The
    gang's 1-cpu member goes first to p, its 2-cpu member to q: shadow 20. On the nodes that free
    up last by 20 the small one takes q, and the big one then has no node by 20: the gang holds
    its first plan, whose room is taken from p (its 1 free cpu) once taken, until the statement
    is discarded."""
    node_p, node_q = b.typed(b.node("p", cpu="3", memory="8Gi")), b.typed(b.node("q", cpu="2", memory="8Gi"))
    assert isinstance(node_p, Node) and isinstance(node_q, Node)
    nodes = {
        "p": NodeInfo("p", node_p, {"cpu": 3000, "pods": 110_000}, {"cpu": 1000, "pods": 108_000}, {}),
        "q": NodeInfo("q", node_q, {"cpu": 2000, "pods": 110_000}, {"cpu": 0, "pods": 109_000}, {}),
    }
    running = [_task("r1", "1", node="p", runs="30s"), _task("r2", "1", node="p", runs="50s"),
               _task("r3", "2", node="q", runs="20s")]  # fmt: skip
    small, big = _task("g-0", "1"), _task("g-1", "2")
    gang = JobInfo(ObjectKey("ns/g"), None, "default", 2, {}, None, 0.0, PodGroupPhase.INQUEUE, tasks=[small, big])
    jobs = {gang.key: gang} | {
        t.job: JobInfo(t.job, None, "default", 1, {}, None, 0.0, PodGroupPhase.RUNNING, tasks=[t]) for t in running
    }
    start = seconds(running[0].pod.status.start_time)
    session = Session(Snapshot(nodes, {}, jobs, [], [], {}, now=start), SchedulerConfig())
    held = held_room.hold(session, gang)
    assert held is not None
    assert [(task.key, node) for task, node in held.places] == [("ns/g-0", "p"), ("ns/g-1", "q")]
    assert held.shadow == start + 20
    assert nodes["p"].idle == {"cpu": 1000, "pods": 108_000}  # nothing taken until something reads it
    would = held_room.room_of(held)
    held_room.take([held])
    assert nodes["p"].idle == {"cpu": 0, "pods": 107_000}
    assert held_room.room_of(held) == would  # what operators see is what it takes
    assert would.nodes == (("p", {"cpu": 1000, "pods": 1000}), ("q", {"cpu": 0, "pods": 1000}))
    held.statement.discard()
    assert nodes["p"].idle == {"cpu": 1000, "pods": 108_000}


@pytest.mark.parametrize(
    ("trace", "config"),
    [(BUSY, LARGE_GANGS), (with_estimates(SHORT_HPC, "exact"), SLA)],
    ids=["reservation", "sla, several holds and lent room"],
)
@pytest.mark.parametrize(
    "actions", [("enqueue", "allocate", "backfill"), ("enqueue", "allocate", "preempt", "backfill")]
)
def test_a_hold_takes_its_room_only_when_something_after_it_reads_the_nodes(
    trace: Trace, config: SchedulerConfig, actions: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hold that is its cycle's last attempt, with only a backfill after allocate and no
    best-effort pod, takes nothing (its nodes stay as they were) but reports what it would take;
    with preempt after allocate every hold has taken its room when allocate ends. Either way the
    decisions are those of holds that take their room as soon as they are planned (with sla, a
    gang lent held room may hold room itself, before the lent holds take theirs again)."""
    config = dataclasses.replace(config, actions=actions)
    events = io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, io.BytesIO())
    lines = events.getvalue().decode().splitlines()
    made: list[held_room.Held] = []
    ended: list[tuple[bool, bool]] = []  # per hold, when allocate ended: taken, and took what it should
    real_hold, real_execute = held_room.hold, registry.ACTIONS["allocate"]

    def hold(session: Session, job: JobInfo) -> held_room.Held | None:
        held = real_hold(session, job)
        if held is not None:
            made.append(held)
        return held

    def execute(session: Session) -> None:
        made.clear()
        real_execute(session)
        for held in made:  # a hold not taken took nothing; one taken took what it reports
            reported = list(held_room.room_of(held).nodes)
            ended.append((held.taken, held.statement.holding() == (reported if held.taken else [])))

    def at_once(session: Session, job: JobInfo) -> held_room.Held | None:
        held = real_hold(session, job)
        if held is not None:
            held_room.take([held])
        return held

    monkeypatch.setattr(held_room, "hold", hold)
    monkeypatch.setitem(registry.ACTIONS, "allocate", execute)
    taken_when_read = _decisions(lines, config, fresh=False)
    monkeypatch.undo()
    monkeypatch.setattr(held_room, "hold", at_once)
    assert taken_when_read == _decisions(lines, config, fresh=False)
    assert ended and all(right for _, right in ended)
    taken = [took for took, _ in ended]
    assert all(taken) if "preempt" in actions else not all(taken)


# HISTORY and a gang e of user s (two nodes, 5 s) at 72: from 92, when c has left the node the
# gang b holds, e is lent it but needs both nodes, and fails.
LENT_IN_VAIN = Trace((*HISTORY.jobs, Job("e", 72, 5, tasks=2, requests={"cpu": "4"}, labels=_of("s"))), HISTORY.nodes)


# Runs where held room is planned and (but the first, without estimates or history) lent.
LENT_RUNS = pytest.mark.parametrize(
    ("trace", "config"),
    [(BUSY, LARGE_GANGS), (BUSY_USERS, LARGE_GANGS_HISTORY), (LENT_IN_VAIN, HISTORY_CONFIG)],
    ids=["large-gangs", "large-gangs with runtime history", "a gang lent room in vain"],
)


@LENT_RUNS
def test_lent_room_is_what_the_holds_keep_now(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room lending gives back, kept per hold for the jobs lent it, is what the hold's
    statement keeps at each ask, also after a job lent it took some and it was held again."""
    events = io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, io.BytesIO())
    checks: list[bool] = []
    rooms: dict[int, list[dict[str, Any]]] = {}  # a hold -> the rooms lent of it, in turn
    alive: list[held_room.Held] = []  # kept, so no two holds share an id
    real = lending.lent_room

    def checked(lent: list[held_room.Held]) -> dict[str, Any]:
        room = real(lent)
        now: dict[str, Any] = {}
        for held in lent:
            for node, taken in held.statement.holding():
                quantity.add(now.setdefault(node, {}), taken)
            rooms.setdefault(id(held), []).append(dict(now))
            alive.append(held)
        checks.append(room == now)
        return room

    monkeypatch.setattr(lending, "lent_room", checked)
    _decisions(events.getvalue().decode().splitlines(), config, fresh=False)
    assert checks and all(checks)
    if config is LARGE_GANGS_HISTORY:  # a hold whose room changed while it was lent
        assert any(len({repr(room) for room in seen}) > 1 for seen in rooms.values())


@LENT_RUNS
def test_a_kept_attempt_compares_with_the_room_now_and_the_room_lent_now(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room plus the room lent, kept for the jobs that see the same of both, is what adding
    them up afresh gives, whichever changed since."""
    events = io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, io.BytesIO())
    checks: list[bool] = []
    real = retry._same_room

    def checked(session: Session, last: retry.Seen, kept: Any, lent: dict[str, Any] | None) -> bool:
        if lent:
            values, names = list(retry._room(session, kept, last.names)), last.names
            for node, amounts in lent.items():
                for k, name in enumerate(names):
                    values[kept.positions[node] * len(names) + k] += amounts.get(name, 0)
            want = tuple(values) == last.room
        answer = real(session, last, kept, lent)
        if lent:
            checks.append(answer == want)
        return answer

    monkeypatch.setattr(retry, "_same_room", checked)
    _decisions(events.getvalue().decode().splitlines(), config, fresh=False)
    assert all(checks)
    if config is not LARGE_GANGS:  # without estimates or history nothing is lent
        assert checks


@LENT_RUNS
def test_what_is_kept_is_the_room_the_attempt_saw(
    trace: Trace, config: SchedulerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept attempt is kept with the room it saw, room lent to it included: ``remember`` looks
    before the lent room is held again."""
    events = io.BytesIO()
    run_closed_loop(trace, trace.nodes, config, events, io.BytesIO())
    saw: dict[object, tuple[int, ...]] = {}
    kept: list[tuple[object, bool]] = []  # checked here: the engine skips a cycle that raises
    place, remember = allocate._place, retry.remember

    def placed(session: Session, job: JobInfo, *args: Any, **kwargs: Any) -> bool:
        saw[job.key] = retry.look(session, job).room
        return place(session, job, *args, **kwargs)

    def remembered(session: Session, job: JobInfo, *args: Any) -> None:
        before = saw.pop(job.key)
        if job.pending() and job.placed() < job.min_member:  # failed: what remember keeps
            kept.append((job.key, retry.look(session, job).room == before))
        remember(session, job, *args)

    monkeypatch.setattr(allocate, "_place", placed)
    monkeypatch.setattr(retry, "remember", remembered)
    lent = spies.answers(monkeypatch, lending, "lendable")
    _decisions(events.getvalue().decode().splitlines(), config, fresh=False)
    assert kept
    assert [key for key, same in kept if not same] == []
    if config is not LARGE_GANGS:  # without estimates or history nothing is lent
        assert sum(bool(holds) for holds in lent) > 1


def test_a_kept_offer_is_read_again_when_its_node_room_ends_or_instant_tell_it_to() -> None:
    """``node_offers.first`` keeps what a node offered a member: used again while the node object, its
    allocatable, its free room and its pods' ends are the same (a node that holds the member now
    frees up at the new instant, one that frees up at a known end keeps it), read again when any
    of them changes, and a node the member cannot run on stays so while the object and the
    allocatable do."""
    wire = b.node("p", cpu="2", memory="8Gi")
    node = b.typed(wire)
    tainted = b.typed({**wire, "spec": {"unschedulable": True}})
    assert isinstance(node, Node) and isinstance(tainted, Node)
    member = _task("g-0", "1")
    allocatable = {"cpu": 2000, "pods": 110_000}
    ends = {"p": [(50.0, {"cpu": 1000})]}
    reads: list[float] = []  # the instants the offer was read at
    offers: dict[int, node_offers.Offer] = {}

    def offer(info: NodeInfo, now: float, known: Ends = ends) -> node_offers.Facts:
        def read(n: NodeInfo) -> node_offers.Facts:
            reads.append(now)
            if n.node.spec.unschedulable:
                return None
            return held_room._free_at(now, n.idle, member.request, known.get(n.name, [])), held_room._covered(
                member, n.idle, {}
            )

        return node_offers.first(now, offers, 0, info, task=member, ends=known, facts=read)

    free = NodeInfo("p", node, allocatable, {"cpu": 1000, "pods": 110_000}, {})
    assert offer(free, 10.0) == (10.0, 2.0)  # its cpu and its pod slot covered
    assert offer(free, 20.0) == (20.0, 2.0)  # it holds the member now: now is the new instant
    assert len(reads) == 1
    full = NodeInfo("p", node, allocatable, {"cpu": 0, "pods": 110_000}, {})
    assert offer(full, 30.0) == (50.0, 1.0)  # another free room: read again
    assert offer(full, 40.0) == (50.0, 1.0)  # frees up at a known end: kept as it is
    assert offer(full, 40.0, {"p": [(60.0, {"cpu": 1000})]}) == (60.0, 1.0)  # other ends: read again
    assert offer(NodeInfo("p", node, {"cpu": 4000}, full.idle, {}), 40.0) == (50.0, 1.0)  # other allocatable
    assert len(reads) == 4
    assert offer(NodeInfo("p", tainted, allocatable, full.idle, {}), 40.0) is None  # another node object
    assert offer(NodeInfo("p", tainted, allocatable, free.idle, {}), 40.0) is None  # still unschedulable
    assert len(reads) == 5
    # Freeing up at a known end that is the instant is not holding the member now: kept as it is.
    assert offer(full, 50.0) == (50.0, 1.0)
    assert offer(full, 55.0) == (50.0, 1.0)
    assert len(reads) == 6


def test_an_offer_of_the_same_snapshot_node_is_given_again_unless_a_statement_changed_it() -> None:
    """``node_offers.untouched``: an offer read from the very snapshot node, with the very list of
    its pods' ends, is given again without comparing what it read (a node that holds the member
    now frees up at the new instant); one a statement changed in this session (``touched``), or
    with another list of ends, is compared, and read again when its free room differs."""
    node = b.typed(b.node("p", cpu="2", memory="8Gi"))
    assert isinstance(node, Node)
    member = _task("g-0", "1")
    ends = {"p": [(50.0, {"cpu": 1000})]}
    info = NodeInfo("p", node, {"cpu": 2000, "pods": 110_000}, {"cpu": 1000, "pods": 110_000}, {})
    offers: dict[int, node_offers.Offer] = {}
    reads: list[int] = []  # the free cpu of each read

    def offered(now: float, touched: set[str], known: Ends = ends) -> list[node_offers.Facts]:
        def read(n: NodeInfo) -> node_offers.Facts:
            reads.append(n.idle["cpu"])
            return held_room._alone(now, member, known, n)

        return node_offers.untouched(now, offers, [info], touched, task=member, ends=known, facts=read)

    assert offered(10.0, set()) == [(10.0, 2.0)]
    assert offered(20.0, set()) == [(20.0, 2.0)]  # holds the member now: the new instant
    assert offered(20.0, {"p"}) == [(20.0, 2.0)]  # touched, compared: the same free room
    assert offered(20.0, set(), {"p": [(50.0, {"cpu": 1000})]}) == [(20.0, 2.0)]  # equal ends, compared
    assert reads == [1000]
    info.idle["cpu"] = 0  # a statement took its room in this session
    assert offered(20.0, {"p"}) == [(50.0, 1.0)]
    assert offered(30.0, set()) == [(50.0, 1.0)]  # the next session: the node as the offer read it
    assert reads == [1000, 0]


def test_what_a_kept_offer_offers_once_members_are_planned_there_is_kept_with_it() -> None:
    """``node_offers.after``: what a node offers the next member of a gang of one likeness once
    one, two, ... are planned there is read once per count while its offer is kept; one whose
    free room holds them all now frees up at the new instant, one that frees up at a known end
    keeps it."""
    node = b.typed(b.node("p", cpu="4", memory="8Gi"))
    assert isinstance(node, Node)
    member = _task("g-0", "1")
    info = NodeInfo("p", node, {"cpu": 4000, "pods": 110_000}, {"cpu": 2000, "pods": 110_000}, {})
    ends = {"p": [(50.0, {"cpu": 1000})]}
    offers: dict[int, node_offers.Offer] = {}
    reads: list[tuple[float, int]] = []

    def read(now: float, node: NodeInfo, members: int, task: TaskInfo, ends: Ends) -> tuple[node_offers.Facts, bool]:
        reads.append((now, members))
        return held_room._after(now, node, members, task, ends)

    def after(now: float, members: int) -> node_offers.Facts:
        return node_offers.after(now, offers[0], members, read, node=info, task=member, ends=ends)

    def first(n: NodeInfo) -> node_offers.Facts:
        return held_room._facts(10.0, member, n, {}, n.allocatable, ends=ends)

    assert node_offers.first(10.0, offers, 0, info, task=member, ends=ends, facts=first) == (10.0, 2.0)
    assert after(10.0, 1) == (10.0, 2.0)  # two cpus free: the second member's cpu and pod slot covered
    assert after(10.0, 2) == (50.0, 1.0)  # the third waits for the pod that ends at 50
    assert after(20.0, 1) == (20.0, 2.0)  # the node holds them now: now is the new instant
    assert after(20.0, 2) == (50.0, 1.0)
    assert reads == [(10.0, 1), (10.0, 2)]
