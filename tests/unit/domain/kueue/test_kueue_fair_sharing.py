"""Kueue fair sharing (issue 5): weighted dominant resource shares, and the property that
fair-sharing preemption never takes a queue below its nominal quota (1-cpu workloads) nor
from a queue that does not borrow."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.decisions import DecisionKind
from domain.engine import Engine
from domain.events import parse_event
from domain.kueue import cycle_view, fair_sharing
from domain.kueue import settings as kueue_settings
from domain.scheduler.config import SchedulerConfig
from tests import builders as b

API = "kueue.x-k8s.io/v1beta2"
FAIR = {"fairSharing": {"enable": True}}


def _obj(kind: str, name: str, spec: dict[str, Any], namespace: str = "") -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": b.meta(name, namespace), "spec": spec}


def _queue(i: int, nominal: int, weight: str | None) -> list[str]:
    group = {
        "coveredResources": ["cpu"],
        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": str(nominal)}]}],
    }
    spec: dict[str, Any] = {"cohortName": "all", "resourceGroups": [group], "namespaceSelector": {}}
    spec["preemption"] = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return [
        b.added(_obj("ClusterQueue", f"cq{i}", spec)),
        b.added(_obj("LocalQueue", f"lq{i}", {"clusterQueue": f"cq{i}"}, "ns")),
    ]


def _workload(i: int, queue: int, cpu: int, priority: int) -> str:
    pod_set = {
        "name": "main",
        "count": 1,
        "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}},
    }
    obj = _obj("Workload", f"w{i}", {"queueName": f"lq{queue}", "podSets": [pod_set], "priority": priority}, "ns")
    obj["metadata"]["creationTimestamp"] = b.iso(i)
    return b.added(obj)


def _engine(queues: list[tuple[int, str | None]], loads: list[tuple[int, int, int]]) -> Engine:
    engine = Engine(SchedulerConfig(kueue=kueue_settings.parse(FAIR)), on_markers=lambda _: True)
    lines = [b.added(_obj("ResourceFlavor", "f", {}))]
    for i, (nominal, weight) in enumerate(queues):
        lines += _queue(i, nominal, weight)
    lines += [_workload(i, q % len(queues), cpu, p) for i, (q, cpu, p) in enumerate(loads)]
    for line in lines:
        engine.handle(parse_event(line))
    return engine


def test_share_is_usage_above_nominal_over_lendable_divided_by_weight() -> None:
    engine = _engine([(0, "2"), (0, None), (8, "0")], [(0, 2, 0), (1, 2, 0), (2, 1, 0)])
    engine.handle(parse_event(b.marker(1)))
    snap = cycle_view.fresh(engine.state("c1"))
    tree = snap.tree.queues
    assert fair_sharing.share(snap, tree["cq0"]) == 250 * 1000 // 2000  # 2 of 8 borrowed, weight 2
    assert fair_sharing.share(snap, tree["cq1"]) == 250
    assert fair_sharing.share(snap, tree["cq2"]) == 0  # within nominal: weight 0 does not matter
    # weight 0 while borrowing: above every finite share, then by the unweighted ratio (1 of 8)
    assert fair_sharing.shares_with(snap, tree["cq2"], {("f", "cpu"): 8_000}) == (fair_sharing.INFINITE + 125,)
    assert fair_sharing.share(snap, snap.tree.cohorts["all"]) == 0  # a root has no share


def test_settings_default_strategies_and_disabled() -> None:
    assert kueue_settings.parse({}).fair_sharing is None
    assert kueue_settings.parse({"fairSharing": {"enable": False}}).fair_sharing is None
    on = kueue_settings.parse(FAIR).fair_sharing
    assert on is not None and on.strategies == kueue_settings.DEFAULT_STRATEGIES
    only = kueue_settings.parse(
        {"fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]}}
    ).fair_sharing
    assert only is not None and only.strategies == ("LessThanInitialShare",)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    queues=st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from([None, "0", "1", "2", "500m"])), min_size=2, max_size=4
    ),
    loads=st.lists(st.tuples(st.integers(0, 3), st.just(1), st.integers(0, 2)), min_size=1, max_size=16),
    ticks=st.integers(2, 10),
)
def test_fair_sharing_never_preempts_another_queue_below_its_nominal_quota(queues: Any, loads: Any, ticks: int) -> None:
    engine = _engine(queues, loads)
    for second in range(1, ticks + 1):
        snap = cycle_view.fresh(engine.state("c1"))
        used = {name: dict(node.usage) for name, node in snap.tree.queues.items()}
        leaving = {w.key: w for w in snap.holders() if w.view.is_true("Evicted")}
        for info in leaving.values():
            used[info.admitted_to][("f", "cpu")] -= info.usage()[("f", "cpu")]
        holders = {w.key: w for w in snap.holders()}
        out = engine.handle(parse_event(b.marker(second))).decisions
        for decision in out:
            if decision.kind is not DecisionKind.EVICT or decision.fields.get("reason") != "Preempted":
                continue
            victim = holders[f"{decision.target.namespace}/{decision.target.name}"]
            preemptor = holders.get(str(decision.fields["preemptor"]))
            if victim.admitted_to == (preemptor.admitted_to if preemptor else None):
                continue
            queue = victim.admitted_to
            used[queue][("f", "cpu")] -= victim.usage()[("f", "cpu")]
            nominal = snap.tree.queues[queue].nominal[("f", "cpu")]
            assert used[queue][("f", "cpu")] >= nominal, (queue, used[queue], nominal)
        check = cycle_view.fresh(engine.state("c1"))
        for node in (*check.tree.queues.values(), *check.tree.cohorts.values()):
            for fr, amount in node.usage.items():
                assert amount <= node.potential(fr)
