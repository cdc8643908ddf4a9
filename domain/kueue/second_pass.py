"""Second pass (SEEDS S3): delayed topology placement and TAS node-failure replacement.

A workload whose TAS podSets were reserved without a topology (a ProvisioningRequest check
guards the flavor, see ``admission_checks``) gets it here once every check is Ready: the
podSets are placed in live node capacity and the workload is admitted in the same write
(``delayedTopologyRequest: Ready``); if they do not fit yet it keeps its quota, its status says
why (``Admitted=False``, reason PendingDelayedTopologyRequests) and it backs off.

A node fails when its DELETED event arrives or its Ready condition is False or Unknown. Every
admitted workload whose topology assignment names a failed node lists it in
``unhealthyNodes`` (and drops a node that recovered); folding that status sets the machine's
``needs_second_pass`` by the rule in ``domain.lifecycle.workload``. In a later cycle, a
workload that needs a second pass gets just the pods of the failed node re-placed, inside the
required domain and without preemption, in one write that also clears ``unhealthyNodes``; if
they do not fit, fail-fast evicts it (NodeFailures), otherwise it backs off. As in Kueue, only
one failed node is replaced: a second failed node in the same assignment evicts the workload
(NodeFailures) whatever fail-fast says.

Backoff is Kueue's second-pass queue on the scheduler clock, held in the machine status: after
the n-th failed attempt the next waits 2^n s, at most 30 s (the first attempt is made in the
next cycle, where Kueue waits its initial 1 s). It ends with the need for a second pass.
Finished, evicted or unreserved workloads never qualify: the machine cleared the field in the
transition that finished, evicted or released them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from domain.decisions import ObjectRef
from domain.kueue import tas
from domain.kueue.admission_checks import admitted_message
from domain.kueue.cycle_view import KueueSnapshot
from domain.kueue.reasons import KueueReason as R
from domain.kueue.workload_status import Outbox, with_conditions
from domain.kueue.workloads import WorkloadInfo
from domain.lifecycle.node import NodePhase
from domain.lifecycle.status import MachineStatus
from domain.lifecycle.workload import HOSTNAME_LABEL, assigned_hosts, topology_pending
from domain.lifecycle.workload import ConditionType as C
from domain.objects.core import Node
from domain.objects.kueue import PodSet, ResourceFlavor
from domain.objects.meta import ObjectKey
from domain.quantity import ResourceList
from domain.recorded import SecondPassBackoff

MAX_BACKOFF_SECONDS = 30
DELAYED = "PendingDelayedTopologyRequests"
MULTIPLE_FAILURES = "Workload eviction triggered due to multiple TAS assigned node failures, including"


def _failed(snap: KueueSnapshot, host: str) -> bool:
    return snap.state.phase_of("Node", ObjectKey(host)) in (None, NodePhase.NOT_READY)


def run(snap: KueueSnapshot, box: Outbox, fail_fast: bool) -> None:
    # 1. Mark the failed (and unmark the recovered) nodes of admitted workloads; a second evicts.
    for info in snap.holders():
        view = info.view
        if not view.is_true(C.ADMITTED) or view.is_true(C.EVICTED):
            continue
        failed = tuple(sorted(h for h in assigned_hosts(view.admission) if _failed(snap, h)))
        if len(failed) > 1:
            box.evict(info, R.NODE_FAILURES, f"{MULTIPLE_FAILURES}: {', '.join(failed)}")
        elif failed != view.unhealthy_nodes:
            box.status(info, dataclasses.replace(view, unhealthy_nodes=failed), "UnhealthyNodes")
    # 2. Place delayed topologies whose checks are Ready; re-place the pods of a failed node.
    for info in snap.holders():
        status = snap.state.status_of(info.obj)
        if status is None or not status.needs_second_pass or info.key in box.touched:
            continue
        if status.second_pass_at is not None and snap.clock < status.second_pass_at:
            continue  # backing off
        if topology_pending(info.view.admission):
            placed = _place_delayed(snap, box, info)
        else:
            placed = _replace(snap, box, info, frozenset(status.unhealthy_nodes), fail_fast)
        if not placed:
            _back_off(snap, info, status)


def _back_off(snap: KueueSnapshot, info: WorkloadInfo, status: MachineStatus) -> None:
    failures = status.second_pass_failures + 1
    delay = timedelta(seconds=min(2**failures, MAX_BACKOFF_SECONDS))
    snap.state.record(SecondPassBackoff(ObjectRef.of(info.obj), failures, snap.clock + delay))


def _pod_sets(info: WorkloadInfo) -> tuple[dict[str, Any], dict[str, PodSet], dict[str, ResourceList]]:
    """The workload's admission (a copy to build the new one from), its podSets by name, and
    each podSet's per-pod request."""
    admission = dict(info.view.admission or {})
    specs = {p.name: p for p in info.obj.spec.pod_sets}
    return admission, specs, {p.name: p.per_pod for p in info.pod_sets}


