"""Kueue admission properties (issue 5), on random cohort trees and workload streams:

* no ClusterQueue or cohort ever uses more than its quota plus what it may borrow;
* a finished or evicted workload never gets a second pass or a new placement.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.decisions import Decision, DecisionKind
from domain.engine import Engine
from domain.events import parse_event
from domain.kueue import cycle_view
from domain.kueue.settings import KueueSettings
from domain.kueue.workloads import WorkloadIndex, renew
from domain.lifecycle.workload import WorkloadView
from domain.objects.kueue import Workload
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from tests import builders as b

API = "kueue.x-k8s.io/v1beta2"
LEVELS = ["rack", "kubernetes.io/hostname"]

quotas = st.tuples(st.integers(0, 8), st.none() | st.integers(0, 6), st.none() | st.integers(0, 8))
queues = st.lists(st.tuples(quotas, st.sampled_from(["", "left", "right"])), min_size=1, max_size=4)
workloads = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 6), st.integers(0, 3)), min_size=1, max_size=12)
steps = st.lists(st.sampled_from(["tick", "finish", "fail-node"]), min_size=3, max_size=14)


def _obj(kind: str, name: str, spec: dict[str, Any], namespace: str = "", status: Any = None) -> dict[str, Any]:
    out = {"apiVersion": API, "kind": kind, "metadata": b.meta(name, namespace), "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def _quota(nominal: int, borrow: int | None, lend: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "cpu", "nominalQuota": str(nominal)}
    if borrow is not None:
        out["borrowingLimit"] = str(borrow)
    if lend is not None:
        out["lendingLimit"] = str(lend)
    return out


def _setup(specs: list[tuple[tuple[int, int | None, int | None], str]], tas: bool) -> list[str]:
    lines = [b.added(_obj("ResourceFlavor", "f", {"topologyName": "t"} if tas else {}))]
    lines.append(b.added(_obj("Topology", "t", {"levels": [{"nodeLabel": level} for level in LEVELS]})))
    lines.append(b.added(_obj("Cohort", "left", {"parentName": "root"})))
    group = {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [_quota(4, None, None)]}]}
    lines.append(b.added(_obj("Cohort", "right", {"parentName": "root", "resourceGroups": [group]})))
    preemption = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    for i, ((nominal, borrow, lend), cohort) in enumerate(specs):
        quota = _quota(nominal, borrow if cohort else None, lend if cohort else None)
        group = {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [quota]}]}
        spec = {"cohortName": cohort, "resourceGroups": [group], "namespaceSelector": {}, "preemption": preemption}
        lines.append(b.added(_obj("ClusterQueue", f"cq{i}", spec)))
        lines.append(b.added(_obj("LocalQueue", f"lq{i}", {"clusterQueue": f"cq{i}"}, "ns")))
    lines += [b.added(b.node(f"n-{n}", cpu="8", labels={"rack": f"r{n % 2}"})) for n in range(4)]
    return lines


def _workload(i: int, queue: int, cpu: int, priority: int, tas: bool) -> dict[str, Any]:
    pod_set: dict[str, Any] = {"name": "main", "count": 1, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}  # fmt: skip
    if tas:
        pod_set["topologyRequest"] = {"required": "rack"}
    spec = {"queueName": f"lq{queue}", "podSets": [pod_set], "priority": priority}
    obj = _obj("Workload", f"w{i}", spec, "ns")
    obj["metadata"]["creationTimestamp"] = b.iso(i)
    return obj


def _check_quota(engine: Engine) -> None:
    snap = cycle_view.fresh(engine.state("c1"))
    for node in (*snap.tree.queues.values(), *snap.tree.cohorts.values()):
        for fr, used in node.usage.items():
            assert used <= node.potential(fr), (node.name, fr, used, node.potential(fr))
            if node.is_queue and fr in node.borrowing_limit:
                assert used <= node.nominal.get(fr, 0) + node.borrowing_limit[fr]


def _run(specs: Any, loads: Any, plan: Any, tas: bool, check: Any) -> None:
    engine = Engine(SchedulerConfig(kueue=KueueSettings(fail_fast=True)), on_markers=lambda _: True)
    lines = _setup(specs, tas)
    wires = {f"ns/w{i}": _workload(i, q % len(specs), cpu, p, tas) for i, (q, cpu, p) in enumerate(loads)}
    lines += [b.added(wire) for wire in wires.values()]
    for line in lines:
        engine.handle(parse_event(line))
    seconds, failed = 0, 0
    for step in plan:
        state = engine.state("c1")
        if step == "finish":
            holders = [w for w in cycle_view.fresh(state).holders() if not w.view.is_true("Evicted")]
            if holders:
                engine.handle(parse_event(b.modified(_finished(wires[holders[0].key]))))
            continue
        if step == "fail-node" and failed < 4:
            engine.handle(parse_event(b.deleted(b.node(f"n-{failed}"))))
            failed += 1
            continue
        seconds += 1
        workloads = state.of_kind("Workload").items()
        before = {key: state.workload_view(wl) for key, wl in workloads if isinstance(wl, Workload)}
        result = engine.handle(parse_event(b.marker(seconds)))
        check(engine, before, result.decisions)
        _check_index(engine, state)


def _filed(index: WorkloadIndex) -> tuple[object, ...]:
    queued = {ref: [info.key for info in q.in_order()] for ref, q in index.queued.items()}
    views = {key: info.view for key, info in index.live.items()}
    return views, sorted(index.holding), queued, sorted(index.flagged)


def _check_index(engine: Engine, state: ClusterState) -> None:
    """The index kept between cycles equals one built from scratch, and holds no finished workload."""
    cache = engine.cache(state)
    kept = cache.kueue = renew(cache.kueue, state, cache.changes)
    fresh = WorkloadIndex()
    for key in state.of_kind("Workload"):
        fresh.renew(state, key)
    assert _filed(kept) == _filed(fresh)
    assert not any(info.view.is_true("Finished") for info in kept.live.values())


def _finished(wire: dict[str, Any]) -> dict[str, Any]:
    """The cluster's report that the workload finished."""
    metadata = {**wire["metadata"], "resourceVersion": "2"}
    return {**wire, "metadata": metadata, "status": {"conditions": [{"type": "Finished", "status": "True"}]}}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=queues, loads=workloads, plan=steps)
