"""Network topology: the domains a gang may be asked to fit in as a whole (SEEDS S4).

Two sources: the InfiniBand-cluster node label (one tier-1 domain per label value), and
HyperNodes, whose ``spec.tier`` says how close their members are (lower is closer) and whose
members are nodes (by exact name, regex or labels) or other HyperNodes (by name or regex).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from domain.objects.volcano import HyperNode, HyperNodeMember, NetworkTopologySpec


class Labelled(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class Domain:
    name: str
    tier: int
    nodes: frozenset[str]
    tier_name: str = ""  # the HyperNode's spec.tierName


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """What a PodGroup asks for: ``label`` set means one IB cluster; else HyperNode tiers."""

    hard: bool  # the gang must fit inside one domain, or it waits
    highest_tier: int | None  # HyperNode domains above this tier are not allowed
    label: str  # the node label naming IB clusters, or "" for HyperNodes
    tier_name: str = ""  # highestTierName: the highest tier given by its HyperNodes' tierName

    def limit(self, domains: Iterable[Domain]) -> int | None:
        """The highest tier allowed (None: any); a tier name no HyperNode carries allows none."""
        if not self.tier_name:
            return self.highest_tier
        return min((d.tier for d in domains if d.tier_name == self.tier_name), default=-1)


def hyper_request(spec: NetworkTopologySpec) -> TopologyRequest:
    """A PodGroup's or sub-group's spec.networkTopology: hard needs a highest tier, by number or name."""
    bounded = spec.highest_tier_allowed is not None or bool(spec.highest_tier_name)
    return TopologyRequest(spec.mode == "hard" and bounded, spec.highest_tier_allowed, "", spec.highest_tier_name)


HYPERNODE = "hypernode"


def where_key(prefix: str, domain: Domain) -> str:
    """Names a domain's node set: an IB cluster and a HyperNode may share a name."""
    return f"{prefix}={domain.name}"


def label_domains(nodes: Iterable[Labelled], label: str) -> list[Domain]:
    members: dict[str, set[str]] = {}
    for node in nodes:
        value = node.labels.get(label)
        if value:
            members.setdefault(value, set()).add(node.name)
    return [Domain(value, 1, frozenset(names)) for value, names in sorted(members.items())]


def _selects(member: HyperNodeMember, name: str, labels: dict[str, str] | None) -> bool:
    selector = member.selector
    if selector.exact_match is not None:
        return selector.exact_match.name == name
    if selector.regex_match is not None:
        try:
            return re.search(selector.regex_match.pattern, name) is not None
        except re.error:
            return False  # an invalid pattern selects nothing, as the webhook would refuse it
    if selector.label_match is not None and labels is not None:
        return all(labels.get(k) == v for k, v in selector.label_match.match_labels.items())
    return False


def hyper_domains(hypernodes: Iterable[object], nodes: Iterable[Labelled]) -> list[Domain]:
    """Every HyperNode with the nodes it holds, directly or through member HyperNodes."""
    by_name = {h.metadata.name: h for h in hypernodes if isinstance(h, HyperNode)}
    node_list = [(n.name, n.labels) for n in nodes]
    resolved: dict[str, frozenset[str]] = {}

    def resolve(name: str, visiting: frozenset[str]) -> frozenset[str]:
        if name in resolved:
            return resolved[name]
        out: set[str] = set()
        for member in by_name[name].spec.members:
            if member.type == "Node":
                out.update(n for n, labels in node_list if _selects(member, n, labels))
            else:
                for child in sorted(by_name):
                    if child not in visiting and child != name and _selects(member, child, None):
                        out.update(resolve(child, visiting | {name}))
        resolved[name] = frozenset(out)
        return resolved[name]

    return sorted(
        (Domain(name, h.spec.tier, resolve(name, frozenset()), h.spec.tier_name) for name, h in by_name.items()),
        key=lambda d: (d.tier, d.name),
    )
