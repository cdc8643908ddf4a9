"""The explanation as text for a terminal: a header, the status and reason, what the object
waits for (nodes that fell short and by how much, topology domains, preemption, its queue's
share, its pending position), the rest of the details, then the timeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml


def _pairs(resources: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in resources.items()) or "nothing"


def _fit(fit: Mapping[str, Any]) -> list[str]:
    if "takes" in fit:
        where = f"would take {fit['takes']}" + (f" (fits on {', '.join(fit['fits'])})" if len(fit["fits"]) > 1 else "")
    else:
        where = "fits on " + (", ".join(fit["fits"]) or "no node")
    lines = [f"  {fit['task']} asks {_pairs(fit['request'])}: {where}"]
    for row in fit["nodesShort"]:
        notes = [f"short by {_pairs(row['short'])}"] if row.get("short") else []
        notes += [f"room held for {', '.join(row['heldFor'])}"] if row.get("heldFor") else []
        lines.append(f"    {row['node']}: {'; '.join(row['reasons'])}{' (' + '; '.join(notes) + ')' if notes else ''}")
    return lines


def _starts(room: Mapping[str, Any]) -> str:
    if room["startsBy"]:
        return f"starts by {room['startsBy']}"
    return "starts when those nodes free up (no runtimes known)"


def _held(details: Mapping[str, Any]) -> list[str]:
    """The room this gang holds, and the room gangs held from it, in the next cycle."""
    lines = []
    if details.get("holding"):
        room = details["holding"]
        nodes = "; ".join(f"{node} {_pairs(taken)}" for node, taken in room["nodes"].items())
        lines.append(f"Holding room past its waiting bound (later jobs may not use it): {nodes}; {_starts(room)}")
    for room in details.get("heldFrom") or []:
        nodes = "; ".join(f"{node} {_pairs(taken)}" for node, taken in room["nodes"].items() if taken)
        lines.append(f"Room held for {room['gang']}, ahead of this one: {nodes or 'nothing free yet'}; {_starts(room)}")
    return lines


def _queue(queue: Mapping[str, Any]) -> list[str]:
    return [
        f"Queue {queue['name']} ({queue['state']}, weight {queue['weight']}): share {queue['share']}",
        f"  allocated {_pairs(queue['allocated'])}; deserved {_pairs(queue['deserved'])} by weight"
        + (f", {_pairs(queue['specDeserved'])} in its spec" if queue["specDeserved"] else ""),
        f"  capability {_pairs(queue['capability']) if queue['capability'] else 'unlimited'}; "
        f"guarantee {_pairs(queue['guarantee'])}",
        f"  still asked by its jobs {_pairs(queue['asked'])}",
    ]


def _gang(gang: Mapping[str, Any]) -> list[str]:
    lines = [f"Members ({gang['placed']} placed, minMember {gang['minMember']}):"]
    for m in gang["members"]:
        where = f"on {m['node']}" if m["node"] else (f"pipelined onto {m['nominated']}" if m["nominated"] else "")
        lines.append(f"  {m['name']:<28} {m['status']:<10} {where}{' (being evicted)' if m['evicting'] else ''}")
    if gang["waitingFor"]:
        lines.append(f"Waiting for room: pending members need {_pairs(gang['pendingNeed'])}; "
                     f"free in the cluster {_pairs(gang['clusterFree'])}")  # fmt: skip
        for fit in gang["waitingFor"]:
            lines.extend(_fit(fit))
    lines.extend(_held(gang))
    topology = gang.get("topology")
    if topology:
        domains = topology["label"] or "HyperNodes"
        lines.append(f"Topology ({topology['mode']}, {domains}): one domain must hold the gang")
        for row in topology["domains"]:
            short = f"short by {_pairs(row['short'])}" if row["short"] else "room for the pending members"
            lines.append(f"  {row['domain']} (tier {row['tier']}): free {_pairs(row['free'])}; {short}")
    if gang.get("preemption"):
        pre = gang["preemption"]
        pipelined = ", ".join(f"{k} on {v}" for k, v in pre["pipelined"].items())
        victims = ", ".join(pre["victims"]) or "none left"
        lines.append(f"Preemption in progress: {pipelined}; victims leaving: {victims}")
    if gang.get("queue"):
        lines.extend(_queue(gang["queue"]))
    return lines


def _details(kind: str, details: Mapping[str, Any]) -> list[str]:
    if kind == "PodGroup":
        return _gang(details)
    if kind == "Job":
        return [line for key, gang in details["podGroups"].items() for line in (f"PodGroup {key}:", *_gang(gang))]
    if kind == "Queue":
        return _queue(details)
    if kind == "Pod" and details.get("waitingFor"):
        alone = f" (this member alone; its gang {details['group']} must fit whole)" if details["group"] else ""
        return [f"Waiting for a node{alone}:", *_fit(details["waitingFor"]), *_held(details)]
    lines = []
    position = details.get("position")
    if position:
        lines.append(
            f"Pending position: {position['positionInClusterQueue']} in ClusterQueue {position['clusterQueue']} "
            f"(of {position['pendingInClusterQueue']}), {position['positionInLocalQueue']} in LocalQueue "
            f"{position['localQueue']} (0 is the head)"
        )
    rest = {k: v for k, v in details.items() if k != "position" and v not in (None, [], {})}
    if rest:
        lines.append(yaml.safe_dump(rest, sort_keys=False, default_flow_style=None, width=110).rstrip())
    return lines


def render(report: Mapping[str, Any]) -> str:
    obj = report["object"]
    name = f"{obj['namespace']}/{obj['name']}" if obj["namespace"] else obj["name"]
    clock = f", clock {report['clock']}" if report["clock"] else ""
    lines = [f"{obj['kind']} {name} (cluster {report['cluster']}, at seq {report['at']}{clock})"]
    status = report["status"]
    if not report["exists"]:
        lines.append("Status: not present at this point (deleted, or not yet created)")
    elif status:
        since = f" since seq {status['sinceSeq']}" if "sinceSeq" in status else ""
        extra = ", ".join(f"{k} {v}" for k, v in status.items() if k not in ("phase", "sinceSeq", "since") and v)
        lines.append(f"Status: {status.get('phase', '-')}{since}{'; ' + extra if extra else ''}")
    if report["reason"]:
        lines.append(f"Reason: {report['reason']['reason']}: {report['reason']['message']}")
    if report["details"]:
        lines.extend(_details(obj["kind"], report["details"]))
    lines.append("Timeline:" if report["timeline"] else "Timeline: nothing touched it")
    for e in report["timeline"]:
        lines.append(f"  seq {e['seq']:>5}  {e['time'] or '-':<20}  {e['source']:<8}  {e['what']:<15} {e['change']}")
    return "\n".join(lines)
