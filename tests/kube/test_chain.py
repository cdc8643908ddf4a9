"""The whole chain on a real API server and a real broker: ``schedstream watch`` -> Kafka ->
``schedstream worker`` -> Kafka -> ``schedstream apply`` -> the API server, with kwok running
what is bound. The test plays the controllers (Volcano's job controller, Kueue's workload
creation) and reads the outcome on the server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, select

from ops.cluster_demo import Services, add_nodes, gang_pod, manifest, node, pod_group, queue, wait_for
from ops.local_kube import LocalKube
from services.store.tables import decisions, events
from tests.kube.test_apply import bind, get, ledger

pytestmark = [pytest.mark.kube, pytest.mark.kafka]

KUEUE = "kueue.x-k8s.io/v1beta1"


@pytest.fixture
def chain(local_kube: LocalKube, kafka_bootstrap: str, tmp_path: Path) -> Iterator[Services]:
    """watch, worker and apply running on their own topics; the shared ``default`` queue exists."""
    local_kube.kubectl("apply", "-f", "-", input=manifest(queue()))
    with Services(kafka_bootstrap, local_kube.kubeconfig, tmp_path / "services") as services:
        services.start_watch()
        services.start_worker()
        services.start_apply()
        yield services


def status(kube: LocalKube, kind: str, ns: str, name: str) -> dict[str, Any]:
    obj = json.loads(kube.kubectl("get", kind, "-n", ns, name, "-o", "json", "--ignore-not-found") or "{}")
    return obj.get("status") or {}


def test_a_gang_is_bound_by_apply_run_by_kwok_and_its_podgroup_reads_running(
    local_kube: LocalKube, chain: Services, ns: str
) -> None:
    kube = local_kube
    pods = [gang_pod(f"train-{i}", ns, "train", "2") for i in range(3)]
    add_nodes(kube, node(f"{ns}-a"), node(f"{ns}-b"))
    kube.kubectl("create", "-f", "-", input=manifest(pod_group("train", ns, 3), *pods))

    def running() -> list[dict[str, Any]] | None:
        items = get(kube, "pods", "-n", ns)["items"]
        return items if all(p.get("status", {}).get("phase") == "Running" for p in items) else None

    items = wait_for("the gang's pods Running on kwok nodes", running)
    assert {p["spec"]["nodeName"] for p in items} <= {f"{ns}-a", f"{ns}-b"}
    assert wait_for("the PodGroup Running", lambda: status(kube, "podgroup", ns, "train").get("phase") == "Running")
    conditions = status(kube, "podgroup", ns, "train")["conditions"]
    assert [(c["type"], c["status"]) for c in conditions] == [("Scheduled", "True")]
    bind_outcomes = [o for o, _ in ledger(chain).values()]
    assert bind_outcomes.count("conflict") == 0


def test_a_gang_that_does_not_fit_carries_the_unschedulable_reason_on_the_server(
    local_kube: LocalKube, chain: Services, ns: str
) -> None:
    kube = local_kube
    pods = [gang_pod(f"huge-{i}", ns, "huge", "64") for i in range(2)]
    add_nodes(kube, node(f"{ns}-a"))
    kube.kubectl("create", "-f", "-", input=manifest(pod_group("huge", ns, 2), *pods))

    def unschedulable() -> dict[str, Any] | None:
        conds = status(kube, "podgroup", ns, "huge").get("conditions") or []
        return next((c for c in conds if c["type"] == "Unschedulable" and c["status"] == "True"), None)

    cond = wait_for("the Unschedulable condition on the PodGroup", unschedulable)
    assert cond["reason"] == "NotEnoughResources"
    assert cond["message"].startswith("2/2 tasks in gang unschedulable")
    assert "Insufficient cpu" in cond["message"]
    assert all("nodeName" not in p["spec"] for p in get(kube, "pods", "-n", ns)["items"])
    events = wait_for("the FailedScheduling events", lambda: [
        e for e in get(kube, "events", "-n", ns)["items"] if e["reason"] in ("FailedScheduling", "Unschedulable")
    ])  # fmt: skip
    assert {e["involvedObject"]["kind"] for e in events} >= {"PodGroup"}


def test_a_gang_that_cannot_fit_gets_no_timer_markers_until_the_cluster_changes(
    local_kube: LocalKube, chain: Services, ns: str
) -> None:
    """A gang waits for room and nothing on the server changes: once the cycle that wrote its
    Unschedulable condition and the one that condition's echo asked for have run, the worker's
    timer (every 0.5 s here) writes no SCHEDULE marker (``Engine.idle``: the last cycle decided
    nothing, and nothing it read of the clock can change), where it wrote one every period
    before; the store gets nothing but the watch's BOOKMARKs. The node that makes room is an
    event: a marker follows it and the gang is bound."""
    kube = local_kube
    nodes = [node(f"{ns}-{x}") for x in "ab"]
    pods = [gang_pod(f"wide-{i}", ns, "wide", "3") for i in range(2)]
    for obj in (*nodes, *pods):
        obj["metadata"].setdefault("labels", {})["room"] = ns
    for p in pods:
        p["spec"]["nodeSelector"] = {"room": ns}  # only this test's nodes, not earlier tests'
    add_nodes(kube, nodes[0])
    kube.kubectl("create", "-f", "-", input=manifest(pod_group("wide", ns, 2), *pods))
    wait_for("the Unschedulable condition", lambda: any(
        c["type"] == "Unschedulable" for c in status(kube, "podgroup", ns, "wide").get("conditions") or []
    ))  # fmt: skip
    settled = wait_for("the worker's stored stream to stop growing", lambda: settled_seq(chain, quiet=2), timeout=30)
    time.sleep(5)  # ten periods of the timer
    later = stored(chain, events, events.c.seq > settled, events.c.type != "BOOKMARK")
    assert [(r.type, r.kind, r.name) for r in later] == []
    add_nodes(kube, nodes[1])

    def running() -> bool:
        items = get(kube, "pods", "-n", ns)["items"]
        return all(p.get("status", {}).get("phase") == "Running" for p in items)

    wait_for("the gang Running once the second node came", running)
    assert {p["spec"]["nodeName"] for p in get(kube, "pods", "-n", ns)["items"]} == {f"{ns}-a", f"{ns}-b"}
    after = stored(chain, events, events.c.seq > settled)
    assert any(r.type == "SCHEDULE" for r in after)


def settled_seq(services: Services, quiet: float) -> int | None:
    """The last seq the worker stored, once it has stored nothing for ``quiet`` seconds but the
    watch's BOOKMARKs (the API server sends them on its own, about once a minute a watch)."""
    first = stored(services, events, events.c.type != "BOOKMARK")
    time.sleep(quiet)
    last = stored(services, events, events.c.type != "BOOKMARK")
    return max(r.seq for r in last) if last and len(last) == len(first) else None


