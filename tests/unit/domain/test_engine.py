"""domain.engine.Engine end to end: events in, whole decision lists out (CONTRACT 1-2, SEEDS S1)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from domain import engine as engine_module
from domain.decisions import Decision
from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig
from tests import builders as b
from tests.poisoned_cycle import poisoned
from tests.unit.domain.scheduler.test_retry import SLA_GANGS

GANG_MSG = "tasks in gang are ready to be scheduled"
# The node summary of the first task that found no node, on n nodes none of which has a GPU left.
ORIGIN_GPU = ". Origin reason is {}: 0/{n} nodes are unavailable: {n} Insufficient nvidia.com/gpu."


# --------------------------------------------------------------------------- helpers


def new_engine(markers: bool = True) -> Engine:
    """An engine whose clusters run on markers (as the service says for a stream with markers) or not."""
    return Engine(SchedulerConfig(), on_markers=lambda _cluster: markers)


def feed(engine: Engine, lines: Iterable[str]) -> list[Decision]:
    out: list[Decision] = []
    for text in lines:
        out.extend(engine.handle(parse_event(text)).decisions)
    return out


def run(lines: Iterable[str], markers: bool = True) -> tuple[Engine, list[Decision]]:
    engine = new_engine(markers)
    return engine, feed(engine, lines)


def view(decisions: Iterable[Decision]) -> list[dict[str, Any]]:
    """The decisions as the contract's JSON objects, without the id (checked on its own)."""
    out = []
    for d in decisions:
        item = d.to_dict()
        assert isinstance(item.pop("id"), str)
        out.append(item)
    return out


def bind(
    seq: int, pod: str, node: str, *, ns: str = "ns", uid: str | None = None, cluster: str = "c1"
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "seq": seq,
        "kind": "Bind",
        "target": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": pod, "uid": uid or f"uid-{pod}"},
        "reason": "Scheduled",
        "node": node,
    }


