"""Small traces for the simulator's tests, with outcomes worked out by hand in the tests."""

from __future__ import annotations

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
