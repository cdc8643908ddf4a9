"""How fast ``schedstream apply`` binds, beside the bare binding calls it is made of.

It starts a local broker (or uses SCHEDSTREAM_KAFKA_BOOTSTRAP) and API server (ops/), creates
``--nodes`` nodes and twice ``--pods`` pods, then times, in the same run and on the same server:

* the baseline: one ``POST pods/NAME/binding`` per pod, one after the other, through the same
  client, with nothing else (no read first, no ledger, no Kafka);
* ``schedstream apply`` on ``--pods`` Bind decisions for the other pods, produced into a topic
  first: from its first applied decision to its last (the log's timestamps), so the process start
  and the consumer group's join are not counted. Each decision is a read, a binding, a ledger row
  and, per batch, an offset commit.

Run: ``python -m bench.apply [--nodes 10] [--pods 500]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

from ops.cluster_demo import Services, add_nodes, manifest, node
from ops.local_kafka import LocalKafka
from ops.local_kube import LocalKube
from services.kube.api import Rest, object_path
from services.kube.client import connect

CHUNK = 250


def _pods(kube: LocalKube, names: list[str]) -> list[dict[str, object]]:
    for start in range(0, len(names), CHUNK):
        pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "bench"},
                 "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "x"}]}}
                for name in names[start : start + CHUNK]]  # fmt: skip
        kube.kubectl("create", "-f", "-", input=manifest(*pods))
    return json.loads(kube.kubectl("get", "pods", "-n", "bench", "-o", "json"))["items"]


async def _baseline(kubeconfig: Path, names: list[str], nodes: list[str]) -> float:
    async with connect(kubeconfig) as kube:
        rest = Rest(kube.api_client)
        began = time.perf_counter()
        for i, name in enumerate(names):
            body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": "bench"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]}}  # fmt: skip
            await rest.post(object_path("v1", "Pod", "bench", name) + "/binding", body)
        return time.perf_counter() - began


def _applier(services: Services, workdir: Path, pods: list[dict[str, object]], nodes: list[str]) -> float:
    decisions = []
    for i, pod in enumerate(pods):
        meta = pod["metadata"]
        target = {"apiVersion": "v1", "kind": "Pod", "namespace": "bench", "name": meta["name"], "uid": meta["uid"]}  # type: ignore[index]
        decisions.append({"id": uuid.uuid4().hex, "cluster": "bench", "seq": i, "kind": "Bind", "target": target,
                          "reason": "Scheduled", "node": nodes[i % len(nodes)]})  # fmt: skip
    path = workdir / "decisions.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in decisions))
    services.schedstream("produce", "--topic", services.decisions_topic, str(path))
    proc = services.start_apply("--exit-when-idle", "3")
    proc.wait(1800)
    services.procs.pop("apply")
    stamps = [json.loads(line)["timestamp"] for line in services.log("apply").read_text().splitlines()
              if '"event": "applied"' in line]  # fmt: skip
    if len(stamps) != len(decisions):
        raise SystemExit(f"apply applied {len(stamps)} of {len(decisions)} decisions; see {services.log('apply')}")
    first, last = (datetime.fromisoformat(s.replace("Z", "+00:00")) for s in (stamps[0], stamps[-1]))
    return (last - first).total_seconds()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--pods", type=int, default=500)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="schedstream-bench-apply-"))
    external = os.environ.get("SCHEDSTREAM_KAFKA_BOOTSTRAP")
    broker = None if external else LocalKafka(workdir / "kafka")
    kube = LocalKube(workdir / "kube", kwok=False)
    try:
        bootstrap = external or broker.start()  # type: ignore[union-attr]
        kube.start()
        kube.kubectl("create", "namespace", "bench")
        nodes = [f"n-{i:03d}" for i in range(args.nodes)]
        add_nodes(kube, *(node(n, cpu="1000") for n in nodes))
        names = [f"p-{i:05d}" for i in range(2 * args.pods)]
        pods = _pods(kube, names)
        baseline = asyncio.run(_baseline(kube.kubeconfig, names[: args.pods], nodes))
        ours = [p for p in pods if p["metadata"]["name"] in set(names[args.pods :])]
        with Services(bootstrap, kube.kubeconfig, workdir / "services") as services:
            applied = _applier(services, workdir, ours, nodes)
        n = args.pods
        print(f"binding {n} pods, one after the other, on one kube-apiserver ({args.nodes} nodes):")
        print(f"  baseline: POST binding only          {baseline:7.2f} s  {n / baseline:7.1f} binds/s")
        print(f"  schedstream apply (Bind decisions)   {applied:7.2f} s  {n / applied:7.1f} decisions/s"
              f"  ({applied / baseline:.2f}x the baseline's time)")  # fmt: skip
    finally:
        kube.stop()
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
