"""Small traces for the simulator's tests, with outcomes worked out by hand in the tests, and
helpers that read the streams a run writes."""

from __future__ import annotations

import json
from datetime import datetime

from services.simulate.clock import simulated, wall
from services.traces.model import Job, Node, Trace

CPU4 = {"cpu": "4", "memory": "8Gi"}
THREE_NODES = tuple(Node(f"n{i}", {"cpu": "4", "memory": "16Gi"}) for i in range(3))

# Three 4-cpu nodes, five jobs of whole nodes: a (2 nodes, 100 s) and b (1 node, 50 s) fill the
# cluster at 0; c (a gang of 2, 100 s) arrives at 10, d (1 node, 30 s) at 20, e (1 node, 200 s) at 30.
SMALL = Trace(
    (
        Job("a", 0, 100, tasks=2, requests=CPU4),
        Job("b", 0, 50, requests=CPU4),
        Job("c", 10, 100, tasks=2, requests=CPU4),
        Job("d", 20, 30, requests=CPU4),
        Job("e", 30, 200, requests=CPU4),
    ),
    THREE_NODES,
)

# Two 4-cpu nodes: an elastic low-priority job (2 tasks, gang of 1) takes both; a high-priority
# pod and a gang arrive and preempt it; a pod of unknown duration runs until the end.
PREEMPTION_CONFIG = {"actions": "enqueue, allocate, preempt, backfill"}
PREEMPTION = Trace(
    (
        Job("low", 0, 100, tasks=2, min_member=1, requests={"cpu": "4"}, priority=1),
        Job("high", 5, 20, requests={"cpu": "4"}, priority=100),
        Job("gang", 6, 10, tasks=2, requests={"cpu": "2"}, priority=50),
        Job("forever", 7, None, requests={"cpu": "1"}),
    ),
    THREE_NODES[:2],
)

# Kueue: two 4-cpu nodes, one ClusterQueue "team" (derived: the whole 8 cpu). low (2 pods of
# 2 cpu) and mid (1 pod) are admitted; high (2 pods, priority 100) preempts mid, the lowest
# priority that frees enough, and mid runs again after high has finished.
KUEUE = Trace(
    (
        Job("low", 0, 100, tasks=2, requests={"cpu": "2"}, queue="team", priority=1, scheduler="kueue"),
        Job("mid", 1, 10, requests={"cpu": "2"}, queue="team", priority=1, scheduler="kueue"),
        Job("high", 5, 20, tasks=2, requests={"cpu": "2"}, queue="team", priority=100, scheduler="kueue"),
    ),
    THREE_NODES[:2],
)

# Kueue with waitForPodsReady (timeout 1 min, requeue backoff from 10 s) on two 4-cpu nodes: ok
# (one pod of 2 cpu, 100 s) runs; big's one pod asks for 6 cpu, which its quota (the derived 8
# cpu) allows and no node has, so it is admitted and its pod is never bound.
PODS_READY_CONFIG = {
    "kueue": {"waitForPodsReady": {"enable": True, "timeout": "1m", "requeuingStrategy": {"backoffBaseSeconds": 10}}}
}
PODS_READY = Trace(
    (
        Job("ok", 0, 100, requests={"cpu": "2"}, queue="team", scheduler="kueue"),
        Job("big", 0, 10, requests={"cpu": "6"}, queue="team", scheduler="kueue"),
    ),
    THREE_NODES[:2],
)


def marker_times(events: bytes) -> list[float]:
    """The simulated time of every SCHEDULE marker of a run's stream."""
    lines = (json.loads(line) for line in events.splitlines())
    return [simulated(datetime.fromisoformat(line["time"])) for line in lines if line["type"] == "SCHEDULE"]


def stream_with_every_marker(events: bytes, period: float) -> bytes:
    """The same stream with a marker in every period from the first marker on, also those in
    which nothing changed (markers are on the grid k * ``period``). A run skips periods only
    when nothing happened in them, so the events between two markers further apart happened
    in the last period before the later one: the added markers go before them."""
    out: list[bytes] = []
    since: list[bytes] = []  # the lines after the last marker
    last: int | None = None
    for line in events.splitlines():
        if b'"SCHEDULE"' not in line:
            since.append(line)
            continue
        tick = round(simulated(datetime.fromisoformat(json.loads(line)["time"])) / period)
        for k in range(tick if last is None else last + 1, tick):
            out.append(json.dumps({"type": "SCHEDULE", "cluster": "default", "time": wall(k * period)}).encode())
        out.extend(since)
        out.append(line)
        since, last = [], tick
    out.extend(since)
    return b"\n".join(out) + b"\n"


def without_position(decisions: bytes) -> list[dict[str, object]]:
    """The decisions without what depends on the stream's positions (``id``, ``seq``)."""
    return [{k: v for k, v in json.loads(line).items() if k not in ("id", "seq")} for line in decisions.splitlines()]
