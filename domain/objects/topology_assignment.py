"""TopologyAssignment: the two wire forms of a podSet's topology assignment in a Workload's
admission, and the conversion between them.

v1beta1 lists ``domains`` (``values`` per level, ``count``). v1beta2 compresses the same list
into ``slices``: each covers ``domainCount`` domains, with one entry per level in
``valuesPerLevel`` (a ``universalValue`` shared by every domain, or ``roots`` between an
optional common ``prefix`` and ``suffix``) and the pods per domain as ``podCounts`` or one
``universalPodCount``. The domain keeps the v1beta1 form inside (``to_domains`` reads either);
``to_slices`` writes a v1beta2 workload's admission as one slice, as Kueue's single-slice
encoder does, keeping the domains' order so decoding gives them back exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def to_domains(assignment: Mapping[str, Any]) -> dict[str, Any]:
    """The v1beta1 form of an assignment given in either form."""
    if "slices" not in assignment:
        return dict(assignment)
    levels = list(assignment.get("levels") or [])
    domains: list[dict[str, Any]] = []
    for piece in assignment["slices"] or ():
        size = int(piece["domainCount"])
        per_level = [_level_values(v, size) for v in piece["valuesPerLevel"]]
        universal = piece.get("universalPodCount")
        counts = [int(universal)] * size if universal is not None else [int(c) for c in piece["podCounts"]]
        for i in range(size):
            domains.append({"values": [values[i] for values in per_level], "count": counts[i]})
    return {"levels": levels, "domains": domains}


def _level_values(level: Mapping[str, Any], size: int) -> list[str]:
    if level.get("universalValue") is not None:
        return [str(level["universalValue"])] * size
    prefix, suffix = level.get("prefix") or "", level.get("suffix") or ""
    return [f"{prefix}{root}{suffix}" for root in level["roots"]]


def to_slices(assignment: Mapping[str, Any]) -> dict[str, Any]:
    """The v1beta2 form (one slice) of a v1beta1 assignment."""
    domains = assignment.get("domains") or []
    levels = list(assignment.get("levels") or [])
    if not domains:
        return {"levels": levels, "slices": []}
    per_level = [_compress([str(d["values"][i]) for d in domains]) for i in range(len(levels))]
    counts = [int(d["count"]) for d in domains]
    piece: dict[str, Any] = {"domainCount": len(domains), "valuesPerLevel": per_level}
    if len(set(counts)) == 1:
        piece["universalPodCount"] = counts[0]
    else:
        piece["podCounts"] = counts
    return {"levels": levels, "slices": [piece]}


def _compress(values: Sequence[str]) -> dict[str, Any]:
    if len(set(values)) == 1:
        return {"universalValue": values[0]}
    shortest = min(len(v) for v in values)
    prefix = _common_prefix(values)[: max(shortest - 1, 0)]  # every root keeps a character
    rest = [v[len(prefix) :] for v in values]
    suffix = _common_prefix([r[::-1] for r in rest])[: max(shortest - len(prefix) - 1, 0)][::-1]
    compressed: dict[str, Any] = {}
    if prefix:
        compressed["prefix"] = prefix
    if suffix:
        compressed["suffix"] = suffix
    compressed["roots"] = [r[: len(r) - len(suffix)] for r in rest]
    return compressed


def _common_prefix(values: Sequence[str]) -> str:
    first, last = min(values), max(values)  # the sorted extremes share what all share
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]
