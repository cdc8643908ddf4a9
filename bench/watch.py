"""The live-cluster benchmark of issue 11: how fast ``schedstream watch`` moves a cluster into Kafka.

It starts a local broker and API server with kwok (ops/), creates ``--nodes`` kwok nodes and
``--pods`` pods, then times, in the same run and on the same server:

* ``schedstream watch`` from an empty state: the list of every kind, each object one line
  written to Kafka with acks=all, until the topic holds them all (lines/s);
* the baseline, ``kubectl get --raw '/api/v1/{nodes,pods}?watch=1'`` into a pipe: the same
  objects as the initial events of a watch, printed and nothing more (lines/s);
* a live phase: ``--live`` pods are labelled (one MODIFIED each, at kubectl's pace) while the
  watcher runs, and the time from the first label to the last line in Kafka, beside
  ``kubectl get --raw ...?watch=1`` receiving the same events.

``--rebuild`` first relinks every binary from the Go build cache and prints each build time.
Run: ``python -m bench.watch [--nodes 1000] [--pods 10000] [--live 1000] [--rebuild]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from ops.local_kafka import LocalKafka
from ops.local_kube import BIN_DIR, BINARIES, LocalKube, build

SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")
CHUNK = 500
LIST = {"apiVersion": "v1", "kind": "List"}


def _objects(nodes: int, pods: int) -> Iterator[dict[str, object]]:
    for i in range(nodes):
        yield {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"kwok-{i:04d}", "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
        }
    for i in range(pods):
        yield {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p-{i:05d}", "namespace": "bench"},
            "spec": {
                "schedulerName": "volcano",
                "containers": [{"name": "main", "image": "trainer", "resources": {"requests": {"cpu": "1"}}}],
            },
        }


def _create(kube: LocalKube, nodes: int, pods: int, workers: int = 4) -> float:
    kube.kubectl("create", "namespace", "bench")
    items = list(_objects(nodes, pods))
    chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]
    began = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        for chunk in pool.map(
            lambda c: kube.kubectl(
                "create", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1", "items": c})
            ),
            chunks,
        ):
            assert chunk
    return time.monotonic() - began


async def _end_offset(bootstrap: str, topic: str) -> int:
    """How many messages ``topic`` holds (0 before it exists)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap)  # subscribed: its metadata is fetched
    await consumer.start()
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
        return sum(ends.values())
    finally:
        await consumer.stop()


def _wait_topic(bootstrap: str, topic: str, count: int, timeout: float = 900) -> float:
    deadline = time.monotonic() + timeout
    while (have := asyncio.run(_end_offset(bootstrap, topic))) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic} holds {have} of {count} lines after {timeout} s")
        time.sleep(0.2)
    return time.monotonic()


def _kubectl_watch(kube: LocalKube, resource: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(BIN_DIR / "kubectl"), "--kubeconfig", str(kube.kubeconfig), "get", "--raw", f"/api/v1/{resource}?watch=1"],
        stdout=subprocess.PIPE,
    )


def _read_lines(process: subprocess.Popen[bytes], count: int) -> float:
    assert process.stdout is not None
    for _ in range(count):
        process.stdout.readline()
    return time.monotonic()


def _baseline_initial(kube: LocalKube, nodes: int, pods: int) -> float:
    began = time.monotonic()
    watches = [(_kubectl_watch(kube, "nodes"), nodes), (_kubectl_watch(kube, "pods"), pods)]
    with ThreadPoolExecutor(2) as pool:
        ends = list(pool.map(lambda pair: _read_lines(*pair), watches))
    for process, _ in watches:
        process.kill()
        process.wait()
    return max(ends) - began


def _label_all(kube: LocalKube, pods: int, workers: int = 4) -> None:
    names = [f"p-{i:05d}" for i in range(pods)]
    with ThreadPoolExecutor(workers) as pool:
        for done in pool.map(
            lambda part: kube.kubectl("label", "pods", "-n", "bench", *part, "step=two"),
            [names[w::workers] for w in range(workers)],
        ):
            assert done


def _watching_at(log: Path) -> float:
    """The wall-clock time of the watcher's "watching" line: imports, config and discovery done."""
    for line in log.read_text().splitlines():
        if '"watching"' in line:
            stamp = json.loads(line[line.index("{") :])["timestamp"]
            return datetime.fromisoformat(stamp).timestamp()
    raise RuntimeError(f"no 'watching' line in {log}")