def waits(seq: int, pod: str, message: str) -> dict[str, Any]:
    """A lone pod's PodStatus: it could not be placed, and why (issue 12 item 5)."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    target = bind(seq, pod, "")["target"]
    return {"cluster": "c1", "seq": seq, "kind": "PodStatus", "target": target, "reason": "Unschedulable",
            "conditions": [condition]}  # fmt: skip


def pg_status(
    seq: int, group: str, phase: str, conditions: list[tuple[str, str, str]], *, ns: str = "ns", cluster: str = "c1"
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "seq": seq,
        "kind": "PodGroupStatus",
        "target": {
            "apiVersion": b.VOLCANO_PG,
            "kind": "PodGroup",
            "namespace": ns,
            "name": group,
            "uid": f"uid-{group}",
        },
        "reason": conditions[0][1] if conditions else phase,
        "phase": phase,
        "conditions": [{"type": t, "status": "True", "reason": r, "message": m} for t, r, m in conditions],
    }


def running(seq: int, group: str, ns: str = "ns") -> dict[str, Any]:
    # Volcano's own wording: the sentence is the condition's reason, its message is empty.
    status = pg_status(seq, group, "Running", [("Scheduled", GANG_MSG, "")], ns=ns)
    return {**status, "reason": "GangScheduled"}


def job_status(seq: int, job: str, phase: str, ns: str = "ns") -> dict[str, Any]:
    target = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "namespace": ns,
        "name": job,
        "uid": f"uid-{job}",
    }
    return {
        "cluster": "c1",
        "seq": seq,
        "kind": "JobStatus",
        "target": target,
        "reason": f"PodGroup{phase}",
        "phase": phase,
    }


def unschedulable(seq: int, group: str, message: str, ns: str = "ns", phase: str = "Inqueue") -> dict[str, Any]:
    # A gang without minResources is admitted (Inqueue) at once and then waits for nodes.
    return pg_status(seq, group, phase, [("Unschedulable", "NotEnoughResources", message)], ns=ns)


def snapshot(engine: Engine, cluster: str = "c1") -> dict[str, Any]:
    """What the cluster state holds, in a comparable form."""
    state = engine.state(cluster)
    return {
        "objects": {
            kind: {key: (obj.metadata.uid, obj.metadata.resource_version) for key, obj in sorted(store.items())}
            for kind, store in sorted(state.objects.items())
            if store
        },
        "tombstones": sorted(state.tombstones),
        # uid -> node of the binds we decided that the cluster has not confirmed yet
        "assumed": dict(sorted((s.uid, s.node) for s in state.machines.get("Pod", {}).values() if s.node)),
        # uid -> the last status we decided for each PodGroup
        "pod_group_status": dict(
            sorted((s.uid, s.reported) for s in state.machines.get("PodGroup", {}).values() if s.reported is not None)
        ),
    }


def gpu_nodes(count: int, gpu: str = "4") -> list[str]:
    return [b.added(b.node(f"n-{i}", gpu=gpu, rv=str(10 + i))) for i in range(count)]


def gang(group: str, size: int, *, gpu: str, min_member: int | None = None, job: str | None = None) -> list[str]:
    """A PodGroup and its pending pods, as ADDED lines."""
    lines = [b.added(b.pod_group(group, min_member=size if min_member is None else min_member, job=job))]
    lines += [b.added(b.pod(f"{group}-{i}", cpu="2", memory="4Gi", gpu=gpu, group=group, job=job)) for i in range(size)]
    return lines


# --------------------------------------------------------------------------- gangs


def test_gang_of_four_fits_on_three_nodes_all_together() -> None:
    lines = [*gpu_nodes(3), *gang("pg", 4, gpu="2"), b.marker(1), b.marker(2)]
    _, out = run(lines)
    # seq: 3 nodes (0-2), PodGroup (3), pods (4-7), first marker (8).
    assert view(out) == [
        bind(8, "pg-0", "n-0"),
        bind(8, "pg-1", "n-1"),
        bind(8, "pg-2", "n-2"),
        bind(8, "pg-3", "n-0"),
        running(8, "pg"),
    ]


def test_gang_that_fits_only_partly_binds_nothing() -> None:
    # Each pod wants 3 of a node's 4 GPUs: three would fit, the gang of four does not.
    lines = [*gpu_nodes(3), *gang("pg", 4, gpu="3"), b.marker(1)]
    _, out = run(lines)
    assert view(out) == [
        unschedulable(
            8, "pg", "1/4 tasks in gang unschedulable: 1 Insufficient nvidia.com/gpu" + ORIGIN_GPU.format("pg-3", n=3)
        )
    ]


def test_gang_that_cannot_fit_says_why_once() -> None:
    lines = [*gpu_nodes(2), *gang("pg", 2, gpu="8"), b.marker(1), b.marker(2), b.marker(3)]
    _, out = run(lines)
    assert view(out) == [
        unschedulable(
            5, "pg", "2/2 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu" + ORIGIN_GPU.format("pg-0", n=2)
        )
    ]


def test_waiting_gang_reports_a_new_reason_and_then_runs_when_a_node_arrives() -> None:
    lines = [
        *gpu_nodes(1),
        *gang("pg", 2, gpu="4"),
        b.marker(1),  # seq 4: one pod would fit, the gang would not
        b.added(b.node("big", gpu="4", cpu="8")),
        b.marker(2),  # seq 6: now it fits
        b.marker(3),
    ]
    _, out = run(lines)
    assert view(out) == [
        unschedulable(
            4, "pg", "1/2 tasks in gang unschedulable: 1 Insufficient nvidia.com/gpu" + ORIGIN_GPU.format("pg-1", n=1)
        ),
        bind(6, "pg-0", "big"),
        bind(6, "pg-1", "n-0"),
        running(6, "pg"),
    ]


def test_two_gangs_compete_and_the_one_left_waits() -> None:
    lines = [*gpu_nodes(2), *gang("a", 2, gpu="4"), *gang("b", 2, gpu="4"), b.marker(1)]
    _, out = run(lines)
    assert view(out) == [
        bind(8, "a-0", "n-0"),
        bind(8, "a-1", "n-1"),
        running(8, "a"),
        unschedulable(
            8, "b", "2/2 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu" + ORIGIN_GPU.format("b-0", n=2)
        ),
    ]


def test_gang_with_too_few_tasks_waits_for_them() -> None:
    lines = [*gpu_nodes(2), *gang("pg", 2, gpu="1", min_member=3), b.marker(1), b.marker(2)]
    _, out = run(lines)
    assert view(out) == [
        pg_status(
            5,
            "pg",
            "Pending",
            [("Unschedulable", "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 2, min: 3")],
        )
    ]


def test_pod_whose_podgroup_does_not_exist_yet_waits() -> None:
    pods = [b.added(b.pod(f"pg-{i}", gpu="1", group="pg")) for i in range(2)]
    lines = [*gpu_nodes(1), *pods, b.marker(1), b.marker(2), b.added(b.pod_group("pg", min_member=2)), b.marker(3)]
    _, out = run(lines)
    assert view(out) == [bind(6, "pg-0", "n-0"), bind(6, "pg-1", "n-0"), running(6, "pg")]


def test_pod_of_another_scheduler_is_never_bound_but_uses_its_node() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod("kube-app", cpu="3", scheduler="default-scheduler", node_name="n-0", phase="Running")),
        b.added(b.pod("kube-pending", cpu="1", scheduler="default-scheduler")),
        b.added(b.pod("mine", cpu="2")),
        b.marker(1),  # seq 4: only 1 cpu is left on n-0
        b.added(b.node("n-1", cpu="4")),
        b.marker(2),  # seq 6
    ]
    _, out = run(lines)
    cpu = "0/1 nodes are unavailable: 1 Insufficient cpu."
    assert view(out) == [waits(4, "mine", cpu), bind(6, "mine", "n-1")]


def test_finished_pods_free_their_node() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod("done", cpu="4", node_name="n-0", phase="Succeeded")),
        b.added(b.pod("mine", cpu="4")),
        b.marker(1),
    ]
    _, out = run(lines)
    assert view(out) == [bind(3, "mine", "n-0")]


def test_our_binds_use_the_node_before_the_cluster_confirms_them() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod("first", cpu="3")),
        b.marker(1),  # seq 2: first -> n-0
        b.added(b.pod("second", cpu="3")),
        b.marker(2),  # seq 4: n-0 holds first (assumed) already
        b.modified(b.pod("first", cpu="3", node_name="n-0", phase="Running", rv="2")),
        b.marker(3),  # seq 6: confirmed, still full
    ]
    _, out = run(lines)
    assert view(out) == [bind(2, "first", "n-0"), waits(4, "second", "0/1 nodes are unavailable: 1 Insufficient cpu.")]


# --------------------------------------------------------------------------- when cycles run


def test_without_markers_a_cycle_runs_after_every_event() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod("a", cpu="1")),
        b.added(b.pod("b", cpu="1")),
        b.added(b.pod("c", cpu="9")),
    ]
    _, out = run(lines, markers=False)
    cpu = "0/1 nodes are unavailable: 1 Insufficient cpu."
    assert view(out) == [bind(1, "a", "n-0"), bind(2, "b", "n-0"), waits(3, "c", cpu)]


def test_with_markers_cycles_run_only_at_markers() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod("a", cpu="1")),
        b.added(b.pod("b", cpu="1")),
        b.marker(1),
        b.added(b.pod("c", cpu="1")),
    ]
    _, out = run(lines, markers=True)
    assert view(out) == [bind(3, "a", "n-0"), bind(3, "b", "n-0")]


@pytest.mark.parametrize(
    ("markers", "want_cycles"),
    [(False, [0, 1, 2, 3, 4, 5]), (True, [2, 5])],
    ids=["no-marker stream: after every event", "marker stream: at markers only"],
)
def test_cycle_count(monkeypatch: pytest.MonkeyPatch, markers: bool, want_cycles: list[int]) -> None:
    cycles: list[int] = []
    real = engine_module.run_cycle

    def spy(state: Any, cache: Any, config: SchedulerConfig, *, seq: int) -> list[Decision]:
        cycles.append(seq)
        return real(state, cache, config, seq=seq)

    monkeypatch.setattr(engine_module, "run_cycle", spy)
    lines = [
        b.added(b.node("n-0")),
        b.event("BOOKMARK", {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "9"}}),
        b.marker(1) if markers else b.added(b.pod("x")),
        b.added({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
        b.added(b.pod("y")),
        b.marker(2) if markers else b.added(b.pod("z")),
    ]
    run(lines, markers=markers)
    assert cycles == want_cycles


def test_a_cluster_switches_to_markers_at_its_first_marker() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod("early", cpu="1")),  # seq 1: no marker seen yet, a cycle runs
        b.marker(1),  # seq 2
        b.added(b.pod("late", cpu="1")),  # seq 3: no cycle any more
        b.marker(2),  # seq 4
    ]
    _, out = run(lines, markers=False)
    assert view(out) == [bind(1, "early", "n-0"), bind(4, "late", "n-0")]


def test_seq_counts_each_clusters_events_on_its_own() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4"), cluster="c1"),
        b.added(b.node("m-0", cpu="4"), cluster="c2"),
        b.added(b.pod("p", cpu="1"), cluster="c2"),
        b.marker(1, cluster="c2"),  # c2 seq 2
        b.added(b.pod("p", cpu="1"), cluster="c1"),
        b.marker(1, cluster="c1"),  # c1 seq 2
    ]
    engine, out = run(lines)
    assert view(out) == [bind(2, "p", "m-0", cluster="c2"), bind(2, "p", "n-0", cluster="c1")]
    assert engine.state("c1").next_seq == 3
    assert engine.state("c2").next_seq == 3


def test_handle_reports_cluster_and_seq() -> None:
    engine = new_engine()
    got = [engine.handle(parse_event(text)) for text in (b.added(b.node("n")), b.marker(1), b.marker(1, "c9"))]
    assert [(p.cluster, p.seq, p.decisions) for p in got] == [("c1", 0, []), ("c1", 1, []), ("c9", 0, [])]


# --------------------------------------------------------------------------- determinism and ids


def _busy_stream() -> list[str]:
    return [
        *gpu_nodes(3),
        *gang("a", 4, gpu="2"),
        *gang("b", 2, gpu="8"),
        b.added(b.pod("lone", cpu="1")),
        b.marker(1),
        b.modified(b.pod("a-0", cpu="2", memory="4Gi", gpu="2", group="a", node_name="n-0", phase="Running", rv="2")),
        b.added(b.node("n-9", gpu="8", rv="20")),
        b.marker(2),
        b.added(b.pod("lone-2", cpu="1")),
        b.marker(3),
    ]


def test_replay_into_a_fresh_engine_gives_identical_decisions() -> None:
    first = run(_busy_stream())[1]
    second = run(_busy_stream())[1]
    assert first == second
    assert [d.id for d in first] == [d.id for d in second]
    assert len(first) > 5


def test_decision_ids_are_unique() -> None:
    _, out = run(_busy_stream())
    ids = [d.id for d in out]
    assert len(ids) == len(set(ids))
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_bytes_and_text_lines_give_the_same_decisions() -> None:
    lines = _busy_stream()
    engine_a, engine_b = new_engine(), new_engine()
    a = [d for text in lines for d in engine_a.handle(parse_event(text)).decisions]
    b_ = [d for text in lines for d in engine_b.handle(parse_event(text.encode())).decisions]
    assert a == b_


# --------------------------------------------------------------------------- S1: cascade deletion


@dataclass(frozen=True)
class Cascade:
    name: str
    gpu: str
    want_before: list[dict[str, Any]]
    confirm: list[str] = field(default_factory=list)


def _cascade_pod(i: int, gpu: str, **kwargs: Any) -> dict[str, Any]:
    return b.pod(f"train-pg-{i}", cpu="2", memory="4Gi", gpu=gpu, group="train-pg", job="train", **kwargs)


CASCADES = [
    Cascade(
        "a running gang",
        gpu="1",
        want_before=[
            bind(6, "train-pg-0", "n-0"),
            bind(6, "train-pg-1", "n-1"),
            running(6, "train-pg"),
            job_status(6, "train", "Running"),  # the Job follows its PodGroup
        ],
        confirm=[
            b.modified(_cascade_pod(0, "1", node_name="n-0", phase="Running", rv="2")),
            b.modified(_cascade_pod(1, "1", node_name="n-1", phase="Running", rv="2")),
        ],
    ),
    Cascade(
        "a gang waiting for resources",
        gpu="8",
        want_before=[
            unschedulable(
                6,
                "train-pg",
                "2/2 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu" + ORIGIN_GPU.format("train-pg-0", n=2),
            )
        ],
    ),
]


def _setup(cascade: Cascade) -> list[str]:
    pods = [b.added(_cascade_pod(i, cascade.gpu)) for i in range(2)]
    return [
        *gpu_nodes(2),
        b.added(b.job("train", min_available=2)),
        b.added(b.pod_group("train-pg", min_member=2, job="train")),
        *pods,
        b.marker(1),  # seq 6
        *cascade.confirm,
        b.marker(2),
    ]


def _job_terminating() -> str:
    return b.modified(b.job("train", min_available=2, rv="3", deleted_at=10))


def _deletions(cascade: Cascade) -> list[str]:
    return [
        b.deleted(_cascade_pod(0, cascade.gpu, rv="4", deleted_at=10)),
        b.deleted(_cascade_pod(1, cascade.gpu, rv="4", deleted_at=10)),
        b.deleted(b.pod_group("train-pg", min_member=2, job="train", rv="4", deleted_at=10)),
        b.deleted(b.job("train", min_available=2, rv="4", deleted_at=10)),
    ]


def _with_markers(events: Iterable[str], start: int = 100) -> list[str]:
    return [text for i, event in enumerate(events) for text in (event, b.marker(start + i))]


def _final_snapshot_after_cascade() -> dict[str, Any]:
    return {
        "objects": {"Node": {"n-0": ("uid-n-0", "10"), "n-1": ("uid-n-1", "11")}},
        "tombstones": sorted(["uid-train", "uid-train-pg", "uid-train-pg-0", "uid-train-pg-1"]),
        "assumed": {},
    }


@pytest.mark.parametrize("cascade", CASCADES, ids=lambda c: c.name)
def test_s1_cascade_in_the_usual_order_writes_no_status(cascade: Cascade) -> None:
    pod0, pod1, group, job = _deletions(cascade)
    lines = [
        *_setup(cascade),
        _job_terminating(),
        b.marker(10),
        pod0,
        b.marker(11),
        pod1,
        b.marker(12),  # the PodGroup exists and owns no task
        b.marker(13),
        group,
        b.marker(14),
        job,
        b.marker(15),
    ]
    engine, out = run(lines)
    assert view(out) == cascade.want_before
    got = snapshot(engine)
    assert {k: got[k] for k in ("objects", "tombstones", "assumed")} == _final_snapshot_after_cascade()


@pytest.mark.parametrize("markers", [True, False], ids=["with markers", "without markers"])
@pytest.mark.parametrize("cascade", CASCADES, ids=lambda c: c.name)
def test_s1_every_order_of_the_deletions_ends_the_same(cascade: Cascade, markers: bool) -> None:
    setup = [*_setup(cascade), _job_terminating(), b.marker(10)]
    results = []
    for order in itertools.permutations(_deletions(cascade)):
        engine, out = run([*setup, *_with_markers(order)], markers=markers)
        results.append((order, view(out), snapshot(engine)))
    baseline_view, baseline_state = results[0][1], results[0][2]
    if markers:
        assert baseline_view == cascade.want_before
    assert {k: baseline_state[k] for k in ("objects", "tombstones", "assumed")} == _final_snapshot_after_cascade()
    for order, got_view, got_state in results:
        assert got_view == baseline_view, order
        assert got_state == baseline_state, order


@pytest.mark.parametrize("cascade", CASCADES, ids=lambda c: c.name)
def test_s1_any_order_of_pod_podgroup_and_job_events_gives_the_same_decisions(cascade: Cascade) -> None:
    """SEEDS S1 read literally: the Job's own deletionTimestamp event may also arrive late."""
    outcomes: dict[str, list[tuple[str, ...]]] = {}
    for order in itertools.permutations([_job_terminating(), *_deletions(cascade)]):
        _, out = run([*_setup(cascade), *_with_markers(order)])
        after_setup = [f"{d.kind.value} {d.fields.get('conditions')}" for d in out[len(cascade.want_before) :]]
        outcomes.setdefault(repr(after_setup), []).append(order)
    assert list(outcomes) == ["[]"], {k: len(v) for k, v in outcomes.items()}


