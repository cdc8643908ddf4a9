"""network-topology-aware: soft-mode preference. A node scores higher the lower the tier of
the closest HyperNode it shares with the members of its gang that are already placed, so a
gang that could not be kept in one domain still stays as close together as it can."""

from __future__ import annotations

from collections.abc import Mapping

from domain.scheduler.infos import TaskInfo
from domain.scheduler.node_table import NodeInfo
from domain.scheduler.session import Plugin, Session

NAME = "network-topology-aware"
_MAX = 100.0


def build(options: Mapping[str, object]) -> Plugin:
    def on_open(session: Session) -> None:
        snapshot = session.snapshot
        domains = snapshot.hyper_domains
        if not domains:
            return
        tiers = [d.tier for d in domains]
        low, high = min(tiers), max(tiers)

        def score(task: TaskInfo, node: NodeInfo) -> float:
            placed = snapshot.jobs[task.job].nodes()
            if not placed:
                return 0.0
            shared = [d.tier for d in domains if node.name in d.nodes and placed <= d.nodes]
            if not shared:
                return 0.0
            return _MAX if high == low else _MAX * (high + 1 - min(shared)) / (high + 1 - low)

        session.add_node_order(NAME, score)

    return Plugin(NAME, on_open)
