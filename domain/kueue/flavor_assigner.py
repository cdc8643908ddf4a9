"""Flavor assignment: for each podSet and each resource group of its ClusterQueue, the first
flavor (in the group's order) where the podSet's requests fit, as Kueue's flavor assigner with
the default fungibility: a flavor that fits, with or without borrowing, ends the search; one
that fits only by preempting is remembered while later flavors are tried; a TAS flavor also
needs a topology placement, unless a ProvisioningRequest check delays it to the second pass.
The workload's mode is the worst of its podSets'."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from domain.kueue import topology
from domain.kueue.admission_checks import delays_topology
from domain.kueue.quota import FlavorResource, QuotaNode
from domain.kueue.snapshot import KueueSnapshot
from domain.kueue.topology import Placement
from domain.kueue.workloads import PodSetRequest, WorkloadInfo
from domain.objects.kueue import ClusterQueue, PodSet, ResourceFlavor
from domain.quantity import PODS, ResourceList, format_milli


class Mode(IntEnum):
    """How a request fits, worst to best."""

    NO_FIT = 0  # not even with every other workload gone
    PREEMPT = 1  # fits once some workloads are preempted
    BORROW = 2  # fits now, above nominal quota, with cohort capacity
    FIT = 3  # fits in unused nominal quota


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

    def usage(self) -> dict[FlavorResource, int]:
        total: dict[FlavorResource, int] = {}
        for psa in self.pod_sets:
            for fr, amount in psa.usage().items():
                total[fr] = total.get(fr, 0) + amount
        return total

    def borrows(self, node: QuotaNode) -> bool:
        return any(node.is_borrowing(fr, amount) for fr, amount in self.usage().items())

    def admission(self, cluster_queue: str) -> dict[str, Any]:
        return {"clusterQueue": cluster_queue, "podSetAssignments": [p.to_json() for p in self.pod_sets]}


def fit_mode(node: QuotaNode, fr: FlavorResource, amount: int) -> Mode:
    if fr not in node.nominal:
        return Mode.NO_FIT
    if amount <= node.available(fr):
        return Mode.BORROW if node.is_borrowing(fr, amount) else Mode.FIT
    return Mode.PREEMPT if amount <= node.potential(fr) else Mode.NO_FIT


def _why(node: QuotaNode, fr: FlavorResource, amount: int, mode: Mode) -> str:
    flavor, resource = fr
    if fr not in node.nominal:
        return f"flavor {flavor} has no quota for {resource}"
    if mode is Mode.PREEMPT:
        more = format_milli(resource, amount - max(0, node.available(fr)))
        return f"insufficient unused quota for {resource} in flavor {flavor}, {more} more needed"
    want, most = format_milli(resource, amount), format_milli(resource, node.potential(fr))
    return f"insufficient quota for {resource} in flavor {flavor}, request > maximum capacity ({want} > {most})"


def _matches(flavor: ResourceFlavor, pod_set: PodSet) -> bool:
    selector = pod_set.template.spec.node_selector
    return all(selector.get(k, v) == v for k, v in flavor.spec.node_labels.items())


def _requests(cq: ClusterQueue, pod_set: PodSetRequest) -> tuple[ResourceList, list[str]]:
    covered = {r for group in cq.spec.resource_groups for r in group.covered_resources}
    requests = {r: a for r, a in pod_set.per_pod.items() if a > 0 and (r != PODS or PODS in covered)}
    return requests, sorted(r for r in requests if r not in covered)


def assign(snap: KueueSnapshot, info: WorkloadInfo, cq: ClusterQueue) -> Assignment:
    """The best assignment for ``info`` in ``cq`` against the snapshot's usage now."""
    taken: dict[FlavorResource, int] = {}
    result = Assignment([], Mode.FIT, "")
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
                snap,
                cq,
                group.flavors,
                spec=spec,
                requests=(request, psa.pod_set),
                wanted=wanted,
                taken=taken,
                messages=messages,
            )
            mode, flavor_name, placement = picked
            result.mode = min(result.mode, mode)
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
    return result


def _delayed(snap: KueueSnapshot, cq: ClusterQueue, flavor: str) -> bool:
    return bool(snap.flavors[flavor].spec.topology_name) and delays_topology(snap, cq, flavor)


def _pick(
    snap: KueueSnapshot,
    cq: ClusterQueue,
    flavors: list[Any],
    *,
    spec: PodSet,
    requests: tuple[PodSetRequest, PodSetRequest],
    wanted: list[str],
    taken: Mapping[FlavorResource, int],
    messages: list[str],
) -> tuple[Mode, str, Placement | None]:
    """The first flavor that fits (``requests``: the podSet's full requests, and those the queue covers)."""
    full, pod_set = requests
    node = snap.tree.queues[cq.metadata.name]
    best: tuple[Mode, str, Placement | None] = (Mode.NO_FIT, "", None)
    for quotas in flavors:
        flavor = snap.flavors[quotas.name]
        if not _matches(flavor, spec):
            messages.append(f"flavor {flavor.metadata.name} doesn't match node affinity")
            continue
        mode = Mode.FIT
        for resource in wanted:
            fr = (quotas.name, resource)
            amount = pod_set.per_pod[resource] * pod_set.count + taken.get(fr, 0)
            fr_mode = fit_mode(node, fr, amount)
            if fr_mode < Mode.BORROW:
                messages.append(_why(node, fr, amount, fr_mode))
            mode = min(mode, fr_mode)
        placement: Placement | None = None
        if mode >= Mode.BORROW and flavor.spec.topology_name and not _delayed(snap, cq, quotas.name):
            found = topology.place(
                snap, flavor, spec.template.spec, full.per_pod, count=full.count, request=spec.topology_request
            )
            if isinstance(found, str):
                messages.append(found)
                continue
            placement = found
        if mode >= Mode.BORROW:
            return (mode, quotas.name, placement)
        if mode is Mode.PREEMPT and best[0] is Mode.NO_FIT:
            best = (mode, quotas.name, None)
    return best
