"""domain.objects: the typed objects parsed from watch events are frozen, and Python's cycle
collector does not track them (``gc=False``). A frozen object refers only to objects made
before it, so it takes part in no cycle, and the collector need not walk the millions of
them a long stream makes."""

from __future__ import annotations

import gc
import inspect
import json

import msgspec

from domain.events import WatchEvent, parse_event
from domain.objects import core, kueue, meta, volcano


def _types() -> list[type[msgspec.Struct]]:
    return [
        kind
        for module in (core, kueue, meta, volcano)
        for _, kind in inspect.getmembers(module, inspect.isclass)
        if issubclass(kind, msgspec.Struct) and kind.__module__ == module.__name__
    ]


def test_every_object_type_is_frozen_and_untracked() -> None:
    types = _types()
    assert len(types) > 70
    config = {kind.__name__: (kind.__struct_config__.frozen, kind.__struct_config__.gc) for kind in types}
    assert {name: seen for name, seen in config.items() if seen != (True, False)} == {}


def test_a_parsed_pod_is_not_tracked() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"},
    }
    event = parse_event(json.dumps({"type": "ADDED", "cluster": "c1", "object": pod}))
    assert isinstance(event, WatchEvent)
    obj = event.obj
    assert isinstance(obj, core.Pod)
    assert not gc.is_tracked(obj)
    assert not gc.is_tracked(obj.metadata)
    assert not gc.is_tracked(obj.spec.containers[0])
