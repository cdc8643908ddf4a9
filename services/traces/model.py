"""The common trace model: jobs (what arrives, when, for how long, asking for what) and nodes.

Every importer (Alibaba openb, Alibaba DLRM, SWF, the native format) returns a ``Trace``, the
one shape the simulator and ``events.to_events`` consume. Requests and allocatable amounts
are Kubernetes quantity strings (``"500m"``, ``"16Gi"``), checked with the domain's own
parser, so anything a trace holds can be rendered as a Pod or Node the scheduler accepts.
The format is documented in services/traces/README.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation

from domain.quantity import MILLI, InvalidQuantity, ResourceList, add, parse_milli

SCHEDULERS = ("volcano", "kueue")
IB_CLUSTER = "ib-cluster"
"""The topology request the contract names: all tasks inside one InfiniBand cluster."""
ID_LIMIT = 240  # a DNS subdomain (253) minus room for a task suffix
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


class TraceError(ValueError):
    """A trace file or value that cannot be imported; the message says where."""


def _check_name(kind: str, name: str) -> None:
    if len(name) > ID_LIMIT or not _DNS_SUBDOMAIN.fullmatch(name):
        raise TraceError(f"{kind} {name!r} is not a DNS subdomain name of at most {ID_LIMIT} characters")


def _check_quantities(owner: str, amounts: Mapping[str, str]) -> None:
    for resource, amount in amounts.items():
        if not isinstance(amount, str):
            raise TraceError(f"{owner}: {resource} must be a quantity string, not {amount!r}")
        try:
            parse_milli(amount)
        except InvalidQuantity as exc:
            raise TraceError(f"{owner}: {resource}: {exc}") from None


def _check_seconds(owner: str, what: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise TraceError(f"{owner}: {what} must be a finite number of seconds >= 0, not {value!r}")


@dataclass(frozen=True)
class Job:
    """One job: ``tasks`` identical pods, each asking for ``requests``, arriving at ``submit``.

    ``duration`` is how long the job runs once started, in seconds; None when the trace does
    not know (it never ran, or still ran when the trace ended): it runs until the simulation
    ends. ``min_member`` (None = all tasks) is the gang minimum; ``topology`` a placement
    request such as ``"ib-cluster"``; ``node_affinity`` maps a node label to the values it may
    take (any of them); ``scheduler`` (volcano or kueue) overrides the renderer's default.
    """

    id: str
    submit: float
    duration: float | None
    tasks: int = 1
    requests: dict[str, str] = field(default_factory=dict, hash=False)
    queue: str = "default"
    priority: int = 0
    min_member: int | None = None
    topology: str | None = None
    scheduler: str | None = None
    node_affinity: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    labels: dict[str, str] = field(default_factory=dict, hash=False)
    estimate: float | None = None  # the runtime the trace says was asked for (SWF: requested time), if any

    def __post_init__(self) -> None:
        _check_name("job id", self.id)
        owner = f"job {self.id}"
        _check_seconds(owner, "submit", self.submit)
        if self.duration is not None:
            _check_seconds(owner, "duration", self.duration)
        if self.estimate is not None:
            _check_seconds(owner, "estimate", self.estimate)
        if self.tasks < 1:
            raise TraceError(f"{owner}: tasks must be >= 1, not {self.tasks}")
        if self.min_member is None:
            object.__setattr__(self, "min_member", self.tasks)
        elif not 1 <= self.min_member <= self.tasks:
            raise TraceError(f"{owner}: min_member must be between 1 and tasks ({self.tasks}), not {self.min_member}")
        _check_quantities(owner, self.requests)
        if not self.queue:
            raise TraceError(f"{owner}: queue is empty")
        if self.topology == "":
            raise TraceError(f"{owner}: topology is empty (leave it out for none)")
        if self.scheduler is not None and self.scheduler not in SCHEDULERS:
            raise TraceError(f"{owner}: scheduler must be one of {', '.join(SCHEDULERS)}, not {self.scheduler!r}")
        if any(not values for values in self.node_affinity.values()):
            raise TraceError(f"{owner}: a node_affinity label needs at least one value")

    @property
    def gang(self) -> int:
        """The gang minimum as an int (``min_member`` after defaulting)."""
        assert self.min_member is not None
        return self.min_member

    def total(self) -> ResourceList:
        """Requests of all tasks together, in milli-units."""
        return {name: parse_milli(amount) * self.tasks for name, amount in self.requests.items()}


@dataclass(frozen=True)
class Node:
    """A node of the cluster a trace ran on: its allocatable resources and labels."""

    name: str
    allocatable: dict[str, str] = field(default_factory=dict, hash=False)
    labels: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        _check_name("node name", self.name)
        _check_quantities(f"node {self.name}", self.allocatable)


@dataclass(frozen=True)
class Trace:
    """Jobs sorted by submit time then id (unique ids), and the nodes (unique names), maybe none."""

    jobs: tuple[Job, ...]
    nodes: tuple[Node, ...] = ()

    def __post_init__(self) -> None:
        jobs = tuple(sorted(self.jobs, key=lambda job: (job.submit, job.id)))
        object.__setattr__(self, "jobs", jobs)
        object.__setattr__(self, "nodes", tuple(self.nodes))
        _check_unique("job id", (job.id for job in jobs))
        _check_unique("node name", (node.name for node in self.nodes))

    def requested(self) -> ResourceList:
        """Total requests of every task of every job, in milli-units."""
        total: ResourceList = {}
        for job in self.jobs:
            add(total, job.total())
        return total

    def allocatable(self) -> ResourceList:
        """Total allocatable of every node, in milli-units."""
        total: ResourceList = {}
        for node in self.nodes:
            add(total, {name: parse_milli(amount) for name, amount in node.allocatable.items()})
        return total


def with_arrival_scale(trace: Trace, scale: float) -> Trace:
    """The trace with its arrivals ``scale`` times as frequent: every submit time's distance from
    the first submit divided by ``scale`` (runtimes, sizes and nodes unchanged), which raises the
    offered load by that factor; 1.0 gives the trace back."""
    if not (math.isfinite(scale) and scale > 0):
        raise TraceError(f"arrival scale must be a finite number > 0, not {scale!r}")
    if scale == 1.0 or not trace.jobs:
        return trace
    first = trace.jobs[0].submit
    return Trace(tuple(replace(job, submit=first + (job.submit - first) / scale) for job in trace.jobs), trace.nodes)


ESTIMATES = ("none", "trace", "exact")


def with_estimates(trace: Trace, mode: str) -> Trace:
    """The trace with the runtime estimates the scheduler is told (``runtimes.ESTIMATE``):
    ``none`` (the default: a Kubernetes cluster has none), ``trace`` (those the trace gives, e.g.
    SWF's requested time) or ``exact`` (each job's own runtime, as the EASY baseline uses)."""
    if mode not in ESTIMATES:
        raise TraceError(f"estimates must be one of {', '.join(ESTIMATES)}, not {mode!r}")
    if mode == "trace":
        return trace
    jobs = tuple(replace(job, estimate=job.duration if mode == "exact" else None) for job in trace.jobs)
    return Trace(jobs, trace.nodes)


def _check_unique(what: str, names: Iterable[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise TraceError(f"duplicate {what} {name!r}")
        seen.add(name)


def milli_quantity(milli: int) -> str:
    """``12000`` milli-units -> ``"12"``, ``3152`` -> ``"3152m"``."""
    return str(milli // MILLI) if milli % MILLI == 0 else f"{milli}m"


def decimal_quantity(number: str, suffix: str = "") -> str:
    """A decimal as written in a trace (``"320.0"``, ``"1e2"``) plus a unit suffix -> ``"320Gi"``."""
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise TraceError(f"not a number: {number!r}") from None
    if not value.is_finite() or value < 0:
        raise TraceError(f"not a non-negative number: {number!r}")
    text = format(value.normalize(), "f")
    return f"{text}{suffix}"
