"""Object builders for tests: Kubernetes objects in their wire form (camelCase dicts, exactly
what a watch event carries) and the JSON lines that wrap them.

Tests build the wire form and parse it with the real ``parse_event``, so every test also goes
through the decoder the service uses. ``typed`` turns one wire object into its typed struct.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.events import Inbound, WatchEvent, parse_event
from domain.kinds import KubeObject
from domain.objects.core import GROUP_NAME_ANNOTATION

Wire = dict[str, Any]

T0 = datetime(2026, 1, 1, tzinfo=UTC)
VOLCANO_PG = "scheduling.volcano.sh/v1beta1"
VOLCANO_JOB = "batch.volcano.sh/v1alpha1"
VOLCANO_TOPOLOGY = "topology.volcano.sh/v1alpha1"


def iso(seconds: float = 0) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def meta(
    name: str,
    namespace: str = "",
    *,
    uid: str | None = None,
    rv: str = "1",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owners: Iterable[Wire] = (),
    deleted_at: float | None = None,
    created_at: float | None = None,
) -> Wire:
    out: Wire = {"name": name, "uid": uid if uid is not None else f"uid-{name}", "resourceVersion": rv}
    if namespace:
        out["namespace"] = namespace
    if labels:
        out["labels"] = dict(labels)
    if annotations:
        out["annotations"] = dict(annotations)
    owners = list(owners)
    if owners:
        out["ownerReferences"] = owners
    if deleted_at is not None:
        out["deletionTimestamp"] = iso(deleted_at)
    if created_at is not None:
        out["creationTimestamp"] = iso(created_at)
    return out


def owner_job(name: str, uid: str | None = None) -> Wire:
    return {
        "apiVersion": VOLCANO_JOB,
        "kind": "Job",
        "name": name,
        "uid": uid if uid is not None else f"uid-{name}",
        "controller": True,
    }


def resources(cpu: str | None = None, memory: str | None = None, gpu: str | None = None, **extra: str) -> Wire:
    out: Wire = {}
    for name, value in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu), *extra.items()):
        if value is not None:
            out[name] = value
    return out


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    gpu: str | None = None,
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Wire] = (),
    unschedulable: bool = False,
    ready: str | None = "True",
    uid: str | None = None,
    rv: str = "1",
) -> Wire:
    spec: Wire = {}
    if unschedulable:
        spec["unschedulable"] = True
    taints = list(taints)
    if taints:
        spec["taints"] = taints
    status: Wire = {"allocatable": resources(cpu, memory, gpu, pods=pods)}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(name, uid=uid, rv=rv, labels={"kubernetes.io/hostname": name, **(labels or {})}),
        "spec": spec,
        "status": status,
    }


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Wire:
    out: Wire = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def container(name: str = "main", requests: Wire | None = None, limits: Wire | None = None) -> Wire:
    res: Wire = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    out: Wire = {"name": name, "image": "busybox"}
    if res:
        out["resources"] = res
    return out


def pod(
    name: str,
    namespace: str = "ns",
    *,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    gpu: str | None = None,
    group: str | None = None,
    scheduler: str = "volcano",
    node_name: str = "",
    phase: str = "Pending",
    node_selector: Mapping[str, str] | None = None,
    tolerations: Iterable[Wire] = (),
    affinity: Wire | None = None,
    containers: Iterable[Wire] | None = None,
    init_containers: Iterable[Wire] = (),
    priority: int | None = None,
    job: str | None = None,
    uid: str | None = None,
    rv: str = "1",
    deleted_at: float | None = None,
) -> Wire:
    spec: Wire = {
        "schedulerName": scheduler,
        "containers": list(containers)
        if containers is not None
        else [container(requests=resources(cpu, memory, gpu) or None)],
    }
    init_containers = list(init_containers)
    if init_containers:
        spec["initContainers"] = init_containers
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    tolerations = list(tolerations)
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity is not None:
        spec["affinity"] = affinity
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(
            name,
            namespace,
            uid=uid,
            rv=rv,
            annotations={GROUP_NAME_ANNOTATION: group} if group else None,
            owners=[owner_job(job)] if job else (),
            deleted_at=deleted_at,
        ),
        "spec": spec,
        "status": {"phase": phase},
    }


def required_affinity(*terms: Wire) -> Wire:
    """spec.affinity with requiredDuringSchedulingIgnoredDuringExecution made of ``terms``."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, operator: str, *values: str) -> Wire:
    out: Wire = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def pod_group(
    name: str,
    namespace: str = "ns",
    *,
    min_member: int = 1,
    queue: str = "default",
    job: str | None = None,
    uid: str | None = None,
    rv: str = "1",
    phase: str | None = None,
    deleted_at: float | None = None,
    spec: Wire | None = None,
) -> Wire:
    out: Wire = {
        "apiVersion": VOLCANO_PG,
        "kind": "PodGroup",
        "metadata": meta(
            name, namespace, uid=uid, rv=rv, owners=[owner_job(job)] if job else (), deleted_at=deleted_at
        ),
        "spec": {"minMember": min_member, "queue": queue, **(spec or {})},
    }
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def job(
    name: str,
    namespace: str = "ns",
    *,
    min_available: int = 1,
    tasks: Iterable[Wire] = (),
    queue: str = "default",
    uid: str | None = None,
    rv: str = "1",
    deleted_at: float | None = None,
) -> Wire:
    return {
        "apiVersion": VOLCANO_JOB,
        "kind": "Job",
        "metadata": meta(name, namespace, uid=uid, rv=rv, deleted_at=deleted_at),
        "spec": {"minAvailable": min_available, "schedulerName": "volcano", "queue": queue, "tasks": list(tasks)},
        "status": {"state": {"phase": "Pending"}},
    }


def queue(name: str, *, spec: Wire | None = None, state: str = "Open", rv: str = "1") -> Wire:
    return {
        "apiVersion": VOLCANO_PG,
        "kind": "Queue",
        "metadata": meta(name, rv=rv),
        "spec": dict(spec or {"weight": 1}),
        "status": {"state": state},
    }


def hypernode(
    name: str, tier: int, *, nodes: Iterable[str] = (), hypernodes: Iterable[str] = (), rv: str = "1"
) -> Wire:
    """A HyperNode of ``tier`` whose members are ``nodes`` and ``hypernodes``, each by exact name."""
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in hypernodes]
    return {
        "apiVersion": VOLCANO_TOPOLOGY,
        "kind": "HyperNode",
        "metadata": meta(name, rv=rv),
        "spec": {"tier": tier, "members": members},
    }


def event(type_: str, obj: Wire, cluster: str | None = "c1") -> str:
    line: Wire = {"type": type_, "object": obj}
    if cluster is not None:
        line["cluster"] = cluster
    return json.dumps(line)


def added(obj: Wire, cluster: str = "c1") -> str:
    return event("ADDED", obj, cluster)


def modified(obj: Wire, cluster: str = "c1") -> str:
    return event("MODIFIED", obj, cluster)


def deleted(obj: Wire, cluster: str = "c1") -> str:
    return event("DELETED", obj, cluster)


def marker(seconds: float = 0, cluster: str = "c1") -> str:
    return json.dumps({"type": "SCHEDULE", "cluster": cluster, "time": iso(seconds)})


def parse_all(lines: Iterable[str]) -> list[Inbound]:
    return [parse_event(line) for line in lines]


def typed(obj: Wire) -> KubeObject:
    """The typed struct of one wire object, decoded exactly as the service decodes it."""
    parsed = parse_event(event("ADDED", obj))
    assert isinstance(parsed, WatchEvent), parsed
    return parsed.obj
