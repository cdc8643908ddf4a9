"""Snapshots: the whole domain state of an Engine as a versioned, JSON-able dict, and back.

Replaying a snapshot's tail gives the same decisions and final state as replaying the whole
stream, so a restart need not fold all history. Format, version 1 (``SNAPSHOT_VERSION``)::

    {"version": 1,
     "clusters": {
       "<cluster>": {
         "nextSeq": 42,                     # seq the cluster's next event gets
         "clock": "2026-01-01T00:00:05Z",   # scheduler clock (last SCHEDULE marker) or null
         "onMarkers": true,                 # cycles run only at markers
         "eventsSinceMarker": 3,
         "counters": {"duplicate": 2, ...},
         "tombstones": ["uid-a", ...],      # sorted
         "localQueueUsage": {"ns/lq": {...}},  # LocalQueueUsage.to_dict() by key, sorted
         "runtimeHistory": {"runs": {"ns/user": [3600.0, 60.0]},  # RuntimeHistory.to_dict()
                            "ended": [["ns/user", "2026-01-01T00:00:01+00:00"]]},
         "objects": [                       # sorted by kind, then key
           {"object": {...},                # the object in its wire form (camelCase), except
                                            # that quantities are integers in milli-units
            "status": {...} | null}         # MachineStatus.to_dict(), null for kinds without a machine
         ]}}}

A change of meaning bumps ``SNAPSHOT_VERSION`` and adds an upcaster here; ``restore`` refuses
a version it does not know.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

import msgspec

from domain import kinds
from domain.engine import Engine
from domain.kinds import KubeObject
from domain.lifecycle.catalog import MACHINES
from domain.lifecycle.status import LocalQueueUsage, MachineStatus
from domain.objects.meta import ObjectKey, key_of
from domain.quantity import Quantity
from domain.runtime_history import RuntimeHistory
from domain.state import ClusterState

SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    """A snapshot this code cannot restore (unknown version or kind)."""


def _encode_quantity(value: Any) -> Any:
    if isinstance(value, Quantity):
        return int(value)
    raise NotImplementedError(type(value))


def _decode_quantity(tp: type, value: Any) -> Any:
    if tp is Quantity and isinstance(value, int):
        return Quantity(value)
    raise NotImplementedError(tp)


def take_cluster(state: ClusterState) -> dict[str, Any]:
    """One cluster's entry of the format above."""
    objects = []
    for kind, store in sorted(state.objects.items()):
        for key, obj in sorted(store.items()):
            status = state.machines.get(kind, {}).get(key)
            objects.append({
                "object": msgspec.to_builtins(obj, enc_hook=_encode_quantity),
                "status": None if status is None else status.to_dict(),
            })  # fmt: skip
    return {
        "nextSeq": state.next_seq,
        "clock": state.clock.isoformat() if state.clock else None,
        "onMarkers": state.on_markers,
        "eventsSinceMarker": state.events_since_marker,
        "counters": dict(sorted(state.counters.items())),
        "tombstones": sorted(state.tombstones),
        "localQueueUsage": {key: usage.to_dict() for key, usage in sorted(state.local_queue_usage.items())},
        "runtimeHistory": state.runtime_history.to_dict(),
        "objects": objects,
    }


def take(engine: Engine) -> dict[str, Any]:
    """The engine's whole state, clusters in name order."""
    return {
        "version": SNAPSHOT_VERSION,
        "clusters": {name: take_cluster(state) for name, state in sorted(engine.clusters.items())},
    }


def _object(wire: dict[str, Any]) -> KubeObject:
    object_type = kinds.lookup(wire["apiVersion"], wire["kind"])
    if object_type is None:
        raise SnapshotError(f"unknown kind {wire['apiVersion']}/{wire['kind']}")
    return msgspec.convert(wire, object_type, dec_hook=_decode_quantity)


def _restore_cluster(name: str, data: dict[str, Any]) -> ClusterState:
    state = ClusterState(
        name,
        next_seq=data["nextSeq"],
        clock=datetime.fromisoformat(data["clock"]) if data["clock"] else None,
        on_markers=data["onMarkers"],
        tombstones=set(data["tombstones"]),
        counters=Counter(data["counters"]),
        events_since_marker=data["eventsSinceMarker"],
        # Added within version 1: a snapshot without it had no usage sampled.
        local_queue_usage={
            ObjectKey(key): LocalQueueUsage.from_dict(usage) for key, usage in data.get("localQueueUsage", {}).items()
        },
        # Added within version 1: a snapshot without it kept no runtime history.
        runtime_history=RuntimeHistory.from_dict(data.get("runtimeHistory", {"runs": {}, "ended": []})),
    )
    for entry in data["objects"]:
        obj = _object(entry["object"])
        key = key_of(obj.metadata)
        state.of_kind(obj.kind)[key] = obj
        if entry["status"] is not None:
            phases = MACHINES[obj.kind].lifecycle.phases
            state.machines.setdefault(obj.kind, {})[key] = MachineStatus.from_dict(entry["status"], phases)
    return state


def _check_version(version: object) -> None:
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"snapshot version {version!r} is not supported (this code reads {SNAPSHOT_VERSION})")


def restore(engine: Engine, snapshot: dict[str, Any]) -> None:
    """Replace the engine's clusters with the snapshot's; its config stays the engine's own."""
    _check_version(snapshot.get("version"))
    engine.clusters = {name: _restore_cluster(name, data) for name, data in snapshot["clusters"].items()}


def restore_cluster(engine: Engine, name: str, data: dict[str, Any], version: int) -> None:
    """Put one cluster's entry (from ``take_cluster``, at ``version``) into the engine."""
    _check_version(version)
    engine.clusters[name] = _restore_cluster(name, data)
