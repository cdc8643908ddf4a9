"""The Kueue-shape workload (issue 5, the shape of Kueue's scheduler performance test) as a
native trace, for ``schedstream simulate``: 5 cohorts x 6 ClusterQueues of 20 cpu nominal
(borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue LowerPriority), and in every
queue three classes of single-pod workloads arriving at a fixed rate with a fixed runtime:

    class   per queue  every   runtime  priority  cpu
    small   350        100 ms  200 ms   50        1
    medium  100        500 ms  500 ms   100       5
    large    50        1200 ms 1000 ms  200       20

``scale`` multiplies the per-queue counts (1.0: 15,000 workloads). Kueue's test runs no pods;
here admitted workloads run pods, on 8 nodes of 100 cpu (800 cpu for 600 of nominal quota,
so that quota and not node room is what workloads wait for).

    python -m services.traces.kueue_shape --scale 1.0 --out DIR
    schedstream simulate DIR/jobs.jsonl --nodes DIR/nodes.jsonl --queues DIR/queues.yaml \\
        --period 0.1 --out RUN

writes ``jobs.jsonl`` and ``nodes.jsonl`` (the native format) and ``queues.yaml`` (the Kueue
objects ``--queues`` takes).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from services.traces.events import WORKLOAD_API
from services.traces.model import Job, Node, Trace
from services.traces.native import write_native

COHORTS, QUEUES_PER_COHORT, NOMINAL, BORROWING_LIMIT = 5, 6, 20, 100
NODES, NODE_CPU, NODE_PODS = 8, 100, 250
FLAVOR = "default"


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    count: int
    every_ms: int
    runtime_ms: int
    priority: int
    cpu: int


CLASSES = (
    WorkloadClass("small", 350, 100, 200, 50, 1),
    WorkloadClass("medium", 100, 500, 500, 100, 5),
    WorkloadClass("large", 50, 1200, 1000, 200, 20),
)


def queue_names() -> list[str]:
    return [f"cq-{c}-{q}" for c in range(COHORTS) for q in range(QUEUES_PER_COHORT)]


def trace(scale: float = 1.0) -> Trace:
    """The workloads (Kueue jobs, one pod each) and the nodes."""
    jobs = [
        Job(
            f"{cls.name}-{queue.removeprefix('cq-')}-{i}",
            submit=i * cls.every_ms / 1000,
            duration=cls.runtime_ms / 1000,
            requests={"cpu": str(cls.cpu)},
            queue=queue,
            priority=cls.priority,
            scheduler="kueue",
        )
        for queue in queue_names()
        for cls in CLASSES
        for i in range(max(1, int(cls.count * scale)))
    ]
    nodes = [Node(f"node-{n}", {"cpu": str(NODE_CPU), "pods": str(NODE_PODS)}) for n in range(NODES)]
    return Trace(tuple(jobs), tuple(nodes))


def queues() -> list[dict[str, Any]]:
    """The flavor, the 30 ClusterQueues in their 5 cohorts, and a LocalQueue for each."""
    quota = {"name": "cpu", "nominalQuota": str(NOMINAL), "borrowingLimit": str(BORROWING_LIMIT)}
    group = {"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [quota]}]}
    preemption = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    objects: list[dict[str, Any]] = [_object("ResourceFlavor", FLAVOR, {})]
    for name in queue_names():
        cohort = f"cohort-{name.split('-')[1]}"
        spec = {"cohort": cohort, "resourceGroups": [group], "namespaceSelector": {}, "preemption": preemption}
        objects.append(_object("ClusterQueue", name, spec))
    objects.extend(_object("LocalQueue", name, {"clusterQueue": name}) for name in queue_names())
    return objects


def _object(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": WORKLOAD_API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def write(out_dir: Path, scale: float = 1.0) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_native(trace(scale), out_dir / "jobs.jsonl", out_dir / "nodes.jsonl")
    (out_dir / "queues.yaml").write_text(yaml.safe_dump_all(queues(), sort_keys=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="per-queue counts x this (1.0: 15,000 workloads)")
    parser.add_argument("--out", type=Path, required=True, help="directory for jobs.jsonl, nodes.jsonl, queues.yaml")
    args = parser.parse_args()
    write(args.out, args.scale)


if __name__ == "__main__":
    main()
