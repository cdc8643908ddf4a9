"""Flavor assignment: for each podSet and each resource group of its ClusterQueue, the flavor
(in the group's order) where the podSet's requests fit, as Kueue's flavor assigner with the
default fungibility: a flavor that fits, with or without borrowing, ends the search; one that
fits only by preempting is remembered while later flavors are tried, and the best of those is
kept: one that needs only reclaim from other queues above one that needs priority preemption
in the ClusterQueue, above one where no preemption candidates exist; then the one that borrows
through fewer cohort levels. Preemption is considered at all only when the request fits the
nominal quota, or a cohort below the root could hold it, or borrowing while preempting is
allowed (``borrowWithinCohort``, or fair sharing with reclaim). A TAS flavor also needs a
topology placement, unless a ProvisioningRequest check delays it to the second pass. The
workload's mode is the worst of its podSets', its borrowing level the highest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from domain.kueue import fair_preemption, preemption, tas
from domain.kueue.admission_checks import delays_topology
from domain.kueue.cohort_tree import FlavorResource, QuotaNode
from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.settings import FairSharing
from domain.kueue.tas import Placement
from domain.kueue.workloads import PodSetRequest, WorkloadInfo
from domain.objects.kueue import ClusterQueue, PodSet, ResourceFlavor
from domain.quantity import PODS, ResourceList, format_milli


class Mode(IntEnum):
    """How a request fits, worst to best."""

    NO_FIT = 0  # not even with every other workload gone
    PREEMPT = 1  # fits once some workloads are preempted
    BORROW = 2  # fits now, above nominal quota, with cohort capacity
    FIT = 3  # fits in unused nominal quota


class Possibility(IntEnum):
    """How a flavor can take a request, worst to best (Kueue's granular preemption modes)."""

    NO_FIT = 0  # not at all, or preemption is not allowed to make room
    NO_CANDIDATES = 1  # preemption could make room, but no workload may be preempted
    PREEMPT = 2  # by preempting workloads of the ClusterQueue itself (maybe others too)
    RECLAIM = 3  # by reclaiming only from other queues of the cohort
    FIT = 4  # now, with or without borrowing

    def mode(self, level: int) -> Mode:
        if self is Possibility.FIT:
            return Mode.BORROW if level > 0 else Mode.FIT
        return Mode.NO_FIT if self is Possibility.NO_FIT else Mode.PREEMPT


@dataclass
class PodSetAssignment:
    pod_set: PodSetRequest
    flavors: dict[str, str] = field(default_factory=dict)
    placement: Placement | None = None
    delayed: bool = False  # a TAS flavor whose topology waits for a ProvisioningRequest check

    def usage(self) -> dict[FlavorResource, int]:
        return {(f, r): self.pod_set.per_pod.get(r, 0) * self.pod_set.count for r, f in self.flavors.items()}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.pod_set.name,
            "flavors": dict(sorted(self.flavors.items())),
            "resourceUsage": {
                r: format_milli(r, a) for (_, r), a in sorted(self.usage().items(), key=lambda i: i[0][1])
            },
            "count": self.pod_set.count,
        }
        if self.placement is not None:
            out["topologyAssignment"] = self.placement.assignment
        if self.delayed:
            out["delayedTopologyRequest"] = "Pending"
        return out


@dataclass
class Assignment:
    pod_sets: list[PodSetAssignment]
    mode: Mode
    message: str  # why not a plain fit, Kueue's wording
    borrowing: int = 0  # the highest cohort level it borrows through (0: none), after preemption
    # The preemption targets of the whole assignment, when the oracle already found them (its
    # usage is the one (flavor, resource) it simulated): None for no candidates.
    targets: list[preemption.Target] | None = None
    targets_known: bool = False

    def usage(self) -> dict[FlavorResource, int]:
        total: dict[FlavorResource, int] = {}
        for psa in self.pod_sets:
            for fr, amount in psa.usage().items():
                total[fr] = total.get(fr, 0) + amount
        return total

    def admission(self, cluster_queue: str) -> dict[str, Any]:
        return {"clusterQueue": cluster_queue, "podSetAssignments": [p.to_json() for p in self.pod_sets]}