def _initial_sync(kube: LocalKube, bootstrap: str, work: Path, nodes: int, pods: int) -> subprocess.Popen[bytes]:
    """Start the watcher on the populated cluster; print its sync rate beside kubectl's; return it."""
    env = {
        **os.environ,
        "SCHEDSTREAM_KAFKA_BOOTSTRAP": bootstrap,
        "SCHEDSTREAM_EVENTS_TOPIC": "bench-watch",
        "SCHEDSTREAM_DATA_DIR": str(work / "data"),
        "SCHEDSTREAM_LOG_FORMAT": "json",
    }
    total = nodes + pods
    began = time.monotonic()
    with open(work / "watch.log", "wb") as log:
        watcher = subprocess.Popen(
            [SCHEDSTREAM, "watch", "--kubeconfig", str(kube.kubeconfig), "--cluster", "bench"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    synced = _wait_topic(bootstrap, "bench-watch", total) - began
    from_ready = time.time() - _watching_at(work / "watch.log")
    baseline = _baseline_initial(kube, nodes, pods)
    print("initial sync of nodes + pods (a list, or a watch's initial events):", flush=True)
    print(f"  schedstream watch -> Kafka (acks=all), from its start   {total / synced:7.0f} lines/s"
          f"  ({total} in {synced:.1f} s)", flush=True)  # fmt: skip
    print(f"  schedstream watch -> Kafka, from its 'watching' line    {total / from_ready:7.0f} lines/s"
          f"  ({total} in {from_ready:.1f} s)", flush=True)  # fmt: skip
    print(f"  kubectl get --raw '/api/v1/{{nodes,pods}}?watch=1' -> pipe {total / baseline:7.0f} lines/s"
          f"  ({total} in {baseline:.1f} s)", flush=True)  # fmt: skip
    return watcher


def _live(kube: LocalKube, bootstrap: str, existing: int, pods: int) -> None:
    """Label ``pods`` pods while the watcher and a kubectl watch run; print when each saw the last one."""
    before = asyncio.run(_end_offset(bootstrap, "bench-watch"))
    baseline_watch = _kubectl_watch(kube, "pods")
    assert baseline_watch.stdout is not None
    for _ in range(existing):  # its initial events
        baseline_watch.stdout.readline()
    began = time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        seen = pool.submit(_read_lines, baseline_watch, pods)
        try:
            _label_all(kube, pods)
            labelled = time.monotonic() - began
            kubectl_done = seen.result() - began
        finally:
            baseline_watch.kill()  # the reader thread ends with its pipe
            baseline_watch.wait()
    watch_done = _wait_topic(bootstrap, "bench-watch", before + pods) - began
    print(f"live: {pods} pods labelled by kubectl (a MODIFIED each), the last after {labelled:.1f} s:", flush=True)
    print(f"  schedstream watch -> Kafka: the last line after {watch_done:.1f} s"
          f"  ({pods / watch_done:.0f} lines/s)", flush=True)  # fmt: skip
    print(f"  kubectl get --raw ?watch=1: the last line after {kubectl_done:.1f} s"
          f"  ({pods / kubectl_done:.0f} lines/s)", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--live", type=int, default=1000, help="pods labelled in the live phase (kubectl's pace)")
    parser.add_argument("--rebuild", action="store_true", help="relink the binaries from the Go cache first")
    args = parser.parse_args(argv)

    if args.rebuild:
        for name in BINARIES:
            (BIN_DIR / f"{name}.sha256").unlink(missing_ok=True)
        timings: dict[str, float] = {}
        build(timings=timings)
        for name, seconds in timings.items():
            print(f"rebuild {name:15} {seconds:7.1f} s (Go build cache warm)", flush=True)

    with tempfile.TemporaryDirectory(prefix="schedstream-bench-watch-") as tmp:
        work = Path(tmp)
        with LocalKafka(work / "kafka") as kafka, LocalKube(work / "kube", kwok=True) as kube:
            print(f"API server start (etcd + kube-apiserver + CRDs + kwok): {kube.start_seconds:.1f} s", flush=True)
            created = _create(kube, args.nodes, args.pods)
            print(f"created {args.nodes} nodes and {args.pods} pods in {created:.1f} s", flush=True)
            watcher = _initial_sync(kube, kafka.bootstrap, work, args.nodes, args.pods)
            try:
                _live(kube, kafka.bootstrap, args.pods, min(args.live, args.pods))
            finally:
                watcher.send_signal(signal.SIGTERM)
                watcher.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
