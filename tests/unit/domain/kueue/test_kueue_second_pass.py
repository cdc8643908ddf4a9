"""S3: the second-pass truth table of issue 5, for the rule and through the Workload machine
(the status field is derived in the fold that changes the status)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from domain.events import parse_event
from domain.kueue.workload_status import status_decision
from domain.lifecycle.workload import WorkloadView, needs_second_pass, view_of
from domain.objects.meta import ObjectKey
from domain.state import ClusterState
from tests import builders as b

HOST = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Case:
    name: str
    conditions: dict[str, str]
    want_second_pass: bool
    unhealthy: tuple[str, ...] = ()
    checks: tuple[tuple[str, str], ...] = ()
    delayed: bool = False
    reasons: dict[str, str] = field(default_factory=dict)


CASES = [
    Case(
        "admitted with an unhealthy node in its assignment",
        {"QuotaReserved": "True", "Admitted": "True"},
        True,
        ("n-1",),
    ),
    Case("admitted without unhealthy nodes", {"QuotaReserved": "True", "Admitted": "True"}, False),
    Case("unhealthy node outside the assignment", {"QuotaReserved": "True", "Admitted": "True"}, False, ("n-9",)),
    Case("finished", {"QuotaReserved": "True", "Admitted": "True", "Finished": "True"}, False, ("n-1",)),
    Case("evicted", {"QuotaReserved": "True", "Admitted": "True", "Evicted": "True"}, False, ("n-1",)),
    Case(
        "delayed topology with checks ready", {"QuotaReserved": "True"}, True, checks=(("prov", "Ready"),), delayed=True
    ),
    Case("checks still pending", {"QuotaReserved": "True"}, False, checks=(("prov", "Pending"),), delayed=True),
    Case("no quota", {"QuotaReserved": "False", "Admitted": "False"}, False, ("n-1",)),
    Case("on hold", {"QuotaReserved": "False"}, False, ("n-1",), reasons={"QuotaReserved": "OnHold"}),
]


def _admission(delayed: bool) -> dict[str, Any]:
    psa: dict[str, Any] = {"name": "main", "flavors": {"cpu": "tas"}, "count": 2}
    if delayed:
        psa["delayedTopologyRequest"] = "Pending"
    else:
        psa["topologyAssignment"] = {"levels": [HOST], "domains": [{"values": ["n-1"], "count": 2}]}
    return {"clusterQueue": "cq", "podSetAssignments": [psa]}


def _workload(case: Case) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": b.meta("w", "ns"),
        "spec": {"queueName": "lq"},
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": case.reasons.get(t, t)} for t, s in case.conditions.items()
            ],
            "admission": _admission(case.delayed),
            "unhealthyNodes": [{"name": n} for n in case.unhealthy],
            "admissionChecks": [{"name": n, "state": s} for n, s in case.checks],
        },
    }


def _view(case: Case) -> WorkloadView:
    return WorkloadView(
        conditions=tuple((t, s, case.reasons.get(t, t), "") for t, s in case.conditions.items()),
        admission=_admission(case.delayed),
        unhealthy_nodes=case.unhealthy,
        admission_checks=case.checks,
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_rule(case: Case) -> None:
    assert needs_second_pass(_view(case)) is case.want_second_pass


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_machine_holds_the_field_from_the_observed_status(case: Case) -> None:
    state = ClusterState("c1")
    state.apply(parse_event(b.added(_workload(case))), seq=0)
    status = state.machines["Workload"][ObjectKey("ns/w")]
    assert status.needs_second_pass is case.want_second_pass


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_machine_holds_the_field_from_a_decided_status(case: Case) -> None:
    state = ClusterState("c1")
    neutral = {**_workload(case), "status": {}}
    state.apply(parse_event(b.added(neutral)), seq=0)
    obj = state.of_kind("Workload")[ObjectKey("ns/w")]
    decision = status_decision(state, 1, obj, _view(case), "test")  # type: ignore[arg-type]
    assert state.record(decision)
    status = state.machines["Workload"][ObjectKey("ns/w")]
    assert status.needs_second_pass is case.want_second_pass
    assert state.workload_view(obj) == _view(case)  # type: ignore[arg-type]


def test_the_observed_view_reads_every_status_field() -> None:
    case = CASES[0]
    obj = b.typed(_workload(case))
    assert view_of(obj) == _view(case)  # type: ignore[arg-type]
