"""`schedstream watch` on a real kube-apiserver into a real broker: section-1 lines keyed by the
cluster; BOOKMARKs; resume after SIGKILL; 410 Gone after a compaction -> relist with DELETED and
MODIFIED for what changed meanwhile; the stored stream replays to the worker's decisions; clear
errors; and `kubectl get --raw ...?watch=1 | schedstream produce -` streaming line by line."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from domain.events import Bookmark, WatchEvent, parse_event
from ops.local_kube import BIN_DIR, LocalKube
from services.store.store import Store

pytestmark = [pytest.mark.kube, pytest.mark.kafka]

SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")


def kubectl_binary() -> str:
    built = BIN_DIR / "kubectl"
    return str(built) if built.is_file() else shutil.which("kubectl") or "kubectl"


class Cluster:
    """kubectl on the test cluster, confined to one fresh namespace and its own node names."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.ns = f"w-{uuid.uuid4().hex[:8]}"
        self.kubectl("create", "namespace", self.ns)

    def kubectl(self, *args: str, input: str | None = None) -> str:
        result = subprocess.run(
            [kubectl_binary(), "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    def apply(self, *objects: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        if any(o["kind"] == "Queue" for o in objects):  # as Volcano's queue controller would
            open_ = '{"status": {"state": "Open"}}'
            self.kubectl("patch", "queue", self.ns, "--subresource=status", "--type=merge", "-p", open_)

    def node(self, name: str, cpu: str = "8") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"{self.ns}-{name}", "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
        }

    def pod(self, name: str, group: str | None = None, cpu: str = "1") -> dict[str, Any]:
        annotations = {"scheduling.k8s.io/group-name": group} if group else {}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.ns, "annotations": annotations},
            "spec": {
                "schedulerName": "volcano",
                "containers": [{"name": "main", "image": "trainer", "resources": {"requests": {"cpu": cpu}}}],
            },
        }

    def podgroup(self, name: str, members: int) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {"minMember": members, "queue": self.ns},
        }

    def queue(self) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": self.ns},
            "spec": {"weight": 1, "reclaimable": True},
        }

    def live(self) -> dict[str, tuple[str, str]]:
        """uid -> (name, resourceVersion) of this test's pods, PodGroups and Queue on the server."""
        found = {}
        for what in (("pods", "-n", self.ns), ("podgroups", "-n", self.ns), ("queues",)):
            for item in json.loads(self.kubectl("get", *what, "-o", "json"))["items"]:
                meta = item["metadata"]
                if item["kind"] != "Queue" or meta["name"] == self.ns:
                    found[meta["uid"]] = (meta["name"], meta["resourceVersion"])
        return found


class Watcher:
    """`schedstream watch` subprocesses sharing one topic and one state file."""

    def __init__(self, bootstrap: str, kubeconfig: Path, workdir: Path) -> None:
        run = uuid.uuid4().hex[:8]
        self.bootstrap = bootstrap
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.cluster = f"c-{run}"
        self.topic = f"watch-{run}"
        self.runs = 0
        self.env = {
            **os.environ,
            "SCHEDSTREAM_KAFKA_BOOTSTRAP": bootstrap,
            "SCHEDSTREAM_EVENTS_TOPIC": self.topic,
            "SCHEDSTREAM_DECISIONS_TOPIC": f"decisions-{run}",
            "SCHEDSTREAM_APP_ID": f"schedstream-watch-{run}",
            "SCHEDSTREAM_DATA_DIR": str(workdir / "data"),
            "SCHEDSTREAM_LOG_FORMAT": "json",
            "SCHEDSTREAM_SCHEDULE_PERIOD": "0.2",
        }

    def start(self, *extra: str, kubeconfig: Path | None = None) -> subprocess.Popen[bytes]:
        self.runs += 1
        args = ["watch", "--kubeconfig", str(kubeconfig or self.kubeconfig), "--cluster", self.cluster, *extra]
        with open(self.log(self.runs), "wb") as out:
            return subprocess.Popen([SCHEDSTREAM, *args], env=self.env, stdout=out, stderr=subprocess.STDOUT)

    def log(self, run: int) -> Path:
        return self.workdir / f"watch-{run}.log"

    def messages(self) -> list[tuple[bytes | None, dict[str, Any]]]:
        return [(key, json.loads(value)) for key, value in asyncio.run(_read(self.bootstrap, self.topic))]

    def wait_for(self, what: Callable[[list[dict[str, Any]]], bool], timeout: float = 120) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for _, line in self.messages()]
            if what(lines):
                return lines
            assert time.monotonic() < deadline, f"timed out; the watcher said:\n{self.log(self.runs).read_text()}"
            time.sleep(0.5)


