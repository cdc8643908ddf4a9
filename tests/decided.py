"""Decisions compared across runs whose streams differ (more or fewer markers or echoes): each
without its seq and id, at the time of the SCHEDULE marker that made it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def at_marker_times(events: Iterable[str], decisions: Iterable[str]) -> list[tuple[Any, dict[str, Any]]]:
    """``decisions`` (JSON lines) without seq and id, each with the time of its marker in ``events``."""
    times = {}
    for seq, line in enumerate(events):
        event = json.loads(line)
        if event["type"] == "SCHEDULE":
            times[seq] = event["time"]
    decided = []
    for line in decisions:
        decision = json.loads(line)
        del decision["id"]
        decided.append((times[decision.pop("seq")], decision))
    return decided
