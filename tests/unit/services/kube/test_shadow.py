"""Shadow mode's comparison (services/kube/shadow.py): our last decision per object and aspect
against the object as the watch stream last showed it."""

from __future__ import annotations

import json
from typing import Any

from services.kube.effects import merge_conditions
from services.kube.shadow import report
from tests.builders import pod, pod_group

KUEUE = "kueue.x-k8s.io/v1beta1"


def watch(type_: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "object": obj, "cluster": "c1"}


def decision(kind: str, obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    m = obj["metadata"]
    target = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "namespace": m["namespace"], "name": m["name"]}
    return {"id": f"{kind}-{m['name']}", "cluster": "c1", "seq": 1, "kind": kind, "target": target, **fields}


def workload(name: str, *, queue: str = "", reserved: str = "False", message: str = "") -> dict[str, Any]:
    cond = {"type": "QuotaReserved", "status": reserved, "reason": "QuotaReserved" if queue else "Pending",
            "message": message}  # fmt: skip
    status: dict[str, Any] = {"conditions": [cond]}
    if queue:
        status["admission"] = {"clusterQueue": queue, "podSetAssignments": []}
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    return {"apiVersion": KUEUE, "kind": "Workload", "metadata": meta, "spec": {}, "status": status}


def test_the_report_counts_agreement_and_gives_both_sides_reasons_for_each_difference() -> None:
    unschedulable = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                     "message": "2/2 tasks in gang unschedulable"}  # fmt: skip
    same, moved, theirs_only, ours_only = (pod(f"p{i}", group="g2" if i == 2 else None) for i in range(4))
    events = [watch("ADDED", p) for p in (same, moved, theirs_only, ours_only)]
    events += [
        watch("MODIFIED", {**same, "spec": {**same["spec"], "nodeName": "n1"}}),
        watch("MODIFIED", {**moved, "spec": {**moved["spec"], "nodeName": "n2"}}),
        watch("MODIFIED", {**theirs_only, "spec": {**theirs_only["spec"], "nodeName": "n3"}}),
        watch("ADDED", pod_group("g1", phase="Running")),
        watch("ADDED", workload("w-same", queue="cq", reserved="True")),
        watch("ADDED", workload("w-other", reserved="False", message="waiting for quota")),
    ]
    waiting = {**ours_only, "status": {"conditions": [{"type": "PodScheduled", "status": "False",
               "reason": "Unschedulable", "message": "0/3 nodes are available"}]}}  # fmt: skip
    events.append(watch("MODIFIED", waiting))
    admission = {"clusterQueue": "cq", "podSetAssignments": []}
    reserved = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "in cq"}]
    decisions = [
        decision("Bind", same, node="n1", reason="Scheduled"),
        decision("Bind", moved, node="n1", reason="Scheduled"),
        decision("Bind", ours_only, node="n4", reason="Scheduled"),
        decision("PodGroupStatus", pod_group("g1"), phase="Inqueue", reason="x", conditions=[unschedulable]),
        decision("PodGroupStatus", pod_group("g2"), phase="Inqueue", reason="x", conditions=[unschedulable]),
        decision(
            "WorkloadStatus", workload("w-same"), reason="QuotaReserved", conditions=reserved, admission=admission
        ),
        decision(
            "WorkloadStatus", workload("w-other"), reason="QuotaReserved", conditions=reserved, admission=admission
        ),
        decision("Reject", same, reason="Invalid"),  # not an aspect a scheduler shares: not compared
    ]

    result = report(events, decisions, "volcano")

    lines = [c.line() for c in result.differences]
    assert lines == [
        "DIFFERS Pod ns/p1 node: ours n1 [Scheduled] | cluster n2",
        "DIFFERS Pod ns/p3 node: ours n4 [Scheduled] | cluster (none) "
        "[PodScheduled=False Unschedulable: 0/3 nodes are available]",
        "DIFFERS PodGroup ns/g1 phase: ours Inqueue [Unschedulable=True NotEnoughResources: 2/2 tasks in gang "
        "unschedulable] | cluster Running",
        "DIFFERS PodGroup ns/g2 phase: ours Inqueue [Unschedulable=True NotEnoughResources: 2/2 tasks in gang "
        "unschedulable] | cluster (none) [never seen on the cluster]",
        "DIFFERS Workload ns/w-other admission: ours cq [QuotaReserved=True QuotaReserved: in cq] | cluster (none) "
        "[QuotaReserved=False Pending: waiting for quota]",
        "DIFFERS Pod ns/p2 node: ours (none) [gang g2: Unschedulable=True NotEnoughResources: 2/2 tasks in gang "
        "unschedulable] | cluster n3",
    ]
    assert (len(result.comparisons), result.agreed) == (8, 2)
    assert result.text().splitlines()[0] == "shadow: 8 compared, 2 agree (25.0%)"
    assert json.loads(result.json())["rate"] == 0.25


def test_a_pod_another_scheduler_owns_is_not_counted_when_it_binds() -> None:
    other = pod("p", scheduler="default-scheduler", node_name="n1")
    assert report([watch("ADDED", other)], [], "volcano").comparisons == []


def test_conditions_are_set_by_type_and_their_time_moves_only_when_the_status_does() -> None:
    current = [
        {"type": "Scheduled", "status": "False", "reason": "a", "message": "", "lastTransitionTime": "t0"},
        {"type": "Other", "status": "True", "reason": "kept", "message": "", "lastTransitionTime": "t0"},
    ]
    same_status = [{"type": "Scheduled", "status": "False", "reason": "b", "message": "m"}]
    merged, changed = merge_conditions(current, same_status, "t1")
    assert changed
    assert merged[0] == {
        "type": "Scheduled",
        "status": "False",
        "reason": "b",
        "message": "m",
        "lastTransitionTime": "t0",
    }
    assert merged[1] == current[1]

    flipped, changed = merge_conditions(
        merged, [{"type": "Scheduled", "status": "True", "reason": "b", "message": "m"}], "t2"
    )
    assert changed
    assert flipped[0]["lastTransitionTime"] == "t2"

    again, changed = merge_conditions(
        flipped, [{"type": "Scheduled", "status": "True", "reason": "b", "message": "m"}], "t3"
    )
    assert (again, changed) == (flipped, False)
