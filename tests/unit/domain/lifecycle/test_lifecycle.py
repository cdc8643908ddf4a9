"""domain.lifecycle: every machine's table, walked over every (phase, trigger) pair, and the
facts each kind's watched objects show."""

from __future__ import annotations

import itertools
from enum import StrEnum
from typing import Any

import pytest

from domain.lifecycle import job, node, pod, pod_group, queue, workload
from domain.lifecycle.catalog import MACHINES
from domain.lifecycle.table import IllegalTransition, Lifecycle, Row
from tests import builders as b

LIFECYCLES = [m.lifecycle for m in MACHINES.values()]
PAIRS = [(lc, phase, trigger) for lc in LIFECYCLES for phase, trigger in itertools.product(lc.phases, lc.triggers)]


def _is_legal(lc: Lifecycle[Any, Any], phase: StrEnum, trigger: StrEnum) -> bool:
    return any((row.source, row.trigger) == (phase, trigger) for row in lc.rows)


def _pair_id(case: tuple[Lifecycle[Any, Any], StrEnum, StrEnum]) -> str:
    lc, phase, trigger = case
    return f"{lc.kind}:{phase}+{trigger}"


@pytest.mark.parametrize("case", PAIRS, ids=_pair_id)
def test_every_phase_and_trigger_is_either_a_row_or_rejected_with_its_reason(
    case: tuple[Lifecycle[Any, Any], StrEnum, StrEnum],
) -> None:
    lc, phase, trigger = case
    rows = [row for row in lc.rows if (row.source, row.trigger) == (phase, trigger)]
    if rows:
        assert lc.step(phase, trigger) == rows[0].target
        assert _is_legal(lc, phase, trigger)
        return
    with pytest.raises(IllegalTransition) as raised:
        lc.step(phase, trigger)
    error = raised.value
    assert (error.kind, error.phase, error.trigger) == (lc.kind, phase, trigger)
    assert error.reason == f"{lc.kind}: {trigger} is not legal in phase {phase}"
    assert not _is_legal(lc, phase, trigger)


@pytest.mark.parametrize("lc", LIFECYCLES, ids=lambda lc: lc.kind)
def test_a_first_sighting_may_show_any_observed_state(lc: Lifecycle[Any, Any]) -> None:
    # Objects arrive with the status the cluster holds (CONTRACT 1): any state is a legal start.
    for trigger in lc.triggers:
        if trigger.value.startswith("Observed"):
            assert _is_legal(lc, lc.initial, trigger), trigger


@pytest.mark.parametrize("lc", LIFECYCLES, ids=lambda lc: lc.kind)
def test_deleted_is_reachable_from_every_phase_and_ends_the_machine(lc: Lifecycle[Any, Any]) -> None:
    deleted_phase, deleted_fact = lc.phases("Deleted"), lc.triggers("Deleted")
    for phase in lc.phases:
        if phase is not deleted_phase:
            assert lc.step(phase, deleted_fact) is deleted_phase
    assert lc.is_terminal(deleted_phase)
    assert [p for p in lc.phases if lc.is_terminal(p)] == [deleted_phase]


@pytest.mark.parametrize("lc", LIFECYCLES, ids=lambda lc: lc.kind)
def test_every_phase_is_reachable_and_every_trigger_used(lc: Lifecycle[Any, Any]) -> None:
    assert {row.target for row in lc.rows} | {lc.initial} == set(lc.phases)
    assert {row.trigger for row in lc.rows} == set(lc.triggers)


@pytest.mark.parametrize("lc", LIFECYCLES, ids=lambda lc: lc.kind)
def test_a_deletion_in_progress_is_terminating_where_the_kind_has_it(lc: Lifecycle[Any, Any]) -> None:
    if "DeletionStarted" not in {t.value for t in lc.triggers}:
        return
    for phase in lc.phases:
        if _is_legal(lc, phase, lc.triggers("DeletionStarted")):
            assert lc.step(phase, lc.triggers("DeletionStarted")).value in (
                "Terminating",
                "Closing",
                "Closed",
                "Rejected",
            )


@pytest.mark.parametrize(
    ("lc", "phase", "trigger"),
    [
        (pod.POD, pod.PodPhase.SUCCEEDED, pod.PodFact.BIND_DECIDED),
        (pod.POD, pod.PodPhase.BOUND, pod.PodFact.BIND_DECIDED),
        (pod.POD, pod.PodPhase.RUNNING, pod.PodFact.OBSERVED_PENDING),
        (pod.POD, pod.PodPhase.TERMINATING, pod.PodFact.OBSERVED_RUNNING),
        (pod_group.POD_GROUP, pod_group.PodGroupPhase.COMPLETED, pod_group.PodGroupFact.GANG_SCHEDULED),
        (pod_group.POD_GROUP, pod_group.PodGroupPhase.TERMINATING, pod_group.PodGroupFact.GANG_UNSCHEDULABLE),
        (pod_group.POD_GROUP, pod_group.PodGroupPhase.RUNNING, pod_group.PodGroupFact.OBSERVED_INQUEUE),
        (job.JOB, job.JobPhase.COMPLETED, job.JobFact.OBSERVED_RUNNING),
        (job.JOB, job.JobPhase.TERMINATING, job.JobFact.OBSERVED_PENDING),
        (queue.QUEUE, queue.QueuePhase.CLOSED, queue.QueueFact.CREATION_REFUSED),
        (workload.WORKLOAD, workload.WorkloadPhase.FINISHED, workload.WorkloadFact.OBSERVED_ADMITTED),
        (node.NODE, node.NodePhase.DELETED, node.NodeFact.OBSERVED_READY),
    ],
    ids=lambda v: str(getattr(v, "kind", v)),
)
def test_transitions_that_would_be_bugs_are_illegal(lc: Lifecycle[Any, Any], phase: StrEnum, trigger: StrEnum) -> None:
    with pytest.raises(IllegalTransition, match=f"{trigger} is not legal in phase {phase}"):
        lc.step(phase, trigger)