def test_s1_a_shrinking_podgroup_without_owner_gets_no_status_while_it_loses_its_tasks() -> None:
    # Losing tasks means the gang is being deleted or its controller is recreating them: either way a
    # NotEnoughTasks write would be noise, and whether it happened would depend on event order.
    lines = [
        *gpu_nodes(1),
        *gang("pg", 2, gpu="8"),
        b.marker(1),  # seq 4
        b.deleted(b.pod("pg-0", cpu="2", memory="4Gi", gpu="8", group="pg", rv="2")),
        b.marker(2),  # seq 6: one valid task left
        b.deleted(b.pod("pg-1", cpu="2", memory="4Gi", gpu="8", group="pg", rv="2")),
        b.marker(3),  # seq 8: no task left: nothing to say
        b.marker(4),
        b.deleted(b.pod_group("pg", min_member=2, rv="2")),
        b.marker(5),
    ]
    engine, out = run(lines)
    assert view(out) == [
        unschedulable(
            4, "pg", "2/2 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu" + ORIGIN_GPU.format("pg-0", n=1)
        )
    ]
    assert engine.state("c1").of_kind("PodGroup") == {}


def test_a_podgroup_that_never_had_enough_tasks_says_so() -> None:
    lines = [*gpu_nodes(1), *gang("pg", 1, gpu="1", min_member=2), b.marker(1)]
    _, out = run(lines)
    assert view(out) == [
        pg_status(
            3,
            "pg",
            "Pending",
            [("Unschedulable", "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 1, min: 2")],
        )
    ]


