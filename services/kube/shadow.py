"""Shadow mode: our decisions beside what the cluster's own scheduler did.

While Volcano or Kueue still acts on the cluster, schedstream can run beside it with nothing
written: the worker decides from the same watch stream, and this module compares each of our
decisions with the object as the cluster left it. Three aspects are compared, the ones a
scheduler owns: a pod's node (``Bind``, or ``PodStatus`` for a pod we leave unbound), a
PodGroup's phase (``PodGroupStatus``) and a Workload's ClusterQueue when admitted
(``WorkloadStatus``). Each difference carries both sides' reasons: ours from the decision, the
cluster's from the object (its PodScheduled, Unschedulable or QuotaReserved condition).

Two sources, one comparison: ``schedstream shadow`` reads the watch stream (the cluster-events
topic or files) to its end, and ``schedstream apply --dry-run`` reads each object live.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer

from services.kafka_security import PLAINTEXT, KafkaSecurity

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
# Decision kind -> the aspect of the object it decides.
ASPECTS = {"Bind": "node", "PodStatus": "node", "PodGroupStatus": "phase", "WorkloadStatus": "admission"}


@dataclass(frozen=True, slots=True)
class Side:
    value: str  # "" means none: not bound, not admitted
    reason: str


@dataclass(frozen=True, slots=True)
class Comparison:
    cluster: str
    target: str  # Kind namespace/name
    aspect: str
    ours: Side
    theirs: Side

    @property
    def agrees(self) -> bool:
        return self.ours.value == self.theirs.value

    def line(self) -> str:
        def side(s: Side) -> str:
            return f"{s.value or '(none)'} [{s.reason}]" if s.reason else s.value or "(none)"

        verdict = "same" if self.agrees else "DIFFERS"
        return f"{verdict:7} {self.target} {self.aspect}: ours {side(self.ours)} | cluster {side(self.theirs)}"


@dataclass(slots=True)
class Report:
    comparisons: list[Comparison] = field(default_factory=list)

    @property
    def agreed(self) -> int:
        return sum(c.agrees for c in self.comparisons)

    @property
    def rate(self) -> float:
        return self.agreed / len(self.comparisons) if self.comparisons else 1.0

    @property
    def differences(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.agrees]

    def text(self) -> str:
        head = f"shadow: {len(self.comparisons)} compared, {self.agreed} agree ({self.rate:.1%})"
        return "\n".join([head, *(f"  {c.line()}" for c in self.differences)])

    def json(self) -> str:
        differences = [asdict(c) for c in self.differences]
        return json.dumps({"compared": len(self.comparisons), "agreed": self.agreed, "rate": self.rate,
                           "differences": differences}, indent=2)  # fmt: skip


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return obj.get("status", {}).get("conditions") or []


def _because(conditions: Iterable[Mapping[str, Any]], types: tuple[str, ...]) -> str:
    for cond in conditions:
        if cond.get("type") in types:
            text = ": ".join(p for p in (cond.get("reason"), cond.get("message")) if p)
            return f"{cond['type']}={cond.get('status')} {text}".strip()
    return ""


def ours(decision: Mapping[str, Any]) -> Side:
    kind, conditions = decision["kind"], decision.get("conditions") or []
    if kind == "Bind":
        return Side(decision["node"], decision.get("reason", ""))
    if kind == "PodStatus":
        return Side("", _because(conditions, ("PodScheduled",)))
    if kind == "PodGroupStatus":
        return Side(decision["phase"], _because(conditions, ("Unschedulable", "Scheduled")) or decision["reason"])
    admission = decision.get("admission") or {}
    return Side(admission.get("clusterQueue", ""), _because(conditions, ("QuotaReserved",)))


def theirs(aspect: str, obj: Mapping[str, Any] | None) -> Side:
    if obj is None:
        return Side("", "never seen on the cluster")
    conditions, status = _conditions(obj), obj.get("status", {})
    if aspect == "node":
        node = obj.get("spec", {}).get("nodeName") or ""
        return Side(node, _because(conditions, ("PodScheduled",)) if not node else "")
    if aspect == "phase":
        return Side(status.get("phase") or "Pending", _because(conditions, ("Unschedulable", "Scheduled")))
    reserved = any(c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conditions)
    queue = (status.get("admission") or {}).get("clusterQueue", "") if reserved else ""
    return Side(queue, _because(conditions, ("QuotaReserved",)))


def object_key(cluster: str, kind: str, namespace: str, name: str) -> tuple[str, str, str, str]:
    return (cluster, kind, namespace or "", name)


def label(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def compare(decision: Mapping[str, Any], obj: Mapping[str, Any] | None) -> Comparison | None:
    """One decision against the object as the cluster holds it; None for kinds not compared."""
    aspect = ASPECTS.get(decision["kind"])
    if aspect is None:
        return None
    t = decision["target"]
    target = label(t["kind"], t.get("namespace", ""), t["name"])
    return Comparison(decision.get("cluster", "default"), target, aspect, ours(decision), theirs(aspect, obj))


def report(events: Iterable[Mapping[str, Any]], decisions: Iterable[Mapping[str, Any]], scheduler_name: str) -> Report:
    """Our last decision per object and aspect against the last state the watch stream showed;
    a pod of ``scheduler_name`` the cluster bound while we decided nothing for it counts too."""
    seen: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    for event in events:
        obj = event.get("object")
        if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
            meta = obj.get("metadata", {})
            seen[object_key(event.get("cluster", "default"), obj.get("kind", ""), meta.get("namespace", ""),
                            meta.get("name", ""))] = obj  # fmt: skip
    last: dict[tuple[tuple[str, str, str, str], str], Mapping[str, Any]] = {}
    for decision in decisions:
        aspect = ASPECTS.get(decision["kind"])
        if aspect is not None:
            t = decision["target"]
            key = object_key(decision.get("cluster", "default"), t["kind"], t.get("namespace", ""), t["name"])
            last[key, aspect] = decision
    out = Report()
    for (key, _aspect), decision in sorted(last.items()):
        out.comparisons.append(compare(decision, seen.get(key)))  # type: ignore[arg-type]
    for key, obj in sorted(seen.items()):
        spec = obj.get("spec", {})
        bound_by_them = key[1] == "Pod" and spec.get("nodeName") and spec.get("schedulerName") == scheduler_name
        if bound_by_them and (key, "node") not in last:
            ours_side = Side("", _why_unbound(obj, key, last))
            target = label("Pod", key[2], key[3])
            out.comparisons.append(Comparison(key[0], target, "node", ours_side, Side(spec["nodeName"], "")))
    return out


def _why_unbound(pod: Mapping[str, Any], key: tuple[str, str, str, str], last: Mapping[Any, Mapping[str, Any]]) -> str:
    """Our reason for leaving a pod unbound: its gang's last status, if we decided one."""
    group = pod.get("metadata", {}).get("annotations", {}).get(GROUP_ANNOTATION)
    decision = last.get((object_key(key[0], "PodGroup", key[2], group or ""), "phase"))
    return f"gang {group}: {ours(decision).reason}" if decision else "no decision"


async def read_topic(
    bootstrap: str, topic: str, wait: float = 10, security: KafkaSecurity = PLAINTEXT
) -> list[dict[str, Any]]:
    """Every JSON message the topic holds now (up to its end offsets at the start), partition by
    partition; a message that is not a JSON object is left out (the worker's DLQ has those). A topic
    that does not exist yet reads as empty."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **security.client_options(),
    )
    await consumer.start()
    out: list[dict[str, Any]] = []
    try:
        deadline = asyncio.get_running_loop().time() + wait
        while not consumer.assignment() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)  # without a group, every partition is assigned once metadata is in
        partitions = sorted(consumer.assignment())
        ends = await consumer.end_offsets(partitions) if partitions else {}
        for tp in partitions:
            while await consumer.position(tp) < ends[tp]:
                batch = await consumer.getmany(tp, timeout_ms=1000)
                out.extend(v for m in batch.get(tp, ()) if isinstance(v := _json(m.value), dict))
    finally:
        await consumer.stop()
    return out


def read_file(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as handle:
        return [v for line in handle if line.strip() and isinstance(v := _json(line), dict)]


def _json(value: bytes | None) -> Any:
    try:
        return json.loads(value or b"")
    except ValueError:
        return None