def _why(node: QuotaNode, fr: FlavorResource, amount: int) -> str:
    flavor, resource = fr
    if fr not in node.nominal:
        return f"flavor {flavor} has no quota for {resource}"
    if amount <= node.potential(fr):
        more = format_milli(resource, amount - max(0, node.available(fr)))
        return f"insufficient unused quota for {resource} in flavor {flavor}, {more} more needed"
    want, most = format_milli(resource, amount), format_milli(resource, node.potential(fr))
    return f"insufficient quota for {resource} in flavor {flavor}, request > maximum capacity ({want} > {most})"


@dataclass(frozen=True, slots=True)
class _Oracle:
    """Simulates preemption for one (flavor, resource), as Kueue's preemption oracle does."""

    snap: KueueSnapshot
    cq: ClusterQueue
    info: WorkloadInfo
    fair: FairSharing | None
    found: dict[tuple[FlavorResource, int], list[preemption.Target] | None] = field(default_factory=dict)

    def may_preempt_while_borrowing(self) -> bool:
        policy = self.cq.spec.preemption
        if self.fair is not None and policy.reclaim_within_cohort != "Never":
            return True
        return not preemption.borrow_within_cohort_forbidden(self.cq)

    def simulate(self, fr: FlavorResource, amount: int) -> tuple[Possibility, int]:
        node = self.snap.tree.queues[self.cq.metadata.name]
        usage = {fr: amount}
        if self.fair is not None:
            found = fair_preemption.targets(self.snap, self.cq, self.info, usage, self.fair)
        else:
            found = preemption.targets(self.snap, self.cq, self.info, usage)
        self.found[(fr, amount)] = found
        if found is None:
            return Possibility.NO_CANDIDATES, node.borrowing_level(fr, amount)[0]
        for target in found:
            self.snap.charge(target.victim, -1)
        level = node.borrowing_level(fr, amount)[0]
        for target in found:
            self.snap.charge(target.victim, +1)
        own = not found or any(t.victim.admitted_to == self.cq.metadata.name for t in found)
        return (Possibility.PREEMPT if own else Possibility.RECLAIM), level


def _resource_fit(oracle: _Oracle, node: QuotaNode, fr: FlavorResource, amount: int) -> tuple[Possibility, int]:
    """How ``amount`` of ``fr`` fits the ClusterQueue: possibility and borrowing level."""
    if fr not in node.nominal or amount > node.potential(fr):
        return Possibility.NO_FIT, 0
    level, below_root = node.borrowing_level(fr, amount)
    if amount <= node.available(fr):
        return Possibility.FIT, level
    if amount <= node.nominal[fr] or below_root or oracle.may_preempt_while_borrowing():
        return oracle.simulate(fr, amount)
    return Possibility.NO_FIT, level


def _matches(flavor: ResourceFlavor, pod_set: PodSet) -> bool:
    selector = pod_set.template.spec.node_selector
    return all(selector.get(k, v) == v for k, v in flavor.spec.node_labels.items())


def _requests(cq: ClusterQueue, pod_set: PodSetRequest) -> tuple[ResourceList, list[str]]:
    covered = {r for group in cq.spec.resource_groups for r in group.covered_resources}
    requests = {r: a for r, a in pod_set.per_pod.items() if a > 0 and (r != PODS or PODS in covered)}
    return requests, sorted(r for r in requests if r not in covered)


