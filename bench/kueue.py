"""Kueue admission benchmark in the shape of Kueue's scheduler performance test (baseline):
5 cohorts x 6 ClusterQueues (20 cpu nominal, borrowingLimit 100, reclaimWithinCohort Any,
withinClusterQueue LowerPriority) and three workload classes per queue arriving over time and
running for a fixed time:

    class   per queue  every   runtime  priority  cpu
    small   350        100 ms  200 ms   50        1
    medium  100        500 ms  500 ms   100       5
    large    50        1200 ms 1000 ms  200       20

Time is simulated: a SCHEDULE marker every ``--period`` ms is the scheduler clock; a workload
admitted at t finishes (the cluster reports Finished) at t + runtime. Prints admissions per
second of wall time, queue usage (cpu-ms used / (nominal x elapsed ms), Kueue's figure), and
the average simulated wait from creation to admission per class, with the CPU time of the
process (steadier than wall time on a shared machine), the part of it in the scheduler
(``parse_event`` and ``Engine.handle``; the rest is this loop's own JSON and digest), and a digest
of every decision (equal digests: the same decisions). ``--scale`` shrinks the per-queue counts (1.0 = the 15,000
workloads of the baseline). The shape's numbers are services/traces/kueue_shape.py's, which
also runs it through ``schedstream simulate``.

    python -m bench.kueue [--scale 0.1] [--period 100]
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig
from services.traces.kueue_shape import CLASSES, COHORTS, NOMINAL, QUEUES_PER_COHORT, WorkloadClass

T0 = datetime(2026, 1, 1, tzinfo=UTC)
API = "kueue.x-k8s.io/v1beta2"
LIMIT_MS = 3_600_000  # give up after an hour of scheduler clock


def _at(ms: int) -> str:
    return (T0 + timedelta(milliseconds=ms)).isoformat().replace("+00:00", "Z")


def _event(type_: str, obj: dict[str, Any], rv: int) -> str:
    obj["metadata"]["resourceVersion"] = str(rv)
    obj["metadata"].setdefault("uid", f"uid-{obj['kind']}-{obj['metadata']['name']}")
    return json.dumps({"type": type_, "cluster": "bench", "object": obj})


def _setup() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default"}}]
    quota = {"name": "cpu", "nominalQuota": str(NOMINAL), "borrowingLimit": "100"}
    group = {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [quota]}]}
    preemption = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            name = f"cq-{c}-{q}"
            spec = {"cohortName": f"cohort-{c}", "resourceGroups": [group], "namespaceSelector": {}}
            objs.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
                         "spec": {**spec, "preemption": preemption}})  # fmt: skip
            objs.append({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": "bench"},
                         "spec": {"clusterQueue": name}})  # fmt: skip
    return objs


def _workload(name: str, queue: str, cls: WorkloadClass, created_ms: int) -> dict[str, Any]:
    requests = {"cpu": str(cls.cpu)}
    pod_set = {
        "name": "main",
        "count": 1,
        "template": {"spec": {"containers": [{"resources": {"requests": requests}}]}},
    }
    return {
        "apiVersion": API,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "bench", "creationTimestamp": _at(created_ms)},
        "spec": {"queueName": queue, "podSets": [pod_set], "priority": cls.priority},
    }


def run(scale: float, period_ms: int) -> dict[str, Any]:
    engine = Engine(SchedulerConfig(), on_markers=lambda _: True)
    rv = 0
    for obj in _setup():
        rv += 1
        engine.handle(parse_event(_event("ADDED", obj, rv)))
    arrivals: list[tuple[int, str, dict[str, Any]]] = []
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            for cls in CLASSES:
                for i in range(max(1, int(cls.count * scale))):
                    name = f"{cls.name}-{c}-{q}-{i}"
                    arrivals.append((i * cls.every_ms, name, _workload(name, f"cq-{c}-{q}", cls, i * cls.every_ms)))
    arrivals.sort(key=lambda a: (a[0], a[1]))
    by_name = {name: obj for _, name, obj in arrivals}
    classes = {cls.name: cls for cls in CLASSES}
    finishes: list[tuple[int, str]] = []
    running: dict[str, int] = {}  # name -> when it finishes, until evicted
    waits: dict[str, list[int]] = {cls.name: [] for cls in CLASSES}
    used_cpu_ms, admissions, now, next_arrival, done = 0, 0, 0, 0, 0
    digest = hashlib.sha256()
    scheduler = 0.0  # CPU in parse_event and Engine.handle: the scheduler's, without this loop's JSON

    def handle(line: str) -> list[Any]:
        nonlocal scheduler
        began = time.process_time()
        decisions = engine.handle(parse_event(line)).decisions
        scheduler += time.process_time() - began
        return decisions

    started, cpu_started = time.perf_counter(), time.process_time()
    while done < len(arrivals) and now < LIMIT_MS:
        while next_arrival < len(arrivals) and arrivals[next_arrival][0] <= now:
            rv += 1
            handle(_event("ADDED", arrivals[next_arrival][2], rv))
            next_arrival += 1
        while finishes and finishes[0][0] <= now:
            at, name = heapq.heappop(finishes)
            if running.get(name) != at:
                continue  # evicted before it finished
            del running[name]
            rv, done = rv + 1, done + 1
            used_cpu_ms += classes[name.split("-")[0]].cpu * classes[name.split("-")[0]].runtime_ms
            finished = {**by_name[name], "status": {"conditions": [{"type": "Finished", "status": "True"}]}}
            handle(_event("MODIFIED", json.loads(json.dumps(finished)), rv))
        marker = json.dumps({"type": "SCHEDULE", "cluster": "bench", "time": _at(now)})
        for decision in handle(marker):
            digest.update(json.dumps(decision.to_dict(), sort_keys=True).encode())
            name = decision.target.name
            if decision.kind.value == "Evict":
                running.pop(name, None)
            elif decision.reason == "QuotaReserved" and decision.fields.get("admission"):
                cls = classes[name.split("-")[0]]
                waits[cls.name].append(now - _created_ms(by_name[name]))
                running[name] = now + cls.runtime_ms
                heapq.heappush(finishes, (now + cls.runtime_ms, name))
                admissions += 1
        now += period_ms
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    queues = COHORTS * QUEUES_PER_COHORT
    return {
        "workloads": len(arrivals),
        "finished": done,
        "admissions": admissions,
        "simulated_s": now / 1000,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "scheduler_cpu_s": round(scheduler, 2),
        "admissions_per_s": round(admissions / wall, 1),
        "admissions_per_cpu_s": round(admissions / cpu, 1),
        "usage": round(used_cpu_ms / (queues * NOMINAL * now), 3),
        "avg_wait_ms": {name: round(sum(w) / len(w)) if w else None for name, w in waits.items()},
        "decisions_sha256": digest.hexdigest()[:16],
    }


def _created_ms(obj: dict[str, Any]) -> int:
    created = datetime.fromisoformat(obj["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    return int((created - T0) / timedelta(milliseconds=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--period", type=int, default=100, help="ms of scheduler clock between cycles")
    args = parser.parse_args()
    print(json.dumps(run(args.scale, args.period), indent=2))


if __name__ == "__main__":
    main()