# --------------------------------------------------------------------------- object identity


def test_deleted_object_stays_deleted_after_a_stale_modified() -> None:
    lines = [
        b.added(b.pod("p", cpu="1", rv="1")),
        b.deleted(b.pod("p", cpu="1", rv="2")),
        b.modified(b.pod("p", cpu="1", rv="3")),  # same uid, even a higher version: the object is gone
        b.added(b.node("n-0")),
        b.marker(1),
    ]
    engine, out = run(lines)
    assert view(out) == []
    state = engine.state("c1")
    assert state.pods() == {}
    assert state.counters["stale_after_delete"] == 1


def test_new_uid_under_an_old_name_is_a_new_object() -> None:
    lines = [
        b.added(b.node("n-0", cpu="2")),
        b.added(b.pod("p", cpu="2", uid="u1", rv="1")),
        b.marker(1),  # seq 2: u1 -> n-0
        b.added(b.pod("p", cpu="2", uid="u2", rv="5")),  # recreated; u1 is gone and frees n-0
        b.marker(2),  # seq 4: u2 -> n-0
        b.modified(b.pod("p", cpu="2", uid="u1", node_name="n-0", phase="Running", rv="6")),  # stale: old uid
        b.marker(3),
    ]
    engine, out = run(lines)
    assert view(out) == [bind(2, "p", "n-0", uid="u1"), bind(4, "p", "n-0", uid="u2")]
    assert out[0].id != out[1].id
    state = engine.state("c1")
    assert {k: p.metadata.uid for k, p in state.pods().items()} == {"ns/p": "u2"}
    assert "u1" in state.tombstones
    assert [(s.uid, s.node) for s in state.machines["Pod"].values() if s.node] == [("u2", "n-0")]


