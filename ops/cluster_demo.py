"""``make cluster-demo``: schedstream scheduling a live (local) Kubernetes API server.

It starts etcd + kube-apiserver + kwok (ops/local_kube.py), a Kafka broker (ops/local_kafka.py)
and the three services, ``schedstream watch`` (cluster -> cluster-events), ``schedstream worker``
(cluster-events -> scheduler-decisions) and ``schedstream apply`` (scheduler-decisions -> the
cluster), creates kwok nodes, a queue and a few Volcano-style gangs with kubectl, prints pods and
nodes as they are bound and run, then stops everything (also on Ctrl-C).

``Services`` is also what the tests in tests/kube/ use to run the chain.
"""

from __future__ import annotations

import argparse
import contextlib
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

from ops.local_kafka import LocalKafka
from ops.local_kube import LocalKube

REPO_ROOT = Path(__file__).resolve().parents[1]
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")


class Services:
    """watch, worker and apply as subprocesses of one isolated deployment: its own topics,
    consumer groups, store, ledger and data directory under ``workdir``."""

    def __init__(self, bootstrap: str, kubeconfig: Path, workdir: Path, *, cluster: str = "local", **env: str) -> None:
        run = uuid.uuid4().hex[:8]
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.cluster = cluster
        self.events_topic = f"cluster-events-{run}"
        self.decisions_topic = f"scheduler-decisions-{run}"
        self.ledger_url = f"sqlite:///{workdir / 'apply.db'}"
        self.env = {
            **os.environ,
            "SCHEDSTREAM_KAFKA_BOOTSTRAP": bootstrap,
            "SCHEDSTREAM_DB_URL": f"sqlite:///{workdir / 'worker.db'}",
            "SCHEDSTREAM_EVENTS_TOPIC": self.events_topic,
            "SCHEDSTREAM_DECISIONS_TOPIC": self.decisions_topic,
            "SCHEDSTREAM_APP_ID": f"schedstream-{run}",
            "SCHEDSTREAM_DATA_DIR": str(workdir / "data"),
            "SCHEDSTREAM_LOG_FORMAT": "json",
            "SCHEDSTREAM_SCHEDULE_PERIOD": "0.5",
            **env,
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.starts: dict[str, int] = {}
        workdir.mkdir(parents=True, exist_ok=True)

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}-{self.starts.get(name, 0)}.log"

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """Start ``schedstream NAME ARGS`` (its log in a file: a pipe nobody reads would stall it)."""
        self.starts[name] = self.starts.get(name, 0) + 1
        with open(self.log(name), "wb") as log:
            proc = subprocess.Popen([SCHEDSTREAM, name, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs[name] = proc
        return proc

    def start_watch(self) -> subprocess.Popen[bytes]:
        return self.start("watch", "--kubeconfig", str(self.kubeconfig), "--cluster", self.cluster)

    def start_worker(self) -> subprocess.Popen[bytes]:
        return self.start("worker")

    def start_apply(self, *args: str) -> subprocess.Popen[bytes]:
        return self.start("apply", "--kubeconfig", str(self.kubeconfig), "--ledger", self.ledger_url, *args)

    def schedstream(self, *args: str) -> str:
        done = subprocess.run([SCHEDSTREAM, *args], env=self.env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"schedstream {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def kill(self, name: str) -> None:
        """SIGKILL, as a crash would."""
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait()

    def stop(self, name: str, timeout: float = 30) -> int:
        """SIGTERM, then SIGKILL after ``timeout`` s; the exit status."""
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):  # apply first: it may be mid-write
            self.stop(name)

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120, every: float = 0.3) -> Any:
    """Poll ``check`` until it returns something true; that value (TimeoutError naming ``what``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def node(name: str, cpu: str = "4", memory: str = "16Gi") -> dict[str, Any]:
    """A kwok node (kwok manages every node here and reports it Ready)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"type": "kwok", "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "capacity": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }  # fmt: skip


def add_nodes(kube: LocalKube, *nodes: dict[str, Any]) -> None:
    """Create kwok nodes (the local server has no NodeTaint admission: they are schedulable at once)."""
    kube.kubectl("create", "-f", "-", input=manifest(*nodes))


def queue(name: str = "default") -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": True}}  # fmt: skip


def pod_group(name: str, namespace: str, min_member: int, queue_name: str = "default") -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": min_member, "queue": queue_name}}  # fmt: skip


def gang_pod(name: str, namespace: str, group: str, cpu: str, scheduler: str = "volcano") -> dict[str, Any]:
    """A pod of a gang, as Volcano's job controller creates it (annotation, schedulerName)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def manifest(*objects: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})


@contextlib.contextmanager
def demo_stack(workdir: Path) -> Iterator[tuple[LocalKube, Services]]:
    """The API server with kwok, Kafka (yours if SCHEDSTREAM_KAFKA_BOOTSTRAP is set) and the services."""
    external = os.environ.get("SCHEDSTREAM_KAFKA_BOOTSTRAP")
    broker = None if external else LocalKafka(workdir / "kafka")
    kube = LocalKube(workdir / "kube", kwok=True)
    try:
        bootstrap = external or broker.start()  # type: ignore[union-attr]
        print(f"Kafka at {bootstrap}; starting etcd, kube-apiserver, kwok (built on the first run)", flush=True)
        kubeconfig = kube.start()
        print(f"API server at {kube.server} ready in {kube.start_seconds:.1f} s (kubeconfig {kubeconfig})", flush=True)
        with Services(bootstrap, kubeconfig, workdir / "services") as services:
            yield kube, services
    finally:
        kube.stop()
        if broker is not None:
            broker.stop()
        print("stopped: the services, kwok, kube-apiserver, etcd" + ("" if external else ", Kafka"), flush=True)


def show(kube: LocalKube) -> str:
    pods = json.loads(kube.kubectl("get", "pods", "-A", "-o", "json"))["items"]
    lines = [f"  {p['metadata']['namespace']}/{p['metadata']['name']:<12} node={p['spec'].get('nodeName') or '-':<8} "
             f"phase={p.get('status', {}).get('phase', '?')}" for p in pods]  # fmt: skip
    groups = json.loads(kube.kubectl("get", "podgroups", "-A", "-o", "json"))["items"]
    for g in groups:
        conds = g.get("status", {}).get("conditions") or []
        why = next((c.get("message") for c in conds if c.get("type") == "Unschedulable"), "")
        lines.append(f"  podgroup {g['metadata']['namespace']}/{g['metadata']['name']:<8} "
                     f"phase={g.get('status', {}).get('phase', '-')} {why}")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(REPO_ROOT / ".local" / "cluster-demo"))
    parser.add_argument("--seconds", type=float, default=60, help="how long to watch at most")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    with demo_stack(workdir) as (kube, services):
        services.start_watch()
        services.start_worker()
        services.start_apply()
        kube.kubectl("create", "namespace", "team-a")
        add_nodes(kube, *(node(f"kwok-{i}") for i in range(3)))
        kube.kubectl("apply", "-f", "-", input=manifest(queue()))
        gangs = {"train": (3, "2"), "eval": (2, "1"), "huge": (2, "8")}  # huge never fits a 4-CPU node
        for name, (size, cpu) in gangs.items():
            # As Volcano's job controller: a PodGroup and its pods (annotation, schedulerName volcano).
            pods = [gang_pod(f"{name}-{i}", "team-a", name, cpu) for i in range(size)]
            kube.kubectl("apply", "-f", "-", input=manifest(pod_group(name, "team-a", size), *pods))
        print("created 3 kwok nodes (4 CPU each), queue default, gangs train (3 x 2 CPU), eval (2 x 1 CPU),"
              " huge (2 x 8 CPU, never fits)", flush=True)  # fmt: skip
        deadline = time.monotonic() + args.seconds
        last = ""
        while time.monotonic() < deadline:
            now = show(kube)
            if now != last:
                print(f"--- {time.strftime('%H:%M:%S')}\n{now}", flush=True)
                last = now
            running = [line for line in now.splitlines() if "phase=Running" in line and "podgroup" not in line]
            if len(running) == 5 and "gang unschedulable" in now:
                break
            time.sleep(1)
        print(kube.kubectl("get", "nodes", "-o", "wide"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
