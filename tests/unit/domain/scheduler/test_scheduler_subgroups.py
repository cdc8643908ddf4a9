"""subGroupPolicy: how a PodGroup's tasks split into sub-gangs (domain.scheduler.subgroups)."""

from __future__ import annotations

from typing import Any

import msgspec

from domain.objects.core import Pod
from domain.objects.meta import ObjectKey
from domain.objects.volcano import PodGroup
from domain.scheduler.infos import TaskInfo, TaskStatus
from domain.scheduler.subgroups import split

PID = "volcano.sh/partition-id"


def _group(policies: list[dict[str, Any]]) -> PodGroup:
    spec = {"minMember": 1, "subGroupPolicy": policies}
    raw = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"}, "spec": spec}
    return msgspec.convert(raw, PodGroup)


def _task(name: str, labels: dict[str, str]) -> TaskInfo:
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": labels}}
    pod = msgspec.convert(raw, Pod)
    return TaskInfo(ObjectKey(f"ns/{name}"), pod, ObjectKey("ns/pg"), {}, TaskStatus.PENDING)


def test_tasks_with_the_same_label_values_form_one_sub_gang() -> None:
    policy = {"name": "part", "matchLabelKeys": [PID], "subGroupSize": 2, "minSubGroups": 1,
              "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}  # fmt: skip
    tasks = [_task("a", {PID: "1"}), _task("b", {PID: "0"}), _task("c", {PID: "1"}), _task("d", {})]
    subs, minimum = split(_group([policy]), tasks)
    assert [(s.name, [t.pod.metadata.name for t in s.tasks]) for s in subs] == [
        ("part-0", ["b"]),
        ("part-1", ["a", "c"]),
    ]  # "d" has no partition label: it stays in the plain gang
    assert all(s.size == 2 and s.topology is not None and s.topology.hard for s in subs)
    assert minimum == {"part": 1}


def test_defaults_and_first_matching_policy_wins() -> None:
    policies = [{"name": "x", "matchLabelKeys": ["rack"]}, {"name": "all"}]
    subs, minimum = split(_group(policies), [_task("a", {"rack": "r1"}), _task("b", {})])
    assert [(s.name, s.size, s.topology, len(s.tasks)) for s in subs] == [("all", 1, None, 1), ("x-r1", 1, None, 1)]
    assert minimum == {"x": 0, "all": 0}


def test_no_policy_no_sub_gangs() -> None:
    assert split(_group([]), [_task("a", {PID: "0"})]) == ([], {})
    assert split(None, []) == ([], {})