@pytest.mark.parametrize("markers", [True, False], ids=["with markers", "without markers"])
def test_duplicate_events_change_nothing(markers: bool) -> None:
    watch_lines = [*gpu_nodes(3), *gang("a", 4, gpu="2"), *gang("b", 2, gpu="8"), b.added(b.pod("lone", cpu="1"))]
    engine, first = run([*watch_lines, b.marker(1)], markers=markers)
    before = snapshot(engine)
    again = feed(engine, [*watch_lines, *reversed(watch_lines), b.marker(2)])
    assert again == []
    assert snapshot(engine) == before
    assert len([d for d in first if d.kind.value == "Bind"]) == 5


def test_an_older_resource_version_is_ignored() -> None:
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod("p", cpu="1", node_name="n-0", phase="Running", rv="7")),
        b.modified(b.pod("p", cpu="1", rv="6")),  # older: pending again would mean a rebind
        b.marker(1),
    ]
    engine, out = run(lines)
    assert view(out) == []
    assert engine.state("c1").pods()["ns/p"].metadata.resource_version == "7"
    assert engine.state("c1").counters["stale_version"] == 1


def at(seconds: float) -> datetime:
    return b.T0 + timedelta(seconds=seconds)


def test_a_marker_is_idle_once_a_cycle_decided_nothing_and_nothing_came_since() -> None:
    """``Engine.idle``, which the worker's timer asks before it writes a marker. A pod too big for
    the only node: the first marker's cycle writes its status, so the next marker is not idle
    (the state it reads holds that decision); the next decides nothing, and after it a marker at
    any later instant is idle (the default policy reads no clock) and indeed decides nothing. An
    event makes the next marker not idle; so is a cluster never seen, or one with no cycle yet."""
    engine, _ = run([b.added(b.node("n-0", cpu="4")), b.added(b.pod("big", cpu="8"))])
    assert not engine.idle("c1", at(1))
    assert feed(engine, [b.marker(1)]) != []
    assert not engine.idle("c1", at(2))
    assert feed(engine, [b.marker(2)]) == []
    assert engine.idle("c1", at(3)) and engine.idle("c1", at(10**6))
    assert feed(engine, [b.marker(3)]) == []
    feed(engine, [b.added(b.node("n-1", cpu="16"))])
    assert not engine.idle("c1", at(4))
    assert [d.kind.value for d in feed(engine, [b.marker(4)])][:1] == ["Bind"]
    assert not engine.idle("c2", at(5))