def assign(snap: KueueSnapshot, info: WorkloadInfo, cq: ClusterQueue, fair: FairSharing | None = None) -> Assignment:
    """The best assignment for ``info`` in ``cq`` against the snapshot's usage now."""
    taken: dict[FlavorResource, int] = {}
    result = Assignment([], Mode.FIT, "")
    oracle = _Oracle(snap, cq, info, fair)
    for spec, request in zip(info.obj.spec.pod_sets, info.pod_sets, strict=True):
        requests, uncovered = _requests(cq, request)
        psa = PodSetAssignment(PodSetRequest(request.name, request.count, requests))
        if uncovered:
            result.mode, result.message = Mode.NO_FIT, f"resource {uncovered[0]} unavailable in ClusterQueue"
            return result
        messages: list[str] = []
        for group in cq.spec.resource_groups:
            wanted = [r for r in group.covered_resources if r in requests]
            if not wanted:
                continue
            picked = _pick(
                oracle,
                group.flavors,
                spec=spec,
                requests=(request, psa.pod_set),
                wanted=wanted,
                taken=taken,
                messages=messages,
            )
            mode, flavor_name, placement, level = picked
            result.mode = min(result.mode, mode)
            result.borrowing = max(result.borrowing, level)
            if mode is Mode.NO_FIT:
                break
            psa.flavors.update(dict.fromkeys(wanted, flavor_name))
            psa.placement = psa.placement or placement
            psa.delayed = psa.delayed or _delayed(snap, cq, flavor_name)
        result.pod_sets.append(psa)
        for fr, amount in psa.usage().items():
            taken[fr] = taken.get(fr, 0) + amount
        if messages and result.mode < Mode.BORROW:
            result.message = f"couldn't assign flavors to pod set {request.name}: {'; '.join(messages)}"
        if result.mode is Mode.NO_FIT:
            return result
    usage = result.usage()
    if result.mode is Mode.PREEMPT and len(usage) == 1:
        result.targets_known = (key := next(iter(usage.items()))) in oracle.found
        result.targets = oracle.found.get(key)
    return result


def _delayed(snap: KueueSnapshot, cq: ClusterQueue, flavor: str) -> bool:
    return bool(snap.flavors[flavor].spec.topology_name) and delays_topology(snap, cq, flavor)


def _pick(
    oracle: _Oracle,
    flavors: list[Any],
    *,
    spec: PodSet,
    requests: tuple[PodSetRequest, PodSetRequest],
    wanted: list[str],
    taken: Mapping[FlavorResource, int],
    messages: list[str],
) -> tuple[Mode, str, Placement | None, int]:
    """The flavor to use (``requests``: the podSet's full requests, and those the queue covers):
    the first that fits, else the best that fits by preemption; mode, flavor, placement and
    borrowing level."""
    snap, cq = oracle.snap, oracle.cq
    full, pod_set = requests
    node = snap.tree.queues[cq.metadata.name]
    best: tuple[tuple[Possibility, int], str] = ((Possibility.NO_FIT, 0), "")
    for quotas in flavors:
        flavor = snap.flavors[quotas.name]
        if not _matches(flavor, spec):
            messages.append(f"flavor {flavor.metadata.name} doesn't match node affinity")
            continue
        worst: tuple[Possibility, int] = (Possibility.FIT, 0)
        for resource in wanted:
            fr = (quotas.name, resource)
            amount = pod_set.per_pod[resource] * pod_set.count + taken.get(fr, 0)
            possibility, level = _resource_fit(oracle, node, fr, amount)
            if possibility is not Possibility.FIT:
                messages.append(_why(node, fr, amount))
            if (possibility, -level) < (worst[0], -worst[1]):
                worst = (possibility, level)
        possibility, level = worst
        if possibility is Possibility.FIT:
            placement: Placement | None = None
            if flavor.spec.topology_name and not _delayed(snap, cq, quotas.name):
                found = tas.place(
                    snap, flavor, spec.template.spec, full.per_pod, count=full.count, request=spec.topology_request
                )
                if isinstance(found, str):
                    messages.append(found)
                    continue
                placement = found
            return possibility.mode(level), quotas.name, placement, level
        if (possibility, -level) > (best[0][0], -best[0][1]):
            best = ((possibility, level), quotas.name)
    (possibility, level), name = best
    return possibility.mode(level), name, None, level