def stored(services: Services, table: Any, *where: Any) -> list[Any]:
    """Rows of the worker's store (its events and decisions, with their seq)."""
    engine = create_engine(services.env["SCHEDSTREAM_DB_URL"])
    with engine.connect() as conn:
        exists = inspect(conn).has_table(table.name)  # not before the worker's first moments
        rows = conn.execute(select(table).where(*where)).all() if exists else []
    engine.dispose()
    return list(rows)


def deleted_seq(services: Services, ns: str, kind: str, names: list[str]) -> int | None:
    """The seq at which the worker took in the last of these objects' DELETED events, once all are in."""
    rows = stored(services, events, events.c.type == "DELETED", events.c.kind == kind, events.c.namespace == ns,
                  events.c.name.in_(names))  # fmt: skip
    return max(r.seq for r in rows) if len({r.name for r in rows}) == len(names) else None


def podgroup_decisions_after(services: Services, ns: str, seq: int) -> list[str]:
    rows = stored(services, decisions, decisions.c.target_kind == "PodGroup", decisions.c.namespace == ns,
                  decisions.c.seq > seq)  # fmt: skip
    return [r.payload for r in rows]


@pytest.mark.parametrize("pods_first", [True, False], ids=["pods before the PodGroup", "PodGroup before the pods"])
def test_a_podgroup_gets_no_status_write_once_its_pods_are_gone(
    local_kube: LocalKube, chain: Services, ns: str, pods_first: bool
) -> None:
    """SEEDS S1 on the server. A Volcano Job's cascade deletion, played in either order (no garbage
    collector runs here): no status decision for the PodGroup from any event after its last pod's
    DELETED, and, while it outlives its pods, its resourceVersion does not move."""
    kube = local_kube
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": ns},
           "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "default", "tasks": []}}  # fmt: skip
    kube.kubectl("create", "-f", "-", input=manifest(job))
    uid = get(kube, "jobs.batch.volcano.sh", "-n", ns, "j")["metadata"]["uid"]
    owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": uid, "controller": True}
    group = pod_group("j", ns, 2)
    pods = [gang_pod(f"j-{i}", ns, "j", "1") for i in range(2)] + [gang_pod("j-big", ns, "j", "64")]
    for obj in (group, *pods):
        obj["metadata"]["ownerReferences"] = [owner]
    add_nodes(kube, node(f"{ns}-a"))
    kube.kubectl("create", "-f", "-", input=manifest(group, *pods))
    wait_for("the gang Running", lambda: status(kube, "podgroup", ns, "j").get("phase") == "Running")
    names = [p["metadata"]["name"] for p in pods]

    def delete(*what: str) -> None:
        kube.kubectl("delete", "-n", ns, *what, "--grace-period=0", "--force", "--wait=true")

    if not pods_first:
        delete("podgroup", "j")
    delete("pod", *names)
    last_pod = wait_for("the pods' DELETED events in the worker", lambda: deleted_seq(chain, ns, "Pod", names))
    if pods_first:
        time.sleep(1.5)  # a decision taken while a pod was left may still be on its way to the server
        before = get(kube, "podgroup", "-n", ns, "j")["metadata"]["resourceVersion"]
        time.sleep(4)  # the cycles the deletions ask for, and apply's round trip
        assert get(kube, "podgroup", "-n", ns, "j")["metadata"]["resourceVersion"] == before
        delete("podgroup", "j")
    wait_for("the PodGroup's DELETED event in the worker", lambda: deleted_seq(chain, ns, "PodGroup", ["j"]))
    kube.kubectl("delete", "-n", ns, "jobs.batch.volcano.sh", "j", "--wait=true")
    time.sleep(2)
    assert podgroup_decisions_after(chain, ns, last_pod) == []


