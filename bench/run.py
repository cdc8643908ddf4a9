"""`make bench`: events per second through each stage of the pipeline, on one core.

The same synthetic stream (tests/streams.py) goes through: json.loads alone (the baseline every
stage is compared with), parse_event (envelope + typed object), parse + Engine (state and
scheduling cycles), and the whole Pipeline into an on-disk SQLite store
(one transaction per 1,000 events), plus PostgreSQL when $SCHEDSTREAM_BENCH_PG_URL is set.
Then the scheduling-cycle benchmark of issue 4 (bench/cycle.py) at 500, 5,000 and 10,000 nodes,
and the simulator's simulated hours per wall second (bench/simulate.py).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import delete

from bench import cycle, simulate
from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig
from services.pipeline import CLOCK_STREAM, Pipeline, Record
from services.store import tables
from services.store.store import Store
from tests.streams import Shape, synthetic_stream

SHAPE = Shape(nodes=200, gangs=3000)


def timed(run: Callable[[], object], setup: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        setup()
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def empty_store(url: str) -> Callable[[], object]:
    def setup() -> None:
        store = Store(url)
        store.upgrade()
        with store.engine.begin() as conn:
            for table in tables.metadata.sorted_tables:
                conn.execute(delete(table))
        store.close()

    return setup


def through_pipeline(lines: list[bytes], url: str) -> Callable[[], object]:
    def run() -> None:
        store = Store(url)
        pipeline = Pipeline(SchedulerConfig(), store, clocks={"c1": CLOCK_STREAM})
        records = [Record(value=line, position=str(i)) for i, line in enumerate(lines)]
        for start in range(0, len(records), 1000):
            pipeline.process(records[start : start + 1000])
        store.close()

    return run


def main() -> None:
    lines = [line.encode() for line in synthetic_stream(shape=SHAPE)]
    print(f"stream: {len(lines)} events ({SHAPE.nodes} nodes, {SHAPE.gangs} gangs), best of 3 runs\n")

    def engine_run() -> None:
        engine = Engine(SchedulerConfig(), on_markers=lambda _: True)
        for line in lines:
            engine.handle(parse_event(line))

    def no_setup() -> None:
        return None

    with tempfile.TemporaryDirectory() as tmp:
        urls = {"Pipeline, SQLite file": f"sqlite:///{Path(tmp) / 'bench.db'}"}
        if os.environ.get("SCHEDSTREAM_BENCH_PG_URL"):
            urls["Pipeline, PostgreSQL"] = os.environ["SCHEDSTREAM_BENCH_PG_URL"]
        stages: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            ("json.loads (baseline)", lambda: [json.loads(line) for line in lines], no_setup),
            ("parse_event", lambda: [parse_event(line) for line in lines], no_setup),
            ("parse + Engine", engine_run, no_setup),
            *((name, through_pipeline(lines, url), empty_store(url)) for name, url in urls.items()),
        ]
        baseline = None
        print(f"{'stage':<30} {'events/s':>12} {'us/event':>10} {'x baseline':>11}")
        for name, run, setup in stages:
            seconds = timed(run, setup=setup)
            baseline = baseline or seconds
            rate, micros = len(lines) / seconds, seconds / len(lines) * 1e6
            print(f"{name:<30} {rate:>12,.0f} {micros:>10.1f} {seconds / baseline:>11.1f}")
    print("\none scheduling cycle (issue 4): 4 pending pods per node, gangs of 1-21, 20% single-IB-cluster\n")
    cycle.main()
    print("\nthe simulator (issue 6): simulated hours per wall second, against the FCFS baseline's run\n")
    simulate.report()


if __name__ == "__main__":
    main()
