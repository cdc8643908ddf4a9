"""The live workloads of a cluster: each unfinished Workload with the status it has now
(``WorkloadInfo``), filed by what a cycle asks for (``WorkloadIndex``): those holding quota,
those waiting in each LocalQueue in queue order, and those the activation step must look at.

The index is kept between cycles in the Engine's cache (``domain.cache.ClusterCache``) and
renewed only for the workloads a watch event changed (``Changes``); the statuses a cycle decides re-file
their workload (``refile``). So a cycle costs what the live workloads it looks at cost, and a
finished workload is never looked at again.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from domain import quantity
from domain.changes import Changes
from domain.kueue.cohort_tree import FlavorResource
from domain.lifecycle.workload import ConditionType as C
from domain.lifecycle.workload import WorkloadView, is_active
from domain.objects.kueue import Workload
from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList
from domain.state import ClusterState

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LocalQueueRef = tuple[str, str]
"""(namespace, LocalQueue name) a workload names."""


@dataclass(frozen=True, slots=True)
class PodSetRequest:
    name: str
    count: int
    per_pod: ResourceList  # milli-units, ``pods`` included


@dataclass
class WorkloadInfo:
    key: ObjectKey
    obj: Workload
    view: WorkloadView  # changed only by ``Outbox.status``, which refiles it: quiet runs rely on that
    pod_sets: list[PodSetRequest]
    _admission: tuple[Mapping[str, Any] | None, str, dict[FlavorResource, int]] | None = field(default=None, repr=False)
    # (view, message): ``view`` already says it waits with that message (``admission._nominate``)
    said: tuple[WorkloadView, str] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def priority(self) -> int:
        return self.obj.spec.priority or 0

    @cached_property
    def created(self) -> datetime:
        return self.obj.metadata.creation_timestamp or EPOCH

    @cached_property
    def order(self) -> tuple[int, datetime, str]:
        """Queue order: higher priority first, then older, then name."""
        return (-self.priority, self.created, self.key)

    @cached_property
    def local_queue(self) -> LocalQueueRef:
        return (self.obj.metadata.namespace, self.obj.spec.queue_name)

    @cached_property
    def shape(self) -> str:
        """What admission looks at besides age: equal shapes fit (or not) alike (Kueue's equivalence hash).
        A string, as a dict key: its hash is kept, where a tuple's is computed at every lookup."""
        specs = tuple(
            (p.name, p.count, repr(p.topology_request), repr(p.template.spec)) for p in self.obj.spec.pod_sets
        )
        return repr((self.priority, specs))

    @property
    def admitted_to(self) -> str:
        return self._admission_facts()[0]

    def holds_quota(self) -> bool:
        """Its quota counts: reserved, with an admission, and not finished (Evicted still holds)."""
        view = self.view
        return view.is_true(C.QUOTA_RESERVED) and view.admission is not None and not view.is_true(C.FINISHED)

    def usage(self) -> dict[FlavorResource, int]:
        """The (flavor, resource) totals its admission reserves."""
        return self._admission_facts()[1]

    def _admission_facts(self) -> tuple[str, dict[FlavorResource, int]]:
        """(ClusterQueue, usage) of its admission, cached per admission."""
        admission = self.view.admission
        if self._admission is None or self._admission[0] is not admission:
            queue = str((admission or {}).get("clusterQueue", ""))
            self._admission = (admission, queue, self._compute_usage())
        return self._admission[1], self._admission[2]

    def _compute_usage(self) -> dict[FlavorResource, int]:
        out: dict[FlavorResource, int] = {}
        requests = {p.name: p for p in self.pod_sets}
        for psa in (self.view.admission or {}).get("podSetAssignments", ()):
            written: Mapping[str, Any] = psa.get("resourceUsage") or {}
            request = requests.get(psa.get("name", ""))
            count = int(psa.get("count", request.count if request else 0))
            for resource, flavor in (psa.get("flavors") or {}).items():
                if resource in written:
                    amount = int(quantity.parse_milli(written[resource]))
                else:
                    amount = (request.per_pod.get(resource, 0) if request else 0) * count
                out[(flavor, resource)] = out.get((flavor, resource), 0) + amount
        return out


def _pod_sets(workload: Workload) -> list[PodSetRequest]:
    return [PodSetRequest(p.name, p.count, p.template.spec.requests()) for p in workload.spec.pod_sets]


@dataclass(slots=True)
class Quiet:
    """A run of a LocalQueue's order list, ``start`` to ``end`` (exclusive), whose workloads all
    said already, at its last walk, why they wait: the message of their shape in ``messages``
    (``admission._nominate``). It holds while no workload enters, leaves or changes inside it."""

    start: int
    end: int
    messages: dict[str, str]  # shape -> the message its workloads in the run say


@dataclass
class _Queued:
    """One LocalQueue's workloads without quota, in queue order (each beside its order key), and
    the quiet runs of its last walk by where they start. The order list changes only through
    ``add`` and ``remove``, which move the runs with it."""

    order: list[tuple[tuple[int, datetime, str], WorkloadInfo]] = field(default_factory=list)
    infos: dict[str, WorkloadInfo] = field(default_factory=dict)
    quiet: dict[int, Quiet] = field(default_factory=dict)

    def add(self, info: WorkloadInfo) -> None:
        at = bisect.bisect_right(self.order, info.order, key=_ORDER_KEY)
        self.order.insert(at, (info.order, info))
        self.infos[info.key] = info
        if self.quiet:
            self._moved(at, +1)

    def remove(self, info: WorkloadInfo) -> None:
        at = bisect.bisect_left(self.order, info.order, key=_ORDER_KEY)
        del self.order[at]
        del self.infos[info.key]
        if self.quiet:
            self._moved(at, -1)

    def changed(self, info: WorkloadInfo) -> None:
        """``info``'s status changed and it stays here."""
        if self.quiet:
            self._moved(bisect.bisect_left(self.order, info.order, key=_ORDER_KEY), 0)

    def _moved(self, at: int, shift: int) -> None:
        """The workload at ``at`` entered (+1), left (-1) or changed (0): the runs after it move
        with it, a run it is in no longer holds."""
        kept = {}
        for run in self.quiet.values():
            if at < run.start or (shift > 0 and at == run.start):
                run.start, run.end = run.start + shift, run.end + shift
            elif at < run.end:
                continue
            kept[run.start] = run
        self.quiet = kept

    def in_order(self) -> Walk:
        return Walk(self)


class Walk:
    """A LocalQueue's workloads in order, read from its list as they are walked (as a list's
    iterator reads it: by position); ``index`` is the position of the next one."""

    __slots__ = ("index", "queued")

    def __init__(self, queued: _Queued) -> None:
        self.queued, self.index = queued, 0

    def __iter__(self) -> Walk:
        return self

    def __next__(self) -> WorkloadInfo:
        order = self.queued.order
        if self.index >= len(order):
            raise StopIteration
        self.index += 1
        return order[self.index - 1][1]


_ORDER_KEY = operator.itemgetter(0)


@dataclass
class WorkloadIndex:
    """The live (unfinished) workloads, filed: ``holding`` quota; ``queued`` per LocalQueue
    (active, no quota reserved); ``flagged`` (inactive, or with an Evicted condition)."""

    live: dict[ObjectKey, WorkloadInfo] = field(default_factory=dict)
    holding: dict[ObjectKey, WorkloadInfo] = field(default_factory=dict)
    queued: dict[LocalQueueRef, _Queued] = field(default_factory=dict)
    flagged: dict[ObjectKey, WorkloadInfo] = field(default_factory=dict)

    def renew(self, state: ClusterState, key: ObjectKey) -> None:
        """Take the workload at ``key`` from the state again (added, changed or gone)."""
        old = self.live.pop(key, None)
        if old is not None:
            self._unfile(old)
        obj = state.of_kind("Workload").get(key)
        if isinstance(obj, Workload):
            info = WorkloadInfo(key, obj, state.workload_view(obj), _pod_sets(obj))
            if not info.view.is_true(C.FINISHED):
                self.live[key] = info
                self._file(info)

    def refile(self, info: WorkloadInfo) -> None:
        """A decision of this cycle changed ``info.view``: move it where its filing changed
        (a queue being walked is left as it is when the workload stays in it)."""
        holds, queued, flagged = _filing(info)
        if holds != (info.key in self.holding) or queued != self._is_queued(info):
            self._unfile(info)
            self._file(info)
            return
        if queued:
            self.queued[info.local_queue].changed(info)
        if flagged != (info.key in self.flagged):
            if flagged:
                self.flagged[info.key] = info
            else:
                del self.flagged[info.key]

    def _is_queued(self, info: WorkloadInfo) -> bool:
        queued = self.queued.get(info.local_queue)
        return queued is not None and info.key in queued.infos

    def _file(self, info: WorkloadInfo) -> None:
        holds, queued, flagged = _filing(info)
        if holds:
            self.holding[info.key] = info
        if queued:
            self.queued.setdefault(info.local_queue, _Queued()).add(info)
        if flagged:
            self.flagged[info.key] = info

    def _unfile(self, info: WorkloadInfo) -> None:
        self.holding.pop(info.key, None)
        self.flagged.pop(info.key, None)
        if self._is_queued(info):
            queued = self.queued[info.local_queue]
            queued.remove(info)
            if not queued.infos:
                del self.queued[info.local_queue]


def _filing(info: WorkloadInfo) -> tuple[bool, bool, bool]:
    """(holds quota, queued: active without quota, flagged: inactive or with an Evicted condition)."""
    view = info.view
    active = is_active(info.obj.spec.active, view)
    return (
        info.holds_quota(),
        active and not view.is_true(C.QUOTA_RESERVED),
        not active or view.condition(C.EVICTED) is not None,
    )


def renew(index: WorkloadIndex | None, state: ClusterState, changes: Changes) -> WorkloadIndex:
    """``index`` (the last cycle's, or None for a new one) renewed where watch events changed
    workloads since then."""
    changed = changes.take("Workload")
    if index is None:
        index = WorkloadIndex()
        changed = set(state.of_kind("Workload"))
    for key in sorted(changed):
        index.renew(state, key)
    return index