async def _read(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes]]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    out = []
    try:
        while batch := await consumer.getmany(timeout_ms=1000):
            for _, messages in sorted(batch.items()):
                out.extend((m.key, m.value) for m in messages if m.value is not None)
    finally:
        await consumer.stop()
    return out


def has(kind: str, name: str, type_: str = "ADDED", **labels: str) -> Callable[[list[dict[str, Any]]], bool]:
    def found(lines: list[dict[str, Any]]) -> bool:
        return any(
            line["type"] == type_
            and line["object"].get("kind") == kind
            and line["object"]["metadata"].get("name") == name
            and labels.items() <= line["object"]["metadata"].get("labels", {}).items()
            for line in lines
        )

    return found


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0


@pytest.fixture
def cluster(kubeconfig: Path) -> Iterator[Cluster]:
    made = Cluster(kubeconfig)
    yield made
    made.kubectl("delete", "namespace", made.ns, "--wait=false")


def test_watch_writes_nodes_pods_and_custom_objects_as_section_1_lines_keyed_by_cluster(
    cluster: Cluster, kafka_bootstrap: str, tmp_path: Path
) -> None:
    cluster.apply(cluster.queue(), cluster.node("n0"), cluster.podgroup("pg", 2), cluster.pod("p-0", "pg"))
    watcher = Watcher(kafka_bootstrap, cluster.kubeconfig, tmp_path)
    process = watcher.start("--watch-timeout", "5")  # a BOOKMARK comes 2 s before each watch ends
    try:
        watcher.wait_for(has("Pod", "p-0"))
        cluster.apply(cluster.pod("p-1", "pg"))
        cluster.kubectl("label", "pod", "p-0", "-n", cluster.ns, "step=two")
        cluster.kubectl("delete", "pod", "p-1", "-n", cluster.ns, "--grace-period=0", "--force")
        watcher.wait_for(has("Pod", "p-1", "DELETED"))
        watcher.wait_for(lambda lines: any(line["type"] == "BOOKMARK" for line in lines), timeout=30)
    finally:
        stop(process)

    messages = watcher.messages()
    assert {key for key, _ in messages} == {watcher.cluster.encode()}
    lines = [line for _, line in messages]
    for line in lines:
        assert list(line) == ["type", "object", "cluster"]
        assert line["cluster"] == watcher.cluster
        assert isinstance(parse_event(json.dumps(line)), WatchEvent | Bookmark)
    for check in (
        has("Namespace", cluster.ns),
        has("Node", f"{cluster.ns}-n0"),
        has("Queue", cluster.ns),
        has("PodGroup", "pg"),
        has("Pod", "p-1"),
        has("Pod", "p-0", "MODIFIED", step="two"),
        has("PriorityClass", "system-node-critical"),
    ):
        assert check(lines)
    pod = next(line["object"] for line in lines if has("Pod", "p-0")([line]))
    assert pod["apiVersion"] == "v1"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_a_watcher_killed_and_restarted_after_a_compaction_relists_and_its_stream_replays_to_the_worker_decisions(
    local_kube: LocalKube, kafka_bootstrap: str, tmp_path: Path
) -> None:
    cluster = Cluster(local_kube.kubeconfig)
    # Room to spare: the other tests' pending pods are on the same server (without a controller-manager
    # a deleted namespace keeps its pods), and the worker schedules every pod of the cluster.
    cluster.apply(cluster.queue(), cluster.node("n0", "32"), cluster.node("n1", "32"), cluster.podgroup("a", 2))
    cluster.apply(*(cluster.pod(f"a-{i}", "a", cpu="2") for i in range(2)))
    watcher = Watcher(kafka_bootstrap, cluster.kubeconfig, tmp_path)
    first = watcher.start()
    watcher.wait_for(has("Pod", "a-1"))
    cluster.apply(cluster.podgroup("b", 3), *(cluster.pod(f"b-{i}", "b", cpu="2") for i in range(3)))
    cluster.apply(*(cluster.pod(f"solo-{i}", cpu="100m") for i in range(20)))
    watcher.wait_for(has("Pod", "solo-19"))
    cluster.apply(*(cluster.pod(f"late-{i}", cpu="100m") for i in range(30)))
    first.send_signal(signal.SIGKILL)  # mid-stream: the late pods are coming, the saved progress lags
    first.wait(timeout=30)

    # While it is away: deletions, a change, a new gang, and a name deleted and created again.
    delete = ("delete", "pod", "-n", cluster.ns, "--grace-period=0", "--force")
    cluster.kubectl(*delete, "solo-0", "solo-1", "b-2")
    cluster.kubectl("label", "pod", "a-0", "-n", cluster.ns, "changed=yes")
    cluster.kubectl(*delete, "solo-3")
    cluster.apply(cluster.pod("solo-3", cpu="100m"), cluster.podgroup("c", 1), cluster.pod("c-0", "c"))
    local_kube.compact()
    local_kube.restart_apiserver()  # its watch cache starts now: the saved resourceVersions are gone

    second = watcher.start()
    try:
        watcher.wait_for(has("Pod", "c-0"))
        watcher.wait_for(has("Pod", "a-0", "MODIFIED", changed="yes"))
    finally:
        stop(second)
    assert '"resource": "pods"' in watcher.log(2).read_text()
    assert "resourceVersion gone; relisting" in watcher.log(2).read_text()

    # Nothing lost, nothing invented: the last line of every object is its state on the server.
    last: dict[str, dict[str, Any]] = {}
    for _, line in watcher.messages():
        if line["type"] != "BOOKMARK":
            last[line["object"]["metadata"]["uid"]] = line
    live = cluster.live()
    for uid, (name, version) in live.items():
        assert last[uid]["type"] in ("ADDED", "MODIFIED"), name
        assert last[uid]["object"]["metadata"]["resourceVersion"] == version, name
    ours = {
        uid: line
        for uid, line in last.items()
        if line["object"]["metadata"].get("namespace") == cluster.ns and line["object"]["kind"] in ("Pod", "PodGroup")
    }
    gone = {line["object"]["metadata"]["name"] for uid, line in ours.items() if uid not in live}
    assert gone == {"solo-0", "solo-1", "b-2", "solo-3"}  # the first solo-3; the second lives
    assert all(ours[uid]["type"] == "DELETED" for uid in ours if uid not in live)

    # The worker schedules the stored stream; a replay of what it stored gives its decisions.
    db_url = f"sqlite:///{tmp_path / 'worker.db'}"
    worker = subprocess.run(
        [SCHEDSTREAM, "worker", "--db", db_url, "--exit-when-idle", "4"],
        env=watcher.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert worker.returncode == 0, worker.stderr
    store = Store(db_url)
    stored = tmp_path / "stored.jsonl"
    stored.write_text("\n".join(payload for _, payload in store.iter_events(watcher.cluster)) + "\n")
    decisions = [line.encode() for line in store.decisions()]
    binds = [json.loads(d) for d in decisions if json.loads(d)["kind"] == "Bind"]
    assert {b["target"]["name"] for b in binds} >= {"a-0", "a-1", "c-0"}
    replayed = tmp_path / "replayed.jsonl"
    subprocess.run([SCHEDSTREAM, "replay", str(stored), "--out", str(replayed)], check=True, capture_output=True)
    assert replayed.read_bytes().splitlines() == decisions


def test_a_missing_permission_or_server_is_one_clear_line(
    local_kube: LocalKube, kafka_bootstrap: str, tmp_path: Path
) -> None:
    watcher = Watcher(kafka_bootstrap, local_kube.nobody_kubeconfig, tmp_path)
    refused = watcher.start()
    assert refused.wait(timeout=120) == 1
    said = watcher.log(1).read_text()
    assert "Traceback" not in said
    assert "permission denied (403)" in said
    assert "RBAC verbs get, list and watch" in said

    down = json.loads(local_kube.kubeconfig.read_text())
    down["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"  # nothing listens there
    (tmp_path / "down").write_text(json.dumps(down))
    unreachable = watcher.start(kubeconfig=tmp_path / "down")
    assert unreachable.wait(timeout=120) == 1
    said = watcher.log(2).read_text()
    assert "Traceback" not in said
    assert "cannot reach the Kubernetes API server at https://127.0.0.1:9" in said


def test_kubectl_raw_watch_piped_into_produce_streams_each_line_as_it_comes(
    cluster: Cluster, kafka_bootstrap: str, tmp_path: Path
) -> None:
    watcher = Watcher(kafka_bootstrap, cluster.kubeconfig, tmp_path)
    raw = [kubectl_binary(), "--kubeconfig", str(cluster.kubeconfig), "get", "--raw"]
    source = subprocess.Popen([*raw, f"/api/v1/namespaces/{cluster.ns}/pods?watch=1"], stdout=subprocess.PIPE)
    assert source.stdout is not None
    produce = subprocess.Popen(
        [SCHEDSTREAM, "produce", "-"], stdin=source.stdout, env=watcher.env, stderr=subprocess.PIPE, text=True
    )
    source.stdout.close()
    try:
        cluster.apply(cluster.pod("p-0"))
        watcher.wait_for(has("Pod", "p-0"))  # while kubectl still runs: nothing waits for the end of stdin
        cluster.apply(cluster.pod("p-1"))
        watcher.wait_for(has("Pod", "p-1"))
    finally:
        source.terminate()
        source.wait(timeout=30)
    assert produce.wait(timeout=60) == 0
    messages = watcher.messages()
    assert f"produced {len(messages)} messages" in (produce.stderr.read() if produce.stderr else "")
    assert {key for key, _ in messages} == {b"default"}