def test_a_rejected_queue_stays_rejected_whatever_its_status_claims() -> None:
    for fact in (queue.QueueFact.OBSERVED_OPEN, queue.QueueFact.OBSERVED_CLOSED, queue.QueueFact.DELETION_STARTED):
        assert queue.QUEUE.step(queue.QueuePhase.REJECTED, fact) is queue.QueuePhase.REJECTED


def test_a_table_refuses_two_rows_for_one_phase_and_trigger() -> None:
    p, f = pod.PodPhase, pod.PodFact
    rows = (Row(p.PENDING, f.DELETED, p.DELETED), Row(p.PENDING, f.DELETED, p.TERMINATING))
    with pytest.raises(ValueError, match="two rows for Deleted in Pending"):
        Lifecycle("Pod", p, f, p.PENDING, rows)


def test_a_table_refuses_members_of_another_enum() -> None:
    p, f = pod.PodPhase, pod.PodFact
    with pytest.raises(TypeError, match="is not a PodFact"):
        Lifecycle("Pod", p, f, p.PENDING, (Row(p.PENDING, node.NodeFact.DELETED, p.DELETED),))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- facts from objects


@pytest.mark.parametrize(
    ("wire", "want"),
    [
        (b.pod("p"), pod.PodFact.OBSERVED_PENDING),
        (b.pod("p", node_name="n"), pod.PodFact.OBSERVED_BOUND),
        (b.pod("p", node_name="n", phase="Running"), pod.PodFact.OBSERVED_RUNNING),
        (b.pod("p", node_name="n", phase="Succeeded"), pod.PodFact.OBSERVED_SUCCEEDED),
        (b.pod("p", node_name="n", phase="Failed"), pod.PodFact.OBSERVED_FAILED),
        (b.pod("p", node_name="n", phase="Failed", deleted_at=1), pod.PodFact.DELETION_STARTED),
        (b.pod("p", phase="Unknown"), pod.PodFact.OBSERVED_PENDING),
        (b.pod_group("g"), pod_group.PodGroupFact.OBSERVED_PENDING),
        (b.pod_group("g", phase="Inqueue"), pod_group.PodGroupFact.OBSERVED_INQUEUE),
        (b.pod_group("g", phase="Completed"), pod_group.PodGroupFact.OBSERVED_COMPLETED),
        (b.pod_group("g", phase="Running", deleted_at=1), pod_group.PodGroupFact.DELETION_STARTED),
        (b.job("j"), job.JobFact.OBSERVED_PENDING),
        ({**b.job("j"), "status": {"state": {"phase": "Aborted"}}}, job.JobFact.OBSERVED_ABORTED),
        ({**b.job("j"), "status": {}}, job.JobFact.OBSERVED_PENDING),
        (b.job("j", deleted_at=1), job.JobFact.DELETION_STARTED),
        (b.queue("q"), queue.QueueFact.OBSERVED_OPEN),
        (b.queue("q", state=""), queue.QueueFact.OBSERVED_OPEN),
        (b.queue("q", state="Closing"), queue.QueueFact.OBSERVED_CLOSING),
        (b.node("n"), node.NodeFact.OBSERVED_READY),
        (b.node("n", unschedulable=True), node.NodeFact.OBSERVED_UNSCHEDULABLE),
        (b.node("n", ready="Unknown", unschedulable=True), node.NodeFact.OBSERVED_NOT_READY),
        (b.node("n", ready=None), node.NodeFact.OBSERVED_READY),
    ],
    ids=lambda v: str(v) if isinstance(v, StrEnum) else v["kind"],
)
def test_the_fact_a_watched_object_shows(wire: dict[str, Any], want: StrEnum) -> None:
    obj = b.typed(wire)
    assert MACHINES[obj.kind].observe(obj) == want


def _workload(conditions: dict[str, str], active: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": b.meta("w", "ns"),
        "spec": {"queueName": "lq", "active": active},
        "status": {"conditions": [{"type": t, "status": s} for t, s in conditions.items()]},
    }


@pytest.mark.parametrize(
    ("conditions", "active", "want"),
    [
        ({}, True, workload.WorkloadFact.OBSERVED_PENDING),
        ({"QuotaReserved": "False"}, True, workload.WorkloadFact.OBSERVED_PENDING),
        ({"QuotaReserved": "True"}, True, workload.WorkloadFact.OBSERVED_QUOTA_RESERVED),
        ({"QuotaReserved": "True", "Admitted": "True"}, True, workload.WorkloadFact.OBSERVED_ADMITTED),
        ({"Admitted": "True", "Evicted": "True"}, True, workload.WorkloadFact.OBSERVED_EVICTED),
        ({"Requeued": "True"}, True, workload.WorkloadFact.OBSERVED_REQUEUED),
        ({"Admitted": "True"}, False, workload.WorkloadFact.OBSERVED_DEACTIVATED),
        ({"Admitted": "True", "Finished": "True"}, False, workload.WorkloadFact.OBSERVED_FINISHED),
    ],
)
def test_a_workloads_phase_follows_kueues_condition_precedence(
    conditions: dict[str, str], active: bool, want: workload.WorkloadFact
) -> None:
    obj = b.typed(_workload(conditions, active))
    assert workload.observe(obj) == want  # type: ignore[arg-type]
