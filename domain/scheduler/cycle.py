"""run_cycle: one scheduling pass over a cluster's state at a SCHEDULE marker (or, in a stream
without markers, after every event).

This is the first, simple pass of the walking skeleton: gangs (a PodGroup's pending pods, or a
lone pod) are placed all-or-nothing by requests, node selector and affinity, taints and node
condition, least-requested node first; PodGroups get a status decision only when their status
really changes, and never while they have no tasks (SEEDS S1). The session/actions/plugins
scheduler of issue 4 replaces the body, keeping this signature.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from domain import decisions, quantity
from domain.decisions import Decision, DecisionKind, ObjectRef
from domain.lifecycle.job import JobPhase
from domain.lifecycle.pod_group import PodGroupPhase
from domain.lifecycle.status import PodGroupStatusView
from domain.objects.core import Node, Pod
from domain.objects.meta import ObjectKey, key_of
from domain.objects.volcano import PodGroup
from domain.quantity import ResourceList
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.predicates import FitSummary, fit_failures
from domain.state import ClusterState

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Gang:
    """Pods that must be placed together: a PodGroup's pending members, or one lone pod."""

    key: ObjectKey
    group: PodGroup | None
    min_member: int
    scheduled: int
    pending: list[Pod] = field(default_factory=list)

    def order(self) -> tuple[int, datetime, str]:
        # A PodGroup's age, or a lone pod's own: older work first, whatever shape it has.
        owner = self.group.metadata if self.group else self.pending[0].metadata
        created = owner.creation_timestamp or _EPOCH
        priority = max((p.spec.priority or 0 for p in self.pending), default=0)
        return (-priority, created, self.key)


@dataclass
class GangOutcome:
    placed: dict[str, str] = field(default_factory=dict)
    tentative: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    not_enough_tasks: bool = False


def run_cycle(state: ClusterState, config: SchedulerConfig, *, seq: int) -> list[Decision]:
    # 1. Snapshot: nodes in name order with their free resources.
    nodes = [node for _, node in sorted(state.of_kind("Node").items())]
    free = _free_resources(state, nodes)
    # 2. Gather the gangs that have pending pods of ours, in priority, age, name order.
    gangs = _gangs(state, config)
    # 3. Place each gang all-or-nothing; commit binds only when its minimum is met.
    out: list[Decision] = []
    outcomes: dict[ObjectKey, GangOutcome] = {}
    for gang in sorted(gangs.values(), key=Gang.order):
        outcome = _place(gang, nodes, free)
        outcomes[gang.key] = outcome
        if outcome.placed:
            for pod in gang.pending:
                node = outcome.placed.get(pod.metadata.name)
                if node is not None and state.decide_bind(pod, node, seq):
                    out.append(
                        decisions.make(state.name, seq, DecisionKind.BIND, ObjectRef.of(pod), "Scheduled", node=node)
                    )
    # 4. Status of every PodGroup that has tasks, emitted only when it changes.
    out.extend(_pod_group_statuses(state, seq, outcomes))
    return out


def _free_resources(state: ClusterState, nodes: list[Node]) -> dict[str, ResourceList]:
    free = {node.metadata.name: node.allocatable() for node in nodes}
    for pod in state.pods().values():
        node_name = state.node_of(pod)
        if node_name in free and not pod.is_finished():
            for name, amount in pod.spec.requests().items():
                free[node_name][name] = free[node_name].get(name, 0) - amount
    return free


def _is_terminating(state: ClusterState, group: PodGroup) -> bool:
    """A PodGroup being deleted, or owned by a Job that is terminating or gone."""
    if state.phase_of("PodGroup", key_of(group.metadata)) is PodGroupPhase.TERMINATING:
        return True
    for owner in group.metadata.owner_references:
        if owner.kind != "Job":
            continue
        if owner.uid in state.tombstones:
            return True
        job_key = ObjectKey(f"{group.metadata.namespace}/{owner.name}")
        if state.phase_of("Job", job_key) is JobPhase.TERMINATING:
            return True
    return False


def _gangs(state: ClusterState, config: SchedulerConfig) -> dict[ObjectKey, Gang]:
    groups = state.of_kind("PodGroup")
    gangs: dict[ObjectKey, Gang] = {}
    for pod_key, pod in sorted(state.pods().items()):
        group_name = pod.group_name()
        key = ObjectKey(f"{pod.metadata.namespace}/{group_name}") if group_name else pod_key
        group = groups.get(key) if group_name else None
        if group_name and not isinstance(group, PodGroup):
            continue  # a member waits for its PodGroup to exist
        gang = gangs.get(key)
        if gang is None:
            min_member = group.spec.min_member if isinstance(group, PodGroup) else 1
            gang = gangs[key] = Gang(key, group if isinstance(group, PodGroup) else None, min_member, 0)
        if state.node_of(pod) and pod.status.phase != "Failed":
            gang.scheduled += 1
        elif _is_pending(pod, config):
            gang.pending.append(pod)
    return {
        key: gang
        for key, gang in gangs.items()
        if gang.pending and not (gang.group and _is_terminating(state, gang.group))
    }


