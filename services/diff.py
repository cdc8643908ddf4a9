"""Diff: where two decision streams part (two configurations over the same events, or a replay
against what the worker stored), object by object, with what each stream decided and why.

Decisions are compared without their ``id``; an object's decisions are aligned in stream order
(``difflib``), so one extra decision shows as one, not as a shift of everything after it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

ObjectId = tuple[str, str, str, str]
"""(cluster, kind, namespace, name) of a decision's target."""


class DecisionFileError(ValueError):
    """A line of a decisions file is not a decision."""


def read_decisions(path: Path) -> list[dict[str, Any]]:
    """The decisions of a JSONL file, in file order."""
    out = []
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                decision = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                raise DecisionFileError(f"{path}:{number}: not JSON ({exc})") from None
            target = decision.get("target") if isinstance(decision, dict) else None
            if not isinstance(target, dict) or "kind" not in target or "name" not in target or "kind" not in decision:
                raise DecisionFileError(f"{path}:{number}: not a decision (no kind or target)")
            out.append(decision)
    return out


def object_of(decision: dict[str, Any]) -> ObjectId:
    target = decision["target"]
    return (decision.get("cluster", "default"), target["kind"], target.get("namespace", ""), target["name"])


def summary(decision: Mapping[str, Any], *, head: bool = True) -> str:
    """One line for a decision: (with ``head``) its seq and kind, what it sets, and why."""
    parts = [f"seq {decision.get('seq', '?')}", decision["kind"]] if head else []
    if "node" in decision:
        parts.append(f"-> {decision['node']}")
    for name in ("phase", "state"):
        if name in decision:
            parts.append(str(decision[name]))
    if decision.get("reason"):
        parts.append(f"({decision['reason']})")
    conditions = [c for c in decision.get("conditions") or [] if isinstance(c, dict)]
    messages = [f"{c.get('type')}={c.get('status')}: {c.get('message')}" for c in conditions if c.get("message")]
    if messages:
        parts.append("; ".join(messages))
    if decision.get("allocated"):
        parts.append("allocated " + ", ".join(f"{k}={v}" for k, v in sorted(decision["allocated"].items())))
    return " ".join(parts)


@dataclass
class Change:
    """One place where the streams part for an object: decisions only in A, only in B, or both."""

    a: list[dict[str, Any]] = field(default_factory=list)
    b: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seq(self) -> int:
        return min(int(d.get("seq", 0)) for d in self.a + self.b)


@dataclass
class ObjectDiff:
    object: ObjectId
    changes: list[Change]

    def to_dict(self) -> dict[str, Any]:
        cluster, kind, namespace, name = self.object
        return {
            "cluster": cluster,
            "kind": kind,
            "namespace": namespace,
            "name": name,
            "changes": [{"seq": c.seq, "a": c.a, "b": c.b} for c in self.changes],
        }


def _comparable(decision: dict[str, Any]) -> bytes:
    return msgspec.json.encode({k: v for k, v in decision.items() if k != "id"}, order="sorted")


def _by_object(decisions: Iterable[dict[str, Any]]) -> dict[ObjectId, list[dict[str, Any]]]:
    out: dict[ObjectId, list[dict[str, Any]]] = {}
    for decision in decisions:
        out.setdefault(object_of(decision), []).append(decision)
    return out


def diff(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[ObjectDiff]:
    """The objects whose decisions differ, by the seq of their first difference, then object."""
    in_a, in_b = _by_object(a), _by_object(b)
    out = []
    for obj in sorted(set(in_a) | set(in_b)):
        left, right = in_a.get(obj, []), in_b.get(obj, [])
        matcher = difflib.SequenceMatcher(
            a=[_comparable(d) for d in left], b=[_comparable(d) for d in right], autojunk=False
        )
        changes = [Change(left[i1:i2], right[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
        if changes:
            out.append(ObjectDiff(obj, changes))
    return sorted(out, key=lambda d: (d.changes[0].seq, d.object))


def render(diffs: list[ObjectDiff], a_name: str, b_name: str, counts: tuple[int, int]) -> str:
    """The diff as text for a terminal."""
    lines = [f"A: {a_name} ({counts[0]} decisions)", f"B: {b_name} ({counts[1]} decisions)"]
    for item in diffs:
        cluster, kind, namespace, name = item.object
        lines.append(f"\n{kind} {namespace + '/' if namespace else ''}{name} (cluster {cluster})")
        for change in item.changes:
            for side, decisions in (("A", change.a), ("B", change.b)):
                lines.extend(f"  {side}: {summary(d)}" for d in decisions)
                if not decisions:
                    lines.append(f"  {side}: (nothing)")
    verdict = f"{len(diffs)} object(s) differ" if diffs else "the streams decide the same (ids aside)"
    lines.append(f"\n{verdict}")
    return "\n".join(lines)
