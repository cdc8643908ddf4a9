"""The objects a simulated cluster keeps (its pods and job groups), shared by the Volcano side
(``cluster``) and the Kueue side (``workloads``), and what the cluster asks of the Kueue side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from domain.decisions import Decision
from domain.quantity import ResourceList
from services.simulate.outcome import JobRecord
from services.traces.events import pod_name
from services.traces.model import Job


@dataclass(frozen=True)
class Admitted:
    """Where the Job controller asks for an admitted workload's pod to go: the node selector
    of its flavors and, under topology-aware scheduling (``topology``), of its domain."""

    node_selector: dict[str, str] = field(default_factory=dict)
    topology: bool = False


@dataclass
class SimPod:
    job: Job
    index: int
    requests: ResourceList
    attempt: int = 0
    created: float = 0.0
    node: str = ""
    phase: str = "Pending"
    started: float = 0.0  # when it was last bound (its ``status.startTime`` when its job has an estimate)
    admitted: Admitted | None = None  # None: a Volcano pod of its job's PodGroup; else a Kueue job's
    uid: tuple[int, str] | None = None  # (attempt, its uid): made once per attempt (``SimCluster.pod_meta``)

    @property
    def name(self) -> str:
        return pod_name(self.job, self.index)


@dataclass
class SimGroup:
    job: Job
    record: JobRecord
    pods: list[SimPod]
    status: dict[str, Any] = field(default_factory=dict)
    waiting: bool = True  # counted in the cluster's waiting jobs: not started, or evicted since
    admissions: int = 0  # Kueue admissions so far (each creates the pods anew)


class KueueSide(Protocol):
    """The Workloads of a simulated cluster, as the cluster drives them (``SimWorkloads``)."""

    def workload_object(self, group: SimGroup) -> dict[str, Any]: ...

    def pod_object(self, pod: SimPod, admitted: Admitted) -> dict[str, Any]: ...

    def apply(self, group: SimGroup, decision: Decision) -> None: ...

    def started(self, group: SimGroup) -> None: ...

    def finish(self, group: SimGroup) -> None: ...