def test_no_queue_or_cohort_is_ever_above_its_quota_plus_allowed_borrowing(specs: Any, loads: Any, plan: Any) -> None:
    _run(specs, loads, plan, tas=False, check=lambda engine, _before, _out: _check_quota(engine))


def _is_done(view: WorkloadView) -> bool:
    return view.is_true("Finished") or (view.is_true("Evicted") and view.is_true("QuotaReserved"))


def _check_no_second_pass(engine: Engine, before: dict[Any, WorkloadView], out: list[Decision]) -> None:
    _check_quota(engine)
    state = engine.state("c1")
    for decision in out:
        key = f"{decision.target.namespace}/{decision.target.name}"
        old = before.get(key)
        if decision.kind is DecisionKind.WORKLOAD_STATUS and old is not None and _is_done(old):
            assert decision.fields["admission"] in (None, old.admission), (key, "a new placement after finish/evict")
    for key, status in state.machines.get("Workload", {}).items():
        view = before.get(key)
        decided_done = status.workload is not None and _is_done(status.workload)
        if decided_done or (view is not None and view.is_true("Finished")):
            assert not status.needs_second_pass, key


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=queues, loads=workloads, plan=steps)
def test_a_finished_or_evicted_workload_never_gets_a_second_pass_or_placement(
    specs: Any, loads: Any, plan: Any
) -> None:
    _run(specs, loads, plan, tas=True, check=_check_no_second_pass)
