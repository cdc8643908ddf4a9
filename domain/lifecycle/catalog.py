"""The machines by kind: each kind's Lifecycle and the function that turns a watched object
into the fact it shows. Kinds without a machine (Namespace, HyperNode, Kueue's queues and
flavors) are plain informer entries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from domain.lifecycle import job, node, pod, pod_group, queue, workload
from domain.lifecycle.table import Lifecycle


@dataclass(frozen=True, slots=True)
class Machine:
    lifecycle: Lifecycle[Any, Any]
    observe: Callable[[Any], StrEnum]

    @property
    def deleted(self) -> StrEnum:
        """Every machine's DELETED watch event is its ``Deleted`` fact."""
        return self.lifecycle.triggers("Deleted")


MACHINES: dict[str, Machine] = {
    "Pod": Machine(pod.POD, pod.observe),
    "PodGroup": Machine(pod_group.POD_GROUP, pod_group.observe),
    "Job": Machine(job.JOB, job.observe),
    "Queue": Machine(queue.QUEUE, queue.observe),
    "Workload": Machine(workload.WORKLOAD, workload.observe),
    "Node": Machine(node.NODE, node.observe),
}