def _is_pending(pod: Pod, config: SchedulerConfig) -> bool:
    return (
        pod.spec.scheduler_name == config.scheduler_name
        and pod.status.phase == "Pending"
        and pod.metadata.deletion_timestamp is None
    )


def _score(request: ResourceList, node: Node, free: ResourceList) -> float:
    """Least requested: the share of cpu and memory left after placing the pod."""
    allocatable = node.allocatable()
    score = 0.0
    for name in (quantity.CPU, quantity.MEMORY):
        total = allocatable.get(name, 0)
        if total > 0:
            score += (free.get(name, 0) - request.get(name, 0)) / total
    return score


def _place(gang: Gang, nodes: list[Node], free: dict[str, ResourceList]) -> GangOutcome:
    outcome = GangOutcome()
    if gang.scheduled + len(gang.pending) < gang.min_member:
        outcome.not_enough_tasks = True
        return outcome
    trial = {name: dict(resources) for name, resources in free.items()}
    for pod in gang.pending:
        request = pod.spec.requests()
        best: tuple[float, str] | None = None
        summary = FitSummary(len(nodes))
        for node in nodes:
            node_free = trial[node.metadata.name]
            failures = fit_failures(pod, request, node, node_free)
            if failures:
                summary.add(failures)
                continue
            candidate = (-_score(request, node, node_free), node.metadata.name)
            if best is None or candidate < best:
                best = candidate
        if best is None:
            top = (
                min(summary.reasons.items(), key=lambda item: (-item[1], item[0]))[0] if summary.reasons else "no nodes"
            )
            outcome.failures[top] += 1
            continue
        node_name = best[1]
        outcome.placed[pod.metadata.name] = node_name
        quantity.add(trial[node_name], {k: -v for k, v in request.items()})
    if gang.scheduled + len(outcome.placed) >= gang.min_member:
        free.clear()
        free.update(trial)
    else:
        outcome.tentative = len(outcome.placed)
        outcome.placed = {}
    return outcome


def _condition(type_: str, reason: str, message: str) -> tuple[str, str, str, str]:
    return (type_, "True", reason, message)


def _status_view(
    group: PodGroup,
    tasks: list[Pod],
    *,
    scheduled: int,
    outcome: GangOutcome | None,
    baseline: PodGroupStatusView,
    peak: int,
) -> PodGroupStatusView:
    """The status this cycle gives a PodGroup; ``baseline`` (the last one written) when nothing new is known."""
    succeeded = sum(1 for p in tasks if p.status.phase == "Succeeded")
    min_member = group.spec.min_member
    if succeeded and all(p.is_finished() for p in tasks) and succeeded >= min_member:
        return ("Completed", ())
    if scheduled >= min_member:
        return ("Running", (_condition("Scheduled", "tasks in gang are ready to be scheduled", ""),))
    if outcome is None:
        return baseline
    if outcome.not_enough_tasks:
        if peak >= min_member:
            # S1: a gang that had its tasks and is losing them is being deleted (or its controller is
            # recreating them); either way a status write is noise, and would depend on event order.
            return baseline
        message = f"Not enough valid tasks for gang-scheduling, valid: {len(tasks)}, min: {min_member}"
        return ("Pending", (_condition("Unschedulable", "NotEnoughTasks", message),))
    unready = min_member - scheduled - outcome.tentative
    reasons = ", ".join(f"{n} {r}" for r, n in sorted(outcome.failures.items(), key=lambda i: (-i[1], i[0])))
    message = f"{unready}/{len(tasks)} tasks in gang unschedulable: {reasons}"
    return ("Pending", (_condition("Unschedulable", "NotEnoughResources", message),))


def _pod_group_statuses(state: ClusterState, seq: int, outcomes: dict[ObjectKey, GangOutcome]) -> list[Decision]:
    tasks_by_group: dict[ObjectKey, list[Pod]] = {}
    for pod in state.pods().values():
        if pod.group_name():
            tasks_by_group.setdefault(ObjectKey(f"{pod.metadata.namespace}/{pod.group_name()}"), []).append(pod)
    out = []
    for key, group in sorted(state.of_kind("PodGroup").items()):
        tasks = tasks_by_group.get(key)
        if not tasks or not isinstance(group, PodGroup) or _is_terminating(state, group):
            continue  # S1: a gang with no tasks, or on its way out, gets no status write
        machine = state.status_of(group)
        if machine is None:
            continue
        machine.peak_tasks = peak = max(machine.peak_tasks, len(tasks))
        observed = (group.status.phase, tuple((c.type, c.status, c.reason, c.message) for c in group.status.conditions))
        baseline = machine.reported or observed
        scheduled = sum(1 for p in tasks if state.node_of(p) and p.status.phase != "Failed")
        outcome = outcomes.get(key_of(group.metadata))
        view = _status_view(group, tasks, scheduled=scheduled, outcome=outcome, baseline=baseline, peak=peak)
        if view == baseline or not state.decide_pod_group_status(group, view, seq):
            continue
        phase, conditions = view
        reason = "GangScheduled" if phase == "Running" else conditions[0][2] if conditions else phase
        out.append(
            decisions.make(
                state.name,
                seq,
                DecisionKind.POD_GROUP_STATUS,
                ObjectRef.of(group),
                reason,
                phase=phase,
                conditions=[{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions],
            )
        )
    return out
