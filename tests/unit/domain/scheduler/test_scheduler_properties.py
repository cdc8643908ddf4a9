"""Properties of the scheduler over generated clusters (hypothesis): whatever the nodes, queues
and gangs, no node is over-committed, no queue passes its capability or an ancestor's, no gang is
partly bound, an IB-cluster gang lands in one fabric and a gang with sub-gangs in one HyperNode
(the ones trying every domain find), and the same events give the same decisions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from domain import quantity
from domain.engine import Engine
from domain.events import parse_event
from domain.objects.volcano import NETWORK_TOPOLOGY_ANNOTATION
from domain.scheduler import placement
from domain.scheduler.config import SchedulerConfig, from_mapping
from domain.scheduler.network_domains import Domain, TopologyRequest
from domain.scheduler.placement import Attempt
from domain.scheduler.session import Session
from tests import builders as b

IB_LABEL = "volcano.sh/ib-cluster"
HIERARCHY = from_mapping({
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "capacity", "enableHierarchy": True},
                     {"name": "nodeorder"}, {"name": "binpack"}]},
    ]
})  # fmt: skip
# A two-level tree: org (maybe capped) with leaves a and b (maybe capped), plus the default queue.
LEAVES = ("a", "b", "default")


@dataclass(frozen=True)
class GangSpec:
    size: int
    min_member: int
    cpu: int
    gpu: int
    queue: str
    ib: bool
    priority: int


nodes_st = st.lists(
    st.tuples(st.integers(2, 8), st.integers(0, 4), st.sampled_from(["ib-x", "ib-y"])), min_size=1, max_size=6
)
# What every generated gang draws alike: its members' cpu, its queue and its priority.
MEMBERS = {"cpu": st.integers(1, 4), "queue": st.sampled_from(LEAVES), "priority": st.integers(0, 2)}
gangs_st = st.lists(
    st.builds(
        GangSpec,
        size=st.integers(1, 4),
        min_member=st.integers(1, 4),
        gpu=st.integers(0, 2),
        ib=st.booleans(),
        **MEMBERS,
    ),
    min_size=1,
    max_size=6,
)
caps_st = st.tuples(st.none() | st.integers(2, 12), st.none() | st.integers(2, 12), st.none() | st.integers(2, 12))


def _queues(caps: tuple[int | None, ...]) -> list[str]:
    """The queue tree: org capped at ``caps[0]`` cpus, its leaves a and b at ``caps[1]`` and ``caps[2]``."""
    lines = []
    org_cap, a_cap, b_cap = caps
    for name, parent, cap in (("org", "", org_cap), ("a", "org", a_cap), ("b", "org", b_cap)):
        spec: dict[str, Any] = {"weight": 1, **({"parent": parent} if parent else {})}
        if cap is not None:
            spec["capability"] = {"cpu": str(cap)}
        lines.append(b.added(b.queue(name, spec=spec)))
    return lines


def _stream(nodes: list[tuple[int, int, str]], gangs: list[GangSpec], caps: tuple[int | None, ...]) -> list[str]:
    lines = []
    for i, (cpu, gpu, ib) in enumerate(nodes):
        lines.append(b.added(b.node(f"n-{i}", cpu=str(cpu), gpu=str(gpu), labels={IB_LABEL: ib}, rv=str(i + 1))))
    lines.extend(_queues(caps))
    for g, gang in enumerate(gangs):
        group = b.pod_group(f"g{g}", min_member=min(gang.min_member, gang.size), queue=gang.queue)
        if gang.ib:
            group["metadata"]["annotations"] = {NETWORK_TOPOLOGY_ANNOTATION: "ib-cluster"}
        lines.append(b.added(group))
        for p in range(gang.size):
            pod = b.pod(f"g{g}-{p}", cpu=str(gang.cpu), gpu=str(gang.gpu) if gang.gpu else None, group=f"g{g}",
                        priority=gang.priority)  # fmt: skip
            lines.append(b.added(pod))
    return [*lines, b.marker(1), b.marker(2)]


def _run(lines: list[str], config: SchedulerConfig) -> tuple[Engine, list[dict[str, Any]]]:
    engine = Engine(config, on_markers=lambda _: True)
    out = []
    for line in lines:
        out.extend(d.to_dict() for d in engine.handle(parse_event(line)).decisions)
    return engine, out


def _check(
    nodes: list[tuple[int, int, str]], gangs: list[GangSpec], caps: tuple[int | None, ...], out: list[dict[str, Any]]
) -> None:
    binds = {d["target"]["name"]: d["node"] for d in out if d["kind"] == "Bind"}
    assert len(binds) == sum(1 for d in out if d["kind"] == "Bind"), "a pod was bound twice"
    used: dict[str, dict[str, int]] = defaultdict(dict)
    per_queue: dict[str, int] = defaultdict(int)
    for g, gang in enumerate(gangs):
        bound = [binds[f"g{g}-{p}"] for p in range(gang.size) if f"g{g}-{p}" in binds]
        assert not bound or len(bound) >= min(gang.min_member, gang.size), f"gang g{g} partly bound: {bound}"
        if gang.ib and bound:
            assert len({nodes[int(n[2:])][2] for n in bound}) == 1, f"IB gang g{g} spans fabrics: {bound}"
        for node in bound:
            quantity.add(used[node], {"cpu": gang.cpu * 1000, "nvidia.com/gpu": gang.gpu * 1000, "pods": 1000})
        per_queue[gang.queue] += gang.cpu * len(bound)
    for node, amount in used.items():
        cpu, gpu, _ = nodes[int(node[2:])]
        assert amount["cpu"] <= cpu * 1000 and amount["nvidia.com/gpu"] <= gpu * 1000, f"{node} over-committed"
    org_cap, a_cap, b_cap = caps
    for queue, cap in (("a", a_cap), ("b", b_cap)):
        assert cap is None or per_queue[queue] <= cap, f"queue {queue} over its capability"
    assert org_cap is None or per_queue["a"] + per_queue["b"] <= org_cap, "children over the parent's capability"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_st, gangs=gangs_st, caps=caps_st)
def test_hierarchical_capacity_never_overcommits_nodes_queues_or_gangs(nodes: Any, gangs: Any, caps: Any) -> None:
    _, out = _run(_stream(nodes, gangs, caps), HIERARCHY)
    _check(nodes, gangs, caps, out)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_st, gangs=gangs_st)
def test_default_config_never_overcommits_nodes_or_splits_gangs(nodes: Any, gangs: Any) -> None:
    _, out = _run(_stream(nodes, gangs, (None, None, None)), SchedulerConfig())
    _check(nodes, gangs, (None, None, None), out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_st, gangs=gangs_st, caps=caps_st)
def test_same_events_give_the_same_decisions(nodes: Any, gangs: Any, caps: Any) -> None:
    lines = _stream(nodes, gangs, caps)
    assert _run(lines, HIERARCHY)[1] == _run(lines, HIERARCHY)[1]


PREEMPT = from_mapping({"actions": "enqueue, allocate, preempt, backfill"})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_st, gangs=gangs_st, late=gangs_st)
def test_preemption_never_gives_released_room_twice(nodes: Any, gangs: Any, late: Any) -> None:
    """Gangs run; later ones (some at a higher priority) preempt, and the cluster deletes each evicted
    pod a cycle later. Pipelined room is held: live pods never over-commit a node, no pod binds twice,
    and no later gang is partly bound."""
    engine = Engine(PREEMPT, on_markers=lambda _: True)
    gangs = [GangSpec(g.size, g.min_member, g.cpu, g.gpu, "default", g.ib, g.priority) for g in gangs]
    later = [GangSpec(g.size, g.min_member, g.cpu, g.gpu, "default", g.ib, g.priority + 3) for g in late]
    first = _stream(nodes, gangs, (None, None, None))
    second = [line for line in _stream(nodes, [*gangs, *later], (None, None, None)) if line not in first]
    out: list[dict[str, Any]] = []
    pods: dict[str, str] = {}  # pod name -> its wire line, to delete it when evicted
    for line in [*first, *second]:
        out.extend(d.to_dict() for d in engine.handle(parse_event(line)).decisions)
    for step in range(6):
        gone = [d["target"]["name"] for d in out if d["kind"] == "Evict" and d["target"]["name"] not in pods]
        for name in gone:
            pods[name] = name
            out.extend(d.to_dict() for d in engine.handle(parse_event(b.deleted(b.pod(name, rv="9")))).decisions)
        out.extend(d.to_dict() for d in engine.handle(parse_event(b.marker(10 + step))).decisions)
    binds = [(d["target"]["name"], d["node"]) for d in out if d["kind"] == "Bind"]
    assert len(binds) == len(dict(binds)), "a pod was bound twice"
    spec = {f"g{g}-{p}": gang for g, gang in enumerate([*gangs, *later]) for p in range(gang.size)}
    used: dict[str, dict[str, int]] = defaultdict(dict)
    for name, node in binds:
        if name not in pods:
            gang = spec[name]
            quantity.add(used[node], {"cpu": gang.cpu * 1000, "nvidia.com/gpu": gang.gpu * 1000})
    for node, amount in used.items():
        cpu, gpu, _ = nodes[int(node[2:])]
        assert amount["cpu"] <= cpu * 1000 and amount["nvidia.com/gpu"] <= gpu * 1000, f"{node} over-committed"
    bound = dict(binds)
    for g in range(len(gangs), len(gangs) + len(later)):
        gang = spec.get(f"g{g}-0")
        placed = [p for p in range(gang.size) if f"g{g}-{p}" in bound] if gang else []
        assert not placed or len(placed) >= min(gang.min_member, gang.size), f"gang g{g} partly bound"


def _every_domain(
    session: Session,
    request: TopologyRequest | None,
    domains: list[Domain],
    attempt_in: Callable[[Domain], Attempt],
    ready: Callable[[], bool],
    *,
    asks: Mapping[str, int],
) -> tuple[Domain | None, Attempt | None, list[tuple[str, int]]]:
    """``placement.best_domain`` without its bound: every domain of a tier is tried."""
    tries: list[tuple[str, int]] = []
    for tier in sorted({d.tier for d in domains}):
        fits = []
        for domain in (d for d in domains if d.tier == tier):
            attempt = attempt_in(domain)
            placed_any = attempt.statement.placed() > 0 or not attempt.tasks
            if ready() and attempt.refused is None and placed_any:
                fits.append((placement._leftover(session, placement.where_of(request, domain)), domain.name, domain))
            tries.append((domain.name, attempt.statement.placed()))
            attempt.statement.discard()
        if fits:
            return min(fits, key=lambda f: (f[0], f[1]))[2], None, tries
    return None, None, tries


fabrics_st = st.lists(
    st.tuples(st.integers(2, 8), st.integers(0, 4), st.sampled_from(["ib-w", "ib-x", "ib-y", "ib-z"])),
    min_size=1,
    max_size=10,
)


def _decided_as_trying_every_domain(lines: list[str]) -> list[dict[str, Any]]:
    """The decisions of ``lines``, checked to be those made when every domain is tried."""
    bounded = _run(lines, HIERARCHY)[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(placement, "best_domain", _every_domain)
        assert _run(lines, HIERARCHY)[1] == bounded
    return bounded


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=fabrics_st, gangs=gangs_st, caps=caps_st)
def test_a_gang_s_domain_is_the_one_trying_every_domain_finds(nodes: Any, gangs: Any, caps: Any) -> None:
    """``best_domain`` tries the domains by the least they could keep and stops once none left
    could win: the same decisions as trying every one."""
    _decided_as_trying_every_domain(_stream(nodes, gangs, caps))


PARTITION = "volcano.sh/partition-id"


@dataclass(frozen=True)
class SubGangSpec:
    """A gang that must live in one HyperNode of tier <= ``tier``: ``parts`` sub-gangs of
    ``per_part`` members (each whole at ``sub_size`` of them, at most all, inside one HyperNode of
    tier <= ``sub_tier`` when that is set; ``min_sub_groups`` of them needed) and ``loose`` members
    in none."""

    parts: int
    per_part: int
    loose: int
    sub_size: int
    min_sub_groups: int
    sub_tier: int | None
    tier: int
    min_member: int
    cpu: int
    gpu: int
    queue: str
    priority: int


# Tier-1 switches, each under one of three tier-2 spines: whether its nodes have GPUs (half their
# cpus), and one to three nodes (their cpus).
switches_st = st.lists(
    st.tuples(st.integers(0, 2), st.booleans(), st.lists(st.integers(2, 8), min_size=1, max_size=3)),
    min_size=2,
    max_size=6,
)
sub_gangs_st = st.lists(
    st.builds(
        SubGangSpec,
        parts=st.integers(1, 3),
        per_part=st.integers(1, 2),
        loose=st.integers(0, 3),
        sub_size=st.integers(1, 3),
        min_sub_groups=st.integers(0, 2),
        sub_tier=st.none() | st.integers(1, 2),
        tier=st.integers(1, 2),
        min_member=st.integers(1, 3),
        gpu=st.sampled_from([0, 0, 1]),
        **MEMBERS,
    ),
    min_size=1,
    max_size=4,
)


def _sub_gang_stream(
    switches: list[tuple[int, bool, list[int]]], gangs: list[SubGangSpec], caps: tuple[int | None, ...]
) -> list[str]:
    """Nodes in switches s<i> (tier 1) under spines spine-<j> (tier 2), the queue tree, and gangs
    with a hard networkTopology and a subGroupPolicy by partition label. Nodes and pods have 4Gi
    of memory a cpu, so that what a domain keeps is not mostly how many nodes it has: a domain
    tried later (a partial fit before it) can then win, which is when the bound matters."""
    lines: list[str] = []
    spines: dict[str, list[str]] = defaultdict(list)
    count = 0
    for s, (spine, gpus, nodes) in enumerate(switches):
        names = []
        for cpu in nodes:
            names.append(f"n-{count}")
            count += 1
            gpu = str(cpu // 2) if gpus else None
            node = b.node(names[-1], cpu=str(cpu), memory=f"{4 * cpu}Gi", gpu=gpu, rv=str(count))
            lines.append(b.added(node))
        lines.append(b.added(b.hypernode(f"s{s}", 1, nodes=names)))
        spines[f"spine-{spine}"].append(f"s{s}")
    lines.extend(b.added(b.hypernode(name, 2, hypernodes=members)) for name, members in sorted(spines.items()))
    lines.extend(_queues(caps))
    for g, gang in enumerate(gangs):
        grouped = gang.parts * gang.per_part
        policy: dict[str, Any] = {
            "name": "part",
            "matchLabelKeys": [PARTITION],
            "subGroupSize": min(gang.sub_size, gang.per_part),
            "minSubGroups": min(gang.min_sub_groups, gang.parts),
        }
        if gang.sub_tier is not None:
            policy["networkTopology"] = {"mode": "hard", "highestTierAllowed": gang.sub_tier}
        spec = {"networkTopology": {"mode": "hard", "highestTierAllowed": gang.tier}, "subGroupPolicy": [policy]}
        size = grouped + gang.loose
        lines.append(b.added(b.pod_group(f"g{g}", min_member=min(gang.min_member, size), queue=gang.queue, spec=spec)))
        for p in range(size):
            pod = b.pod(f"g{g}-{p}", cpu=str(gang.cpu), memory=f"{4 * gang.cpu}Gi",
                        gpu=str(gang.gpu) if gang.gpu else None, group=f"g{g}", priority=gang.priority)  # fmt: skip
            if p < grouped:
                pod["metadata"]["labels"] = {PARTITION: str(p % gang.parts)}
            lines.append(b.added(pod))
    return [*lines, b.marker(1), b.marker(2)]


# s1 (a 2-cpu node) has the lower bound and is tried first: it takes one of the two 2-cpu
# sub-gangs (one is enough) and keeps nothing. s0 (a 4-cpu node) could keep no less, but no more
# either, and comes first by name: it must still be tried, and wins with both sub-gangs.
TIE = SubGangSpec(parts=2, per_part=1, loose=0, sub_size=1, min_sub_groups=1, sub_tier=None, tier=1,
                  min_member=1, cpu=2, gpu=0, queue="default", priority=0)  # fmt: skip


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(switches=switches_st, gangs=sub_gangs_st, caps=caps_st)
@example(switches=[(0, False, [4]), (0, False, [2])], gangs=[TIE], caps=(None, None, None))
def test_a_sub_ganged_gang_s_domain_is_the_one_trying_every_domain_finds(switches: Any, gangs: Any, caps: Any) -> None:
    """A gang with sub-gangs and a hard HyperNode topology (``sub_placement.place``) dry-runs its
    sub-gangs and other members in each switch or spine by the least it could keep, stops once none
    left could win, and keeps the winner's attempt when it was the last tried: the same decisions
    as trying every domain (the sub-gangs' own domains inside it too) and placing the winner again.
    The explicit example is a tie of bound and fit settled by name."""
    _decided_as_trying_every_domain(_sub_gang_stream(switches, gangs, caps))


def test_a_domain_whose_bound_ties_the_fit_is_still_tried_by_name() -> None:
    """ib-x (4 cpu, 33Gi) and ib-y (2 cpu, 32Gi), a gang of two 2-cpu members, its minimum one.
    ib-y has the lower bound and is tried first: it fits one member (the gang's minimum) and keeps
    31Gi, 0.939 of the largest node's memory. ib-x's bound is that same 0.939, and ib-x comes
    first by name, so it must still be tried: it takes both members, keeps as much, and wins."""
    lines = [
        b.added(b.node("n-a", cpu="4", memory="33Gi", labels={IB_LABEL: "ib-x"}, rv="1")),
        b.added(b.node("n-b", cpu="2", memory="32Gi", labels={IB_LABEL: "ib-y"}, rv="2")),
    ]
    group = b.pod_group("g0", min_member=1, queue="default")
    group["metadata"]["annotations"] = {NETWORK_TOPOLOGY_ANNOTATION: "ib-cluster"}
    lines.append(b.added(group))
    lines.extend(b.added(b.pod(f"g0-{p}", cpu="2", group="g0")) for p in range(2))
    lines += [b.marker(1), b.marker(2)]
    bounded = _decided_as_trying_every_domain(lines)
    assert [(d["target"]["name"], d["node"]) for d in bounded if d["kind"] == "Bind"] == [
        ("g0-0", "n-a"),
        ("g0-1", "n-a"),
    ]
