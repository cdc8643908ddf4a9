"""``schedstream apply`` alone on a real API server and a real broker: decisions written to the
decisions topic by the test (with the uids the server gave), applied, then applied again.

Each case is one object in one situation; the test reads the server afterwards, and reads the
applier's ledger for how each decision ended."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, select

from ops.cluster_demo import Services, add_nodes, gang_pod, manifest, node, pod_group, queue, wait_for
from ops.local_kube import LocalKube
from services.kube.ledger import applied

pytestmark = [pytest.mark.kube, pytest.mark.kafka]

VOLCANO = "scheduling.volcano.sh/v1beta1"
KUEUE = "kueue.x-k8s.io/v1beta1"


def ref(obj: dict[str, Any]) -> dict[str, str]:
    m = obj["metadata"]
    out = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": m["name"], "uid": m["uid"]}
    if m.get("namespace"):
        out["namespace"] = m["namespace"]
    return out


def decision(kind: str, obj: dict[str, Any], reason: str = "", **fields: Any) -> dict[str, Any]:
    target = ref(obj)
    return {
        "id": uuid.uuid4().hex,
        "cluster": "c1",
        "seq": 1,
        "kind": kind,
        "target": target,
        "reason": reason,
        **fields,
    }


def get(kube: LocalKube, *args: str) -> dict[str, Any]:
    return json.loads(kube.kubectl("get", *args, "-o", "json"))


def create(kube: LocalKube, *objects: dict[str, Any]) -> None:
    kube.kubectl("create", "-f", "-", input=manifest(*objects))


def ledger(services: Services) -> dict[str, tuple[str, str]]:
    engine = create_engine(services.ledger_url)
    with engine.connect() as conn:
        exists = inspect(conn).has_table(applied.name)  # not yet, in the applier's first moments
        rows = conn.execute(select(applied.c.id, applied.c.outcome, applied.c.detail)).all() if exists else []
    engine.dispose()
    return {row.id: (row.outcome, row.detail) for row in rows}


def produce(services: Services, tmp_path: Path, decisions: list[dict[str, Any]]) -> None:
    path = tmp_path / f"decisions-{uuid.uuid4().hex[:6]}.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in decisions))
    services.schedstream("produce", "--topic", services.decisions_topic, str(path))


def bind(kube: LocalKube, namespace: str, pod: str, node_name: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    kube.kubectl(
        "create", "--raw", f"/api/v1/namespaces/{namespace}/pods/{pod}/binding", "-f", "-", input=json.dumps(body)
    )


def run_apply(services: Services) -> str:
    proc = services.start_apply("--exit-when-idle", "3")
    assert proc.wait(120) == 0, services.log("apply").read_text()
    services.procs.pop("apply")
    return services.log("apply").read_text()


UNSCHEDULABLE = {
    "type": "Unschedulable",
    "status": "True",
    "reason": "NotEnoughResources",
    "message": "1/2 tasks in gang unschedulable: 1 Insufficient cpu",
}
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}],
}
RESERVED = [
    {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue cq",
    },
    {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted"},
]
POD_SCHEDULED = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes fit"}


def arrange(kube: LocalKube, ns: str) -> dict[str, dict[str, Any]]:
    """One object per case, in its situation on the server, and the decision about it."""
    create(kube, node(f"{ns}-n1"), node(f"{ns}-n2"), queue(f"{ns}-q"))
    pods = {name: gang_pod(name, ns, "pg", "1") for name in ("bind", "elsewhere", "status", "evict", "recreated")}
    pods["other"] = gang_pod("other", ns, "pg", "1", scheduler="default-scheduler")
    pods["waiting"] = gang_pod("waiting", ns, "pg", "1")
    create(kube, *pods.values(), pod_group("pg", ns, 2), pod_group("refused", ns, 1))
    workload = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": ns},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": pods["bind"]}]},
    }
    create(kube, workload)
    bind(kube, ns, "elsewhere", f"{ns}-n2")
    bind(kube, ns, "evict", f"{ns}-n2")
    live = {name: get(kube, "pod", "-n", ns, name) for name in pods}
    old_recreated = live["recreated"]
    kube.kubectl("delete", "pod", "-n", ns, "recreated", "--wait=true", "--grace-period=0", "--force")
    create(kube, pods["recreated"])
    pg = get(kube, "podgroup", "-n", ns, "pg")
    refused = get(kube, "podgroup", "-n", ns, "refused")
    q = get(kube, "queue", f"{ns}-q")
    w = get(kube, "workload", "-n", ns, "w")
    return {
        "bind": decision("Bind", live["bind"], "Scheduled", node=f"{ns}-n1"),
        "conflict": decision("Bind", live["elsewhere"], "Scheduled", node=f"{ns}-n1"),
        "not ours": decision("Bind", live["other"], "Scheduled", node=f"{ns}-n1"),
        "re-created": decision("Bind", old_recreated, "Scheduled", node=f"{ns}-n1"),
        "pod status": decision("PodStatus", live["status"], "Unschedulable", conditions=[POD_SCHEDULED]),
        "gang status": decision(
            "PodGroupStatus", pg, "NotEnoughResources", phase="Inqueue", conditions=[UNSCHEDULABLE]
        ),
        "queue status": decision(
            "QueueStatus", q, "AllocatedChanged", state="Open", allocated={"cpu": "2", "pods": "2"}
        ),
        "admission": decision("WorkloadStatus", w, "QuotaReserved", conditions=RESERVED, admission=ADMISSION),
        "evict": decision("Evict", live["evict"], "preempt: for x/y"),
        "reject": decision("Reject", refused, "QueueRefused", message="queue q1 was refused and runs no jobs"),
        "job status": decision("JobStatus", pg, "PodGroupRunning", phase="Running"),
    }


def resource_versions(kube: LocalKube, ns: str) -> dict[str, str]:
    """The resourceVersion of every object a status decision or a bind writes."""
    objects = [("pod", "-n", ns, "bind"), ("pod", "-n", ns, "status"), ("podgroup", "-n", ns, "pg"),
               ("workload", "-n", ns, "w"), ("queue", f"{ns}-q")]  # fmt: skip
    return {" ".join(args): get(kube, *args)["metadata"]["resourceVersion"] for args in objects}


def test_each_decision_kind_lands_on_the_server_and_applying_it_again_changes_nothing(
    local_kube: LocalKube, kafka_bootstrap: str, tmp_path: Path, ns: str, apply_kubeconfig: Path
) -> None:
    """Run with the RBAC of docs/apply-rbac.yaml only."""
    kube = local_kube
    cases = arrange(kube, ns)
    with Services(kafka_bootstrap, apply_kubeconfig, tmp_path / "services") as services:
        produce(services, tmp_path, list(cases.values()) * 2)  # the topic may repeat a decision
        run_apply(services)
        outcomes = {name: ledger(services)[d["id"]][0] for name, d in cases.items()}
        assert outcomes == {
            "bind": "applied",
            "conflict": "conflict",
            "not ours": "not-ours",
            "re-created": "stale",
            "pod status": "applied",
            "gang status": "applied",
            "queue status": "applied",
            "admission": "applied",
            "evict": "applied",
            "reject": "applied",
            "job status": "ignored",
        }

        assert get(kube, "pod", "-n", ns, "bind")["spec"]["nodeName"] == f"{ns}-n1"
        assert get(kube, "pod", "-n", ns, "elsewhere")["spec"]["nodeName"] == f"{ns}-n2"
        assert "nodeName" not in get(kube, "pod", "-n", ns, "other")["spec"]
        assert "nodeName" not in get(kube, "pod", "-n", ns, "recreated")["spec"]
        conds = {c["type"]: c for c in get(kube, "pod", "-n", ns, "status")["status"]["conditions"]}
        assert (conds["PodScheduled"]["status"], conds["PodScheduled"]["message"]) == ("False", "0/2 nodes fit")
        pg_status = get(kube, "podgroup", "-n", ns, "pg")["status"]
        assert pg_status["phase"] == "Inqueue"
        assert [(c["type"], c["reason"], c["message"]) for c in pg_status["conditions"]] == [
            ("Unschedulable", "NotEnoughResources", UNSCHEDULABLE["message"])
        ]
        assert get(kube, "queue", f"{ns}-q")["status"] == {"state": "Open", "allocated": {"cpu": "2", "pods": "2"}}
        w_status = get(kube, "workload", "-n", ns, "w")["status"]
        assert w_status["admission"] == ADMISSION
        assert [(c["type"], c["status"], c["observedGeneration"]) for c in w_status["conditions"]] == [
            ("QuotaReserved", "True", 1),
            ("Admitted", "True", 1),
        ]
        evicted = json.loads(kube.kubectl("get", "pod", "-n", ns, "evict", "-o", "json", "--ignore-not-found") or "{}")
        assert not evicted or evicted["metadata"].get("deletionTimestamp")
        events = get(kube, "events", "-n", ns)["items"]
        seen = sorted((e["involvedObject"]["name"], e["reason"], e["type"]) for e in events)
        assert seen == [
            ("evict", "Preempted", "Normal"),
            ("pg", "Unschedulable", "Warning"),
            ("recreated", "FailedScheduling", "Warning"),  # the gang's unbound pods of our scheduler
            ("refused", "QueueRefused", "Warning"),
            ("status", "FailedScheduling", "Warning"),
            ("waiting", "FailedScheduling", "Warning"),
        ]
        assert "pg" not in [e["involvedObject"]["name"] for e in events if e["reason"] == "FailedScheduling"]

        # A crash after the effects but before the ledger: the same decisions, a fresh ledger.
        versions = resource_versions(kube, ns)
        (tmp_path / "services" / "apply.db").unlink()
        services.env["SCHEDSTREAM_APP_ID"] += "-again"  # a new consumer group reads the topic from the start
        run_apply(services)
        again = {name: ledger(services)[d["id"]][0] for name, d in cases.items()}
        assert again == {
            **outcomes,
            "bind": "already",
            "pod status": "already",
            "gang status": "already",
            "queue status": "already",
            "admission": "already",
            "evict": "stale",
            "reject": "already",
        }
        assert resource_versions(kube, ns) == versions
        assert len(get(kube, "events", "-n", ns)["items"]) == len(events)


def test_an_applier_killed_mid_stream_applies_every_decision_exactly_once_in_effect(
    local_kube: LocalKube, kafka_bootstrap: str, tmp_path: Path, ns: str
) -> None:
    kube = local_kube
    nodes = [f"{ns}-n{i}" for i in range(4)]
    create(kube, *(node(n) for n in nodes))
    count = 120
    create(kube, *(gang_pod(f"p{i}", ns, f"g{i}", "100m") for i in range(count)))
    pods = get(kube, "pods", "-n", ns)["items"]
    binds = [decision("Bind", p, "Scheduled", node=nodes[i % 4]) for i, p in enumerate(pods)]
    rejects = [decision("Reject", p, "Refused", message="for the count of events") for p in pods[::3]]
    want = {p["metadata"]["name"]: nodes[i % 4] for i, p in enumerate(pods)}
    with Services(kafka_bootstrap, kube.kubeconfig, tmp_path / "services", SCHEDSTREAM_LOG_LEVEL="info") as services:
        produce(services, tmp_path, binds + rejects)
        services.start_apply()
        wait_for("the first decisions applied", lambda: len(ledger(services)) >= 10, every=0.05)
        services.kill("apply")
        done_at_kill = len(ledger(services))
        assert done_at_kill < len(binds) + len(rejects), "the applier finished before it could be killed"
        produce(services, tmp_path, binds[:30])  # and the topic repeats some decisions
        services.start_apply()

        def bound() -> bool:
            return all(p["spec"].get("nodeName") for p in get(kube, "pods", "-n", ns)["items"])

        wait_for("every pod bound", bound)
        wait_for("every decision in the ledger", lambda: len(ledger(services)) == len(binds) + len(rejects))
        time.sleep(2)  # let the repeated ones go through
        assert services.stop("apply") == 0

    rows = ledger(services)
    assert {p["metadata"]["name"]: p["spec"]["nodeName"] for p in get(kube, "pods", "-n", ns)["items"]} == want
    assert sorted({outcome for outcome, _ in rows.values()}) in (["applied"], ["already", "applied"])
    # The one decision in flight at the kill may have been re-applied as 'already'; no second effect.
    assert sum(outcome == "already" for outcome, _ in rows.values()) <= 1
    events = [e for e in get(kube, "events", "-n", ns)["items"] if e["reason"] == "Refused"]
    assert sorted(e["involvedObject"]["name"] for e in events) == sorted(d["target"]["name"] for d in rejects)
    assert all(e["count"] == 1 for e in events)


def test_an_applier_without_permission_stops_with_one_line_and_skips_nothing(
    local_kube: LocalKube, kafka_bootstrap: str, tmp_path: Path, ns: str
) -> None:
    """A 403 is about the applier's credentials, not the decision: recording it as done would lose it."""
    kube = local_kube
    add_nodes(kube, node(f"{ns}-n1"))
    create(kube, gang_pod("p", ns, "g", "1"))
    with Services(kafka_bootstrap, kube.nobody_kubeconfig, tmp_path / "services") as services:
        produce(services, tmp_path, [decision("Bind", get(kube, "pod", "-n", ns, "p"), "Scheduled", node=f"{ns}-n1")])
        proc = services.start_apply("--exit-when-idle", "3")
        assert proc.wait(120) == 1
        services.procs.pop("apply")
    output = services.log("apply").read_text()
    assert "Traceback" not in output
    assert output.splitlines()[-1].startswith(
        f"schedstream apply: error: permission denied (403) applying Bind to Pod/{ns}/p: "
    )
    assert output.splitlines()[-1].endswith("apply needs the RBAC of docs/apply-rbac.yaml")
    assert ledger(services) == {}
    assert "nodeName" not in get(kube, "pod", "-n", ns, "p")["spec"]
