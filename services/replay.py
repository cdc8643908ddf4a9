"""Replay: run the service's pipeline over event files (CONTRACT section 3).

The files are read in order (``-`` is standard input), every line becomes a Record with its
``file:line`` position, and the same Pipeline the worker uses folds them into an embedded
store (in-memory SQLite unless ``--db`` names one). A cluster whose lines hold at least one
SCHEDULE marker cycles only at markers; any other cluster cycles after every event.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import BinaryIO

from domain.scheduler.config import SchedulerConfig
from services.pipeline import CLOCK_NONE, CLOCK_STREAM, Pipeline, Record, Reject, encode_decision
from services.progress import Report, silent
from services.record_files import marker_clusters, read_records
from services.store.store import Store

CHUNK = 1000


@dataclass
class ReplaySummary:
    events: int = 0
    rejects: list[Reject] = field(default_factory=list)
    decisions: Counter[str] = field(default_factory=Counter)


class StoreNotEmpty(ValueError):
    """Replay folds a whole history from its start: it needs an empty store."""


def replay(
    paths: list[str],
    out: BinaryIO,
    *,
    config: SchedulerConfig,
    rejects_out: BinaryIO | None = None,
    db_url: str = "sqlite://",
) -> ReplaySummary:
    return replay_records(read_records(paths), out, config=config, rejects_out=rejects_out, db_url=db_url)


def replay_records(
    records: list[Record],
    out: BinaryIO,
    *,
    config: SchedulerConfig,
    rejects_out: BinaryIO | None = None,
    db_url: str = "sqlite://",
    progress: Report = silent,
) -> ReplaySummary:
    """Fold ``records`` through a Pipeline on a new store; ``progress`` hears the records done."""
    store = Store(db_url)
    try:
        store.upgrade()
        if store.count("events") or store.count("rejects"):
            raise StoreNotEmpty(
                f"the store at {db_url.rsplit('@', maxsplit=1)[-1]} already holds events; replay needs an empty one"
            )
        clocks = dict.fromkeys(marker_clusters(records), CLOCK_STREAM)
        pipeline = Pipeline(config, store, default_clock=CLOCK_NONE, clocks=clocks)
        summary = ReplaySummary()
        for start in range(0, len(records), CHUNK):
            result = pipeline.process(records[start : start + CHUNK])
            summary.events += result.events
            for decision in result.decisions:
                out.write(encode_decision(decision) + b"\n")
                summary.decisions[decision.kind.value] += 1
            for reject in result.rejects:
                summary.rejects.append(reject)
                if rejects_out is not None:
                    rejects_out.write(reject.to_json() + b"\n")
            progress(min(start + CHUNK, len(records)), "")
        return summary
    finally:
        store.close()
