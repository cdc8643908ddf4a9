"""The deserved share of each job queue: what the policy owes it, as a share of the cluster's
capacity per resource, to set against the share it got (``metrics``).

* a Volcano Queue: its weight over the weights of the queues the trace's jobs use, the
  proportion plugin's deserved share when every queue has demand (the simulator creates
  each queue with weight 1);
* a Kueue LocalQueue: its ClusterQueue's nominal quota, summed over flavors, over the
  capacity (borrowing may take a queue above it, lending below).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.quantity import ResourceList, add, parse_milli

Shares = dict[str, dict[str, float]]
"""queue -> resource -> share of the capacity."""


def volcano(queues: Iterable[str], capacity: Mapping[str, int]) -> Shares:
    names = sorted(set(queues))
    return {name: {resource: 1 / len(names) for resource in capacity} for name in names}


def kueue(objects: Iterable[dict[str, Any]], capacity: Mapping[str, int]) -> Shares:
    objects = list(objects)
    nominal: dict[str, ResourceList] = {}
    for obj in objects:
        if obj["kind"] != "ClusterQueue":
            continue
        total: ResourceList = {}
        for group in obj.get("spec", {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                add(total, {r["name"]: parse_milli(str(r["nominalQuota"])) for r in flavor.get("resources") or []})
        nominal[obj["metadata"]["name"]] = total
    shares: Shares = {}
    for obj in objects:
        if obj["kind"] == "LocalQueue":
            quota = nominal.get(obj.get("spec", {}).get("clusterQueue", ""), {})
            shares[obj["metadata"]["name"]] = {
                resource: quota.get(resource, 0) / amount for resource, amount in capacity.items() if amount
            }
    return shares