def _place_delayed(snap: KueueSnapshot, box: Outbox, info: WorkloadInfo) -> bool:
    """Every check is Ready: place the delayed podSets and admit, in one write; False when they
    do not fit yet: the workload keeps its quota and its status says why."""
    admission, specs, requests = _pod_sets(info)
    assignments: list[dict[str, Any]] = []
    placements: list[tuple[tas.Placement, str]] = []
    for psa in admission.get("podSetAssignments", ()):
        spec = specs.get(psa.get("name", ""))
        if psa.get("delayedTopologyRequest") != "Pending" or psa.get("topologyAssignment") or spec is None:
            assignments.append(dict(psa))
            continue
        flavor = next((snap.flavors.get(f) for f in (psa.get("flavors") or {}).values() if f in snap.flavors), None)
        count = int(psa.get("count", spec.count))
        found: tas.Placement | str = "flavor not found"
        if flavor is not None:
            request = spec.topology_request
            found = tas.place(snap, flavor, spec.template.spec, requests[spec.name], count=count, request=request)
        if isinstance(found, str):
            why = f"There are pending delayed topology requests: podSet {spec.name}: {found}"
            box.status(info, with_conditions(info.view, Admitted=("False", DELAYED, why)), DELAYED)
            return False
        assignments.append({**psa, "topologyAssignment": found.assignment, "delayedTopologyRequest": "Ready"})
        placements.append((found, spec.name))
    placed = {**admission, "podSetAssignments": assignments}
    view = with_conditions(info.view, Admitted=admitted_message(info.admitted_to))
    if box.status(info, dataclasses.replace(view, admission=placed), R.ADMITTED):
        for placement, name in placements:
            tas.reserve(snap, placement, requests[name])
    return True


def _replace(snap: KueueSnapshot, box: Outbox, info: WorkloadInfo, unhealthy: frozenset[str], fail_fast: bool) -> bool:
    """Re-place the pods of the failed node, in one write; False when they do not fit and
    fail-fast is off (the workload runs on, short of those pods, and backs off)."""
    admission, specs, requests = _pod_sets(info)
    replaced: list[dict[str, Any]] = []
    placements: list[tuple[tas.Placement, str]] = []
    for psa in admission.get("podSetAssignments", ()):
        result = _replace_pod_set(snap, psa, specs.get(psa.get("name", "")), requests, unhealthy)
        if isinstance(result, str):
            if fail_fast:
                message = f"Workload was evicted as there was no replacement for a failed node: {result}"
                box.evict(info, R.NODE_FAILURES, message)
            return fail_fast
        new_psa, placement = result
        replaced.append(new_psa)
        if placement is not None:
            placements.append((placement, new_psa["name"]))
    view = dataclasses.replace(info.view, admission={**admission, "podSetAssignments": replaced}, unhealthy_nodes=())
    if box.status(info, view, "NodeReplaced"):
        for placement, name in placements:
            tas.reserve(snap, placement, requests[name])
    return True


def _replace_pod_set(
    snap: KueueSnapshot,
    psa: Mapping[str, Any],
    spec: PodSet | None,
    requests: Mapping[str, Any],
    unhealthy: frozenset[str],
) -> tuple[dict[str, Any], tas.Placement | None] | str:
    assignment = psa.get("topologyAssignment") or {}
    levels: list[str] = list(assignment.get("levels") or [])
    domains = assignment.get("domains") or []
    lost = sum(int(d["count"]) for d in domains if d["values"][-1] in unhealthy)
    if not lost or spec is None or not levels or levels[-1] != HOSTNAME_LABEL:
        return dict(psa), None
    flavor = next((snap.flavors.get(f) for f in (psa.get("flavors") or {}).values() if f in snap.flavors), None)
    if flavor is None:
        return "flavor not found"
    within = _required_domain(
        snap, flavor, spec, [d["values"][-1] for d in domains if d["values"][-1] not in unhealthy]
    )
    if within is None:
        return ", ".join(sorted(unhealthy))
    found = tas.place(
        snap,
        flavor,
        spec.template.spec,
        requests[spec.name],
        count=lost,
        request=None,
        within=within,
        exclude=unhealthy,
    )
    if isinstance(found, str):
        return ", ".join(sorted(unhealthy))
    counts: dict[tuple[str, ...], int] = {}
    for d in domains:
        if d["values"][-1] not in unhealthy:
            counts[tuple(d["values"])] = counts.get(tuple(d["values"]), 0) + int(d["count"])
    for values, count in _domains(found, levels).items():
        counts[values] = counts.get(values, 0) + count
    return {**psa, "topologyAssignment": tas.assignment(levels, counts)}, found


def _required_domain(
    snap: KueueSnapshot, flavor: ResourceFlavor, spec: PodSet, healthy: list[str]
) -> dict[str, str] | None:
    """The domain (level label -> value) the replacement must stay in: that of the required
    level, read from the labels of the first healthy node of the assignment (as Kueue's
    ``requiredReplacementDomain``; an assignment may list only the hostname level); {} when
    nothing is required or no node is left; None when that node no longer exists."""
    topo = snap.topologies.get(flavor.spec.topology_name or "")
    request = spec.topology_request
    if topo is None or request is None or not request.required or not healthy:
        return {}
    levels = [level.node_label for level in topo.spec.levels]
    if request.required not in levels:
        return {}
    node = snap.state.of_kind("Node").get(ObjectKey(healthy[0]))
    if not isinstance(node, Node):
        return None
    labels = node.metadata.labels
    return {level: labels.get(level, "") for level in levels[: levels.index(request.required) + 1]}


def _domains(placement: tas.Placement, levels: list[str]) -> dict[tuple[str, ...], int]:
    """The placement's pod counts per domain, written at the assignment's ``levels`` (the
    placement is at every level of the topology, which ends with the same lowest levels)."""
    out: dict[tuple[str, ...], int] = {}
    for d in placement.assignment["domains"]:
        values = tuple(d["values"][len(d["values"]) - len(levels) :])
        out[values] = out.get(values, 0) + int(d["count"])
    return out