def test_a_bookmark_or_a_kind_we_skip_leaves_the_marker_idle() -> None:
    """The API server sends every watch a BOOKMARK about once a minute; it, or a line of a kind
    we do not schedule, changes nothing a cycle reads, so a quiet cluster stays idle after it
    (and a marker then indeed decides nothing), where a watch event of ours does not."""
    engine, _ = run([b.added(b.node("n-0", cpu="4")), b.added(b.pod("big", cpu="8")), b.marker(1), b.marker(2)])
    unknown = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": b.meta("d", "ns")}
    feed(engine, [json.dumps({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9"}},
                              "cluster": "c1"}), b.added(unknown)])  # fmt: skip
    counters = engine.state("c1").counters
    assert (counters["bookmarks"], counters["unknown_kind:apps/v1/Deployment"]) == (1, 1)
    assert engine.idle("c1", at(3))
    assert feed(engine, [b.marker(3)]) == []
    feed(engine, [b.modified(b.pod("big", cpu="8", rv="2"))])
    assert not engine.idle("c1", at(4))


def test_a_marker_is_idle_only_until_an_answer_the_cycle_read_of_the_clock_can_change() -> None:
    """``sla`` (30 s): a gang created at 0 that cannot fit waits; the quiet cycle at 10 reads that
    it is not past its waiting time, an answer that stands until 30: a marker is idle before 30,
    and not from 30 on, when the gang is past it (its room is held from then on)."""
    engine = Engine(SLA_GANGS, on_markers=lambda _cluster: True)
    group = b.pod_group("g", min_member=2)
    group["metadata"]["creationTimestamp"] = b.iso(0)
    pods = [b.pod(f"g-{i}", cpu="3", group="g") for i in range(2)]
    feed(engine, [b.added(b.node("n-0", cpu="4")), b.added(group), *map(b.added, pods), b.marker(1)])
    assert feed(engine, [b.marker(10)]) == []
    assert engine.idle("c1", at(29.9))
    assert not engine.idle("c1", at(30))
    assert not engine.idle("c1", at(31))