def test_a_kueue_workload_admission_lands_in_its_status_on_the_server(
    local_kube: LocalKube, chain: Services, ns: str
) -> None:
    kube = local_kube
    cq = f"{ns}-cq"
    objects = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": f"{ns}-flavor"}, "spec": {}},
        {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": cq},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": f"{ns}-flavor", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}},
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": ns},
         "spec": {"clusterQueue": cq}},
        {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": "w", "namespace": ns},
         "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3, "template": {"spec": {
             "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}},
    ]  # fmt: skip
    kube.kubectl("create", "-f", "-", input=manifest(*objects))

    def admitted() -> dict[str, Any] | None:
        got = status(kube, "workload", ns, "w")
        return got if got.get("admission") else None

    got = admitted() or wait_for("the Workload's admission", admitted)
    assert got["admission"] == {
        "clusterQueue": cq,
        "podSetAssignments": [{"name": "main", "flavors": {"cpu": f"{ns}-flavor"}, "resourceUsage": {"cpu": "3"},
                               "count": 3}],
    }  # fmt: skip
    conditions = {c["type"]: c for c in got["conditions"]}
    assert conditions["QuotaReserved"]["status"] == "True"
    assert conditions["QuotaReserved"]["message"] == f"Quota reserved in ClusterQueue {cq}"
    assert conditions["Admitted"]["status"] == "True"
    assert all(c["lastTransitionTime"] and c["observedGeneration"] == 1 for c in got["conditions"])


