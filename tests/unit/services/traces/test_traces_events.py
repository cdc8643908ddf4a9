"""services.traces.events.to_events: a trace's arrivals as contract lines that parse, with
nodes first, PodGroups and Pods (or Workloads) at submit time and markers per period."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import pytest

from domain.events import ScheduleMarker, WatchEvent, parse_event
from domain.objects.core import Node as KubeNode
from domain.objects.core import Pod
from domain.objects.kueue import Workload
from domain.objects.volcano import PodGroup
from services.traces.events import to_events
from services.traces.model import Job, Node, Trace

TRACE = Trace(
    (
        Job("a", 0, 10, tasks=2, requests={"cpu": "2", "nvidia.com/gpu": "1"}, queue="q1", topology="ib-cluster"),
        Job("b", 0.5, 10, requests={"cpu": "1"}, priority=7, node_affinity={"gpu-model": ("T4", "A10")}),
        Job("c", 3.2, None, tasks=3, min_member=2, requests={"cpu": "1"}, scheduler="kueue", topology="ib-cluster"),
        Job("d", 3.9, 1, requests={"memory": "1Gi"}),
    ),
    (Node("n0", {"cpu": "8", "nvidia.com/gpu": "4"}, {"volcano.sh/ib-cluster": "ib-a"}), Node("n1", {"cpu": "8"})),
)


def kinds(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        event = parse_event(line)
        out.append("SCHEDULE" if isinstance(event, ScheduleMarker) else event.obj.kind)  # type: ignore[union-attr]
    return out


def test_nodes_first_then_arrivals_with_a_marker_closing_each_busy_period() -> None:
    lines = to_events(TRACE, cluster="c1")
    assert kinds(lines) == [
        "Node",
        "Node",
        "PodGroup",
        "Pod",
        "Pod",
        "PodGroup",
        "Pod",
        "SCHEDULE",  # closes [0, 1)
        "Workload",  # c asks for kueue itself
        "PodGroup",
        "Pod",
        "SCHEDULE",  # closes [3, 4)
    ]
    markers = [parse_event(line) for line in lines if '"SCHEDULE"' in line]
    assert [m.time for m in markers] == [  # type: ignore[union-attr]
        datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 4, tzinfo=UTC),
    ]
    assert all(json.loads(line)["cluster"] == "c1" for line in lines)


def test_every_period_gets_a_marker_when_idle_ones_are_kept() -> None:
    lines = to_events(TRACE, skip_idle=False)
    assert Counter(kinds(lines))["SCHEDULE"] == 4  # at 1 s, 2 s, 3 s and 4 s
    lines = to_events(TRACE, period=2.0, skip_idle=False)
    assert [json.loads(line)["time"] for line in lines if '"SCHEDULE"' in line] == [
        "2026-01-01T00:00:02Z",
        "2026-01-01T00:00:04Z",
    ]


def test_volcano_objects_carry_the_gang_queue_topology_and_requests() -> None:
    events = [parse_event(line) for line in to_events(TRACE, nodes=TRACE.nodes[:1])]
    objects = [e.obj for e in events if isinstance(e, WatchEvent)]
    node, group, pod0, _pod1, _group_b, pod_b = objects[:6]
    assert isinstance(node, KubeNode)
    assert node.status.allocatable == {"cpu": 8000, "nvidia.com/gpu": 4000, "pods": 110_000}
    assert node.is_ready()
    assert isinstance(group, PodGroup)
    assert (group.spec.min_member, group.spec.queue) == (2, "q1")
    assert group.metadata.annotations == {"volcano.sh/network-topology": "ib-cluster"}
    assert isinstance(pod0, Pod)
    assert pod0.metadata.name == "a-0"
    assert pod0.metadata.annotations == {"scheduling.k8s.io/group-name": "a"}
    assert pod0.spec.scheduler_name == "volcano"
    assert pod0.spec.containers[0].resources.requests == {"cpu": 2000, "nvidia.com/gpu": 1000}
    assert pod0.status.phase == "Pending"
    assert isinstance(pod_b, Pod)
    assert pod_b.spec.priority == 7
    required = pod_b.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution  # type: ignore[union-attr]
    (term,) = required.node_selector_terms  # type: ignore[union-attr]
    assert [(r.key, r.operator, r.values) for r in term.match_expressions] == [("gpu-model", "In", ["T4", "A10"])]
    uids = [o.metadata.uid for o in objects]
    assert len(set(uids)) == len(uids)


def test_kueue_workloads_have_one_pod_set_with_count_min_count_and_topology() -> None:
    events = [parse_event(line) for line in to_events(TRACE, scheduler="kueue")]
    workloads = [e.obj for e in events if isinstance(e, WatchEvent) and isinstance(e.obj, Workload)]
    assert [w.metadata.name for w in workloads] == ["a", "b", "c", "d"]
    c = workloads[2]
    assert c.spec.queue_name == "default"
    (pod_set,) = c.spec.pod_sets
    assert (pod_set.count, pod_set.min_count) == (3, 2)
    assert pod_set.topology_request is not None
    assert pod_set.topology_request.required == "volcano.sh/ib-cluster"
    assert workloads[0].spec.pod_sets[0].min_count is None
    assert workloads[1].spec.priority == 7
    assert workloads[1].spec.pod_sets[0].template.spec.affinity is not None


def test_the_same_trace_always_gives_the_same_lines() -> None:
    assert to_events(TRACE) == to_events(TRACE)
    assert to_events(TRACE, cluster="x") != to_events(TRACE, cluster="y")


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="scheduler must be one of"):
        to_events(TRACE, scheduler="slurm")
    with pytest.raises(ValueError, match="period must be > 0"):
        to_events(TRACE, period=0)


def test_an_empty_trace_gives_only_its_nodes() -> None:
    assert kinds(to_events(Trace((), TRACE.nodes))) == ["Node", "Node"]
