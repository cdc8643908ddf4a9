"""domain.state.ClusterState: informer semantics and the machines folded into it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from domain.engine import Engine
from domain.events import parse_event
from domain.lifecycle.job import JobPhase
from domain.lifecycle.node import NodePhase
from domain.lifecycle.pod import PodPhase
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.workload import WorkloadPhase
from domain.objects.meta import ObjectKey
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from tests import builders as b


def fold(lines: Iterable[str], markers: bool = True) -> tuple[ClusterState, list[Any]]:
    engine = Engine(SchedulerConfig(), on_markers=lambda _: markers)
    out = [d for line in lines for d in engine.handle(parse_event(line)).decisions]
    return engine.state("c1"), out


def phases(state: ClusterState) -> dict[str, dict[str, str]]:
    return {
        kind: {key: status.phase.value for key, status in sorted(store.items())}
        for kind, store in sorted(state.machines.items())
        if store
    }


def test_every_object_of_a_kind_with_a_machine_carries_its_phase() -> None:
    state, _ = fold(
        [
            b.added(b.node("n-0")),
            b.added(b.node("n-1", unschedulable=True)),
            b.added(b.job("j")),
            b.added(b.pod_group("g", phase="Inqueue")),
            b.added(b.pod("p", node_name="n-0", phase="Running")),
            b.added(b.queue("q", state="Closed")),
            b.added({"apiVersion": "v1", "kind": "Namespace", "metadata": b.meta("ns")}),
        ]
    )
    assert phases(state) == {
        "Job": {"ns/j": "Pending"},
        "Node": {"n-0": "Ready", "n-1": "Unschedulable"},
        "Pod": {"ns/p": "Running"},
        "PodGroup": {"ns/g": "Inqueue"},
        "Queue": {"q": "Closed"},
    }
    assert "Namespace" not in state.machines
    assert state.of_kind("Namespace")


def test_a_duplicate_event_is_a_no_op() -> None:
    line = b.added(b.pod("p", rv="3"))
    state, _ = fold([line, line, b.modified(b.pod("p", rv="3", phase="Running", node_name="x"))])
    assert state.pods()[ObjectKey("ns/p")].status.phase == "Pending"
    assert state.counters["duplicate"] == 2
    assert phases(state)["Pod"] == {"ns/p": "Pending"}


def test_a_relist_of_known_objects_is_idempotent_and_takes_newer_versions() -> None:
    objects = [b.node("n-0", rv="1"), b.pod("p", rv="2"), b.pod_group("g", rv="3")]
    first, _ = fold([b.added(o) for o in objects])
    state, _ = fold([*(b.added(o) for o in objects), *(b.added(o) for o in objects)])
    assert phases(state) == phases(first)
    assert state.counters["duplicate"] == 3
    relisted, _ = fold([*(b.added(o) for o in objects), b.added(b.pod("p", rv="9", node_name="n-0"))])
    assert phases(relisted)["Pod"] == {"ns/p": "Bound"}


def test_an_older_resource_version_changes_nothing() -> None:
    state, _ = fold([b.added(b.pod("p", rv="7", node_name="n", phase="Running")), b.modified(b.pod("p", rv="6"))])
    assert phases(state)["Pod"] == {"ns/p": "Running"}
    assert state.counters["stale_version"] == 1


def test_a_deleted_unknown_object_leaves_a_tombstone_that_a_late_added_cannot_pass() -> None:
    state, _ = fold([b.deleted(b.pod("p", rv="5")), b.added(b.pod("p", rv="4")), b.modified(b.pod("p", rv="6"))])
    assert state.pods() == {}
    assert state.machines.get("Pod", {}) == {}
    assert state.tombstones == {"uid-p"}
    assert (state.counters["deleted_unknown"], state.counters["stale_after_delete"]) == (1, 2)


def test_a_duplicate_deleted_changes_nothing() -> None:
    state, _ = fold([b.added(b.pod("p")), b.deleted(b.pod("p", rv="2")), b.deleted(b.pod("p", rv="2"))])
    assert state.pods() == {}
    assert state.tombstones == {"uid-p"}
    assert state.counters["stale_after_delete"] == 1


def test_a_new_uid_under_an_old_name_is_a_new_object_with_a_new_machine() -> None:
    state, _ = fold(
        [
            b.added(b.pod("p", uid="u1", node_name="n", phase="Succeeded")),
            b.added(b.pod("p", uid="u2", rv="2")),
            b.modified(b.pod("p", uid="u1", rv="3", node_name="n", phase="Succeeded")),
        ]
    )
    assert state.pods()[ObjectKey("ns/p")].metadata.uid == "u2"
    status = state.machines["Pod"][ObjectKey("ns/p")]
    assert (status.uid, status.phase) == ("u2", PodPhase.PENDING)
    assert state.tombstones == {"u1"}
    assert (state.counters["recreated"], state.counters["stale_after_delete"]) == (1, 1)


def test_a_bookmark_only_advances_progress() -> None:
    before, _ = fold([b.added(b.pod("p"))])
    bookmark = b.event("BOOKMARK", {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "99"}})
    after, _ = fold([b.added(b.pod("p")), bookmark])
    assert after.objects == before.objects
    assert phases(after) == phases(before)
    assert after.counters["bookmarks"] == 1
    assert after.next_seq == before.next_seq + 1


def test_a_deletion_timestamp_makes_an_object_terminating_until_its_deleted_event() -> None:
    state, _ = fold(
        [
            b.added(b.job("j")),
            b.added(b.pod_group("g", job="j")),
            b.added(b.pod("p", node_name="n", phase="Running")),
            b.modified(b.job("j", rv="2", deleted_at=5)),
            b.modified(b.pod_group("g", job="j", rv="2", deleted_at=5)),
            b.modified(b.pod("p", node_name="n", phase="Running", rv="2", deleted_at=5)),
        ]
    )
    assert phases(state) == {
        "Job": {"ns/j": "Terminating"},
        "Pod": {"ns/p": "Terminating"},
        "PodGroup": {"ns/g": "Terminating"},
    }
    state, _ = fold([b.added(b.pod("p", deleted_at=5)), b.deleted(b.pod("p", rv="2", deleted_at=5))])
    assert state.machines["Pod"] == {}


def test_an_illegal_transition_is_recorded_counted_and_not_applied() -> None:
    state, _ = fold(
        [
            b.added(b.pod("p", node_name="n", phase="Succeeded")),
            b.modified(b.pod("p", node_name="n", phase="Running", rv="2")),  # a finished pod does not run again
        ]
    )
    status = state.machines["Pod"][ObjectKey("ns/p")]
    assert status.phase is PodPhase.SUCCEEDED
    assert status.illegal == "Pod: ObservedRunning is not legal in phase Succeeded"
    assert state.pods()[ObjectKey("ns/p")].metadata.resource_version == "1"
    assert (state.counters["illegal_transition"], state.counters["illegal_transition:Pod"]) == (1, 1)


def test_a_terminated_job_regressing_is_refused() -> None:
    finished = {**b.job("j"), "status": {"state": {"phase": "Completed"}}}
    again = {**b.job("j", rv="2"), "status": {"state": {"phase": "Running"}}}
    state, _ = fold([b.added(finished), b.modified(again)])
    assert state.machines["Job"][ObjectKey("ns/j")].phase is JobPhase.COMPLETED
    assert state.counters["illegal_transition:Job"] == 1


def test_our_bind_moves_the_pod_to_bound_until_the_cluster_confirms_it() -> None:
    state, out = fold(
        [
            b.added(b.node("n-0")),
            b.added(b.pod("p")),
            b.marker(1),  # seq 2: bind
            b.modified(b.pod("p", rv="2", phase="Pending")),  # an update that predates the bind's write
        ]
    )
    status = state.machines["Pod"][ObjectKey("ns/p")]
    assert [d.kind.value for d in out] == ["Bind"]
    assert (status.phase, status.node, status.since_seq, status.since) == (
        PodPhase.BOUND,
        "n-0",
        2,
        b.T0 + b.timedelta(seconds=1),
    )
    state2, _ = fold(
        [
            b.added(b.node("n-0")),
            b.added(b.pod("p")),
            b.marker(1),
            b.modified(b.pod("p", rv="2", node_name="n-0", phase="Running")),
        ]
    )
    confirmed = state2.machines["Pod"][ObjectKey("ns/p")]
    assert (confirmed.phase, confirmed.node, confirmed.since_seq) == (PodPhase.RUNNING, "", 3)
    assert not any(s.node for s in state2.machines["Pod"].values())  # no bind of ours waits


def test_a_podgroup_status_decision_is_folded_into_its_machine() -> None:
    state, out = fold(
        [b.added(b.node("n-0", gpu="1")), b.added(b.pod_group("g", min_member=2))]
        + [b.added(b.pod(f"g-{i}", gpu="1", group="g")) for i in range(2)]
        + [b.marker(1)]
    )
    status = state.machines["PodGroup"][ObjectKey("ns/g")]
    # Enqueued (no minResources to reserve), then waiting for nodes: Inqueue with the reason.
    assert [d.fields["phase"] for d in out] == ["Inqueue"]
    assert status.phase is PodGroupPhase.INQUEUE
    assert status.reported is not None and status.reported[1][0][2] == "NotEnoughResources"
    assert status.peak_tasks == 2


def test_a_completed_podgroup_gets_no_status_decision_that_its_machine_refuses() -> None:
    state, out = fold(
        [
            b.added(b.node("n-0", gpu="1")),
            b.added(b.pod_group("g", phase="Completed")),
            b.added(b.pod("late", gpu="4", group="g")),
            b.marker(1),
        ]
    )
    assert out == []
    status = state.machines["PodGroup"][ObjectKey("ns/g")]
    assert status.phase is PodGroupPhase.COMPLETED
    assert status.illegal == "PodGroup: GangUnschedulable is not legal in phase Completed"
    assert state.counters["illegal_transition:PodGroup"] == 1


def test_a_node_moves_between_ready_unschedulable_and_not_ready() -> None:
    state, _ = fold([b.added(b.node("n")), b.modified(b.node("n", rv="2", unschedulable=True))])
    assert state.machines["Node"][ObjectKey("n")].phase is NodePhase.UNSCHEDULABLE
    state, _ = fold([b.added(b.node("n")), b.modified(b.node("n", rv="2", ready="False"))])
    assert state.machines["Node"][ObjectKey("n")].phase is NodePhase.NOT_READY


def _workload(rv: str, **conditions: str) -> dict[str, Any]:
    assignment = {"levels": ["kubernetes.io/hostname"], "domains": [{"values": ["n-1"], "count": 1}]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": b.meta("w", "ns", rv=rv),
        "spec": {"queueName": "lq"},
        "status": {
            "conditions": [{"type": t, "status": s} for t, s in conditions.items()],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "topologyAssignment": assignment}],
            },
            "unhealthyNodes": [{"name": "n-1"}],
        },
    }


def test_s3_a_second_pass_is_held_only_while_the_workload_holds_quota() -> None:
    state, _ = fold([b.added(_workload("1", QuotaReserved="True", Admitted="True"))])
    status = state.machines["Workload"][ObjectKey("ns/w")]
    assert (status.needs_second_pass, status.unhealthy_nodes) == (True, ("n-1",))
    state.apply(parse_event(b.modified(_workload("2", QuotaReserved="True", Admitted="True"))), seq=1)
    assert (status.needs_second_pass, status.unhealthy_nodes) == (True, ("n-1",))
    state.apply(parse_event(b.modified(_workload("3", Admitted="True", Finished="True"))), seq=2)
    assert status.phase is WorkloadPhase.FINISHED
    assert (status.needs_second_pass, status.unhealthy_nodes) == (False, ())