def test_cycles_that_raise_in_a_row_are_counted_until_a_cycle_ends_and_quiet_ones_until_a_watch_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Engine.failing``: while a pod the cycle cannot handle is there, each marker's cycle
    raises, and the failures count up, each with its instant, until a cycle runs to its end. Of
    them, the quiet ones (what the worker's timer backs off by) count only while nothing comes: a
    watch event in between or since starts them again (the object may have changed), a bookmark
    does not."""
    monkeypatch.setattr(engine_module, "run_cycle", poisoned(engine_module.run_cycle))
    engine, _ = run([b.added(b.node("n-0", cpu="4")), b.added(b.pod("poison", cpu="1")), b.added(b.pod("p", cpu="1"))])
    assert engine.failing("c1") is None  # no cycle yet
    assert engine.handle(parse_event(b.marker(1))).cycle_failure
    assert engine.failing("c1") == (1, 1, at(1).timestamp())
    feed(engine, [b.marker(2)])
    feed(engine, [json.dumps({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9"}},
                              "cluster": "c1"})])  # fmt: skip
    feed(engine, [b.marker(4)])
    assert engine.failing("c1") == (3, 3, at(4).timestamp())
    feed(engine, [b.modified(b.pod("poison", cpu="2", rv="2"))])
    assert engine.failing("c1") == (3, 0, at(4).timestamp())  # something came: the next marker is worth a try
    feed(engine, [b.marker(5)])
    assert engine.failing("c1") == (4, 1, at(5).timestamp())
    feed(engine, [b.deleted(b.pod("poison", cpu="2", rv="3"))])
    assert [d.kind.value for d in feed(engine, [b.marker(6)])] == ["Bind"]
    assert engine.failing("c1") is None
    assert engine.failing("c2") is None  # a cluster never seen
