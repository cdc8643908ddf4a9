"""The Kueue quota a simulation runs under: ResourceFlavors, Topologies, Cohorts, ClusterQueues
and LocalQueues, the policy under test beside ``--config`` (not part of the trace).

``read`` loads them from a YAML file (``--queues``: documents or lists of Kueue manifests, as
``kubectl apply`` takes them); a LocalQueue without a namespace gets the simulation's.
Without a file, ``derived`` gives each LocalQueue the trace's Kueue jobs name a ClusterQueue
of the same name: one flavor ``default``, all in cohort ``default``, each with an equal share
of the nodes' capacity of every resource the jobs request as its nominal quota, borrowing
without limit, reclaiming within the cohort and preempting lower priorities in the queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from domain.quantity import ResourceList, add, parse_milli
from services.traces.events import WORKLOAD_API
from services.traces.model import Job, Node, TraceError, milli_quantity

KINDS = ("ResourceFlavor", "Topology", "Cohort", "ClusterQueue", "LocalQueue")
"""Kinds a quota file may hold, in the order they are created (what refers to what comes later)."""
FLAVOR = "default"
COHORT = "default"
PREEMPTION = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


def read(path: Path) -> list[dict[str, Any]]:
    """The Kueue objects of a YAML file, in ``KINDS`` order (file order within a kind)."""
    try:
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as exc:
        raise TraceError(f"{path}: {exc}") from None
    objects: list[dict[str, Any]] = []
    for document in documents:
        for obj in document if isinstance(document, list) else [document]:
            if obj is None:
                continue
            if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
                raise TraceError(f"{path}: expected Kueue objects of kinds {', '.join(KINDS)}, not {obj!r:.80}")
            if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
                raise TraceError(f"{path}: a {obj['kind']} without metadata.name")
            objects.append({"apiVersion": WORKLOAD_API, **obj})
    return sorted(objects, key=lambda obj: KINDS.index(obj["kind"]))


def derived(jobs: Iterable[Job], nodes: Iterable[Node]) -> list[dict[str, Any]]:
    """One ClusterQueue and LocalQueue per queue the jobs name, sharing the nodes equally."""
    jobs = list(jobs)
    queues = sorted({job.queue for job in jobs})
    if not queues:
        return []
    resources = sorted({name for job in jobs for name in job.requests})
    capacity: ResourceList = {}
    for node in nodes:
        add(capacity, {name: parse_milli(amount) for name, amount in node.allocatable.items()})
    share = {name: milli_quantity(capacity.get(name, 0) // len(queues)) for name in resources}
    quotas = [{"name": name, "nominalQuota": share[name]} for name in resources]
    group = {"coveredResources": resources, "flavors": [{"name": FLAVOR, "resources": quotas}]}
    objects: list[dict[str, Any]] = [_object("ResourceFlavor", FLAVOR, {})]
    for queue in queues:
        spec = {"cohort": COHORT, "resourceGroups": [group], "namespaceSelector": {}, "preemption": PREEMPTION}
        objects.append(_object("ClusterQueue", queue, spec))
    objects.extend(_object("LocalQueue", queue, {"clusterQueue": queue}) for queue in queues)
    return objects


def _object(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": WORKLOAD_API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def flavor_labels(objects: Iterable[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Each ResourceFlavor's ``nodeLabels``: the node selector its admitted pods get."""
    return {
        obj["metadata"]["name"]: dict((obj.get("spec") or {}).get("nodeLabels") or {})
        for obj in objects
        if obj["kind"] == "ResourceFlavor"
    }
