"""The scheduling-cycle benchmark of issue 4: one cycle over N nodes and 4 pods per node pending
in gangs of mixed sizes (1, 4, 8, 16, 21: ten on average), 4 queues in a two-level tree under
capacity with hierarchy, 20% of gangs asking for a single InfiniBand cluster (8 fabrics).

The naive baseline is the all-pairs loop: every pending pod checks every node (resources only,
first-fit by least requested, no gangs, no quotas, no topology). It is timed on the first
``BASELINE_PODS`` pods and scaled to all of them, since running it whole takes minutes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from domain.cycle import run_cycle
from domain.decisions import Decision
from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig, from_mapping

SIZES = (1, 4, 8, 16, 21)
QUEUES = (("org", ""), ("a", "org"), ("b", "org"), ("c", "org"))
BASELINE_PODS = 2000
CONFIG = from_mapping({
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "capacity", "enableHierarchy": True},
                     {"name": "nodeorder"}, {"name": "binpack"}]},
    ]
})  # fmt: skip


@dataclass(frozen=True)
class Result:
    nodes: int
    pods: int
    seconds: float
    placed: int
    baseline_seconds: float
    cpu_seconds: float


def _lines(nodes: int, gangs: int, *, unique_shapes: bool = False) -> list[str]:
    out: list[dict] = []
    for i in range(nodes):
        labels = {"volcano.sh/ib-cluster": f"ib-{i % 8}"}
        alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
        meta = {"name": f"node-{i:05d}", "uid": f"n{i}", "labels": labels}
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"allocatable": alloc}})
    for name, parent in QUEUES:
        spec = {"weight": 1, **({"parent": parent} if parent else {})}
        meta = {"name": name, "uid": f"q-{name}"}
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": meta, "spec": spec})
    for g in range(gangs):
        size = SIZES[g % len(SIZES)]
        annotations = {"volcano.sh/network-topology": "ib-cluster"} if g % 5 == 0 else {}
        meta = {"name": f"job-{g}", "namespace": "bench", "uid": f"pg{g}", "annotations": annotations}
        spec = {"minMember": size, "queue": "abc"[g % 3]}
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec})
        gpu = str(1 + g % 2)
        for p in range(size):
            pod_meta = {"name": f"job-{g}-{p}", "namespace": "bench", "uid": f"p{g}-{p}",
                        "annotations": {"scheduling.k8s.io/group-name": f"job-{g}"}}  # fmt: skip
            # Two shapes in all, or one per pod (its own memory request, a MiB apart): the honest case
            # for anything memoised per shape.
            memory = f"{32 * 1024 + len(out)}Mi" if unique_shapes else "32Gi"
            request = {"cpu": "4", "memory": memory, "nvidia.com/gpu": gpu}
            containers = [{"name": "main", "resources": {"requests": request}}]
            pod_spec = {"schedulerName": "volcano", "containers": containers}
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": pod_meta,
                    "spec": pod_spec,
                    "status": {"phase": "Pending"},
                }
            )
    return [json.dumps({"type": "ADDED", "cluster": "bench", "object": obj}) for obj in out]


def _naive(nodes: list[dict[str, int]], pods: list[dict[str, int]]) -> float:
    """All pairs: each pod scans every node, takes the least requested one that fits."""
    free = [dict(n) for n in nodes]
    started = time.perf_counter()
    for request in pods:
        best, best_score = -1, -1.0
        for index, node in enumerate(free):
            if all(node.get(k, 0) >= v for k, v in request.items()):
                score = node["cpu"] / 64000 + node["memory"] / (512 * 2**30 * 1000)
                if score > best_score:
                    best, best_score = index, score
        if best >= 0:
            for k, v in request.items():
                free[best][k] -= v
    return time.perf_counter() - started


def prepared(
    nodes: int, config: SchedulerConfig = CONFIG, *, unique_shapes: bool = False
) -> tuple[int, Callable[[], list[Decision]]]:
    """The cycle to measure: the state of ``nodes`` nodes and their pending gangs folded, how
    many pods are pending, and the one cycle over it still to run."""
    engine = Engine(config, on_markers=lambda _: True)
    for line in _lines(nodes, nodes * 2 // 5, unique_shapes=unique_shapes):
        engine.handle(parse_event(line))
    state = engine.state("bench")
    pods = sum(1 for p in state.pods().values() if not p.spec.node_name)
    return pods, lambda: run_cycle(state, engine.cache(state), config, seq=state.next_seq)


def measure(nodes: int, config: SchedulerConfig = CONFIG, *, unique_shapes: bool = False) -> Result:
    pods, cycle = prepared(nodes, config, unique_shapes=unique_shapes)
    started, cpu_started = time.perf_counter(), time.process_time()
    decisions = cycle()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    placed = sum(1 for d in decisions if d.kind == "Bind")
    node_list = [{"cpu": 64000, "memory": 512 * 2**30 * 1000, "nvidia.com/gpu": 8000, "pods": 110000}] * nodes
    sample = [{"cpu": 4000, "memory": 32 * 2**30 * 1000, "nvidia.com/gpu": 1000 * (1 + (i // 10) % 2), "pods": 1000}
              for i in range(min(pods, BASELINE_PODS))]  # fmt: skip
    baseline = _naive(node_list, sample) * pods / len(sample)
    return Result(nodes, pods, seconds, placed, baseline, cpu_seconds)


def main(sizes: tuple[int, ...] = (500, 5000, 10000)) -> None:
    print(f"{'nodes':>6} {'pending':>8} {'cycle s':>8} {'placed':>7} {'pods/s':>8} {'naive s*':>9} {'x faster':>8}")
    for nodes in sizes:
        r = measure(nodes)
        print(f"{r.nodes:>6} {r.pods:>8} {r.seconds:>8.2f} {r.placed:>7} {r.placed / r.seconds:>8,.0f} "
              f"{r.baseline_seconds:>9.1f} {r.baseline_seconds / r.seconds:>8.1f}")  # fmt: skip
    print(f"* naive all-pairs first fit, timed on {BASELINE_PODS} pods and scaled to all pending pods")


if __name__ == "__main__":
    main()
