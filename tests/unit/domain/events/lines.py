"""Helpers shared by the tests of domain.events: event lines and a path reader for typed objects."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.shared_data import SHARED_DATA

GI, MI = 1 << 30, 1 << 20
MANIFESTS = SHARED_DATA / "manifests"


def line(obj: Any) -> str:
    return json.dumps(obj)


def watch(obj: dict[str, Any], type_: str = "ADDED", **envelope: Any) -> str:
    return json.dumps({"type": type_, "object": obj, **envelope})


def minimal(kind: str = "Pod", api_version: str = "v1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "ns"}, **fields}


_STEP = re.compile(r"\.?(?P<attr>[A-Za-z_]\w*)(?P<call>\(\))?|\[(?P<index>\d+)\]|\['(?P<key>[^']+)'\]")


def dig(obj: Any, path: str) -> Any:
    """Follow ``spec.tasks[0].template.spec.requests()`` or ``status.allocatable['pods']``."""
    pos = 0
    while pos < len(path):
        match = _STEP.match(path, pos)
        assert match, f"bad path {path!r} at {pos}"
        if match["attr"]:
            obj = getattr(obj, match["attr"])
            if match["call"]:
                obj = obj()
        elif match["index"]:
            obj = obj[int(match["index"])]
        else:
            obj = obj[match["key"]]
        pos = match.end()
    return obj
