"""Reading event files into Records (``-`` is standard input), and finding which clusters'
streams carry their own SCHEDULE markers."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from domain.events import InvalidEvent, ScheduleMarker, parse_event
from services.pipeline import Record


def read_records(paths: Iterable[str]) -> list[Record]:
    records = []
    for path in paths:
        if path == "-":
            records.extend(_lines("-", sys.stdin.buffer))
        else:
            with open(path, "rb") as handle:
                records.extend(_lines(path, handle))
    return records


def _lines(name: str, handle: BinaryIO) -> Iterator[Record]:
    for number, line in enumerate(handle, start=1):
        if line.strip():
            yield Record(value=line, position=f"{name}:{number}")


def marker_clusters(records: Iterable[Record]) -> set[str]:
    """Clusters whose stream holds at least one valid SCHEDULE marker."""
    found = set()
    for record in records:
        if record.value and b"SCHEDULE" in record.value:
            try:
                event = parse_event(record.value)
            except InvalidEvent:
                continue
            if isinstance(event, ScheduleMarker):
                found.add(event.cluster)
    return found