def test_shadow_reports_where_the_clusters_own_scheduler_agreed_and_where_it_did_not(
    local_kube: LocalKube, kafka_bootstrap: str, tmp_path: Path, ns: str
) -> None:
    """No apply: the test is the cluster's scheduler. It binds two pods where we would, one
    elsewhere, and leaves one unbound with kube-scheduler's condition."""
    kube = local_kube
    nodes = [node(f"{ns}-{x}") for x in "ab"]
    for n in nodes:
        n["metadata"]["labels"]["shadow"] = ns
    pods = [gang_pod(f"p{i}", ns, "", "1", scheduler="other-scheduler") for i in range(4)]
    for p in pods:
        del p["metadata"]["annotations"]
        p["spec"]["nodeSelector"] = {"shadow": ns}
    config = tmp_path / "scheduler.yaml"
    config.write_text("schedulerName: other-scheduler\n")
    with Services(kafka_bootstrap, kube.kubeconfig, tmp_path / "services") as services:
        services.start_watch()
        services.start("worker", "--config", str(config))
        add_nodes(kube, *nodes)
        kube.kubectl("create", "-f", "-", input=manifest(*pods))
        ours = wait_for("our four binds", lambda: binds(services, ns) if len(binds(services, ns)) == 4 else None)
        other = {f"{ns}-a": f"{ns}-b", f"{ns}-b": f"{ns}-a"}
        bind(kube, ns, "p0", ours["p0"])
        bind(kube, ns, "p1", ours["p1"])
        bind(kube, ns, "p2", other[ours["p2"]])
        unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                         "message": "0/2 nodes are available: 2 Insufficient cpu."}  # fmt: skip
        p3 = get(kube, "pod", "-n", ns, "p3")
        p3["status"]["conditions"] = [unschedulable]
        kube.kubectl("replace", "--subresource=status", "-f", "-", input=json.dumps(p3))

        def report() -> dict[str, Any] | None:
            got = json.loads(services.schedstream("shadow", "--config", str(config), "--json"))
            return got if got["compared"] == 4 and len(got["differences"]) == 2 else None

        got = wait_for("the cluster's binds in the watch stream", report, every=1)
        dry_run = services.schedstream("apply", "--kubeconfig", str(kube.kubeconfig), "--config", str(config),
                                       "--dry-run", "--exit-when-idle", "3")  # fmt: skip
    # apply --dry-run reads each object live, and writes nothing: the same verdicts.
    assert dry_run.splitlines()[0] == "shadow: 4 compared, 2 agree (50.0%)"
    assert sorted(line.split()[2] for line in dry_run.splitlines()[1:]) == [f"{ns}/p2", f"{ns}/p3"]
    assert "nodeName" not in get(kube, "pod", "-n", ns, "p3")["spec"]
    assert (got["compared"], got["agreed"], got["rate"]) == (4, 2, 0.5)
    differences = {d["target"]: (d["ours"], d["theirs"]) for d in got["differences"]}
    assert differences == {
        f"Pod {ns}/p2": ({"value": ours["p2"], "reason": "Scheduled"}, {"value": other[ours["p2"]], "reason": ""}),
        f"Pod {ns}/p3": (
            {"value": ours["p3"], "reason": "Scheduled"},
            {"value": "", "reason": "PodScheduled=False Unschedulable: 0/2 nodes are available: 2 Insufficient cpu."},
        ),
    }


def binds(services: Services, ns: str) -> dict[str, str]:
    rows = stored(services, decisions, decisions.c.kind == "Bind", decisions.c.namespace == ns)
    return {r.name: json.loads(r.payload)["node"] for r in rows}
