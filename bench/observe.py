"""`python -m bench.observe`: what a Prometheus scrape and a status page request cost the worker,
against the baseline of one scheduling cycle on the same state (both run on the worker's event
loop, so a scrape delays the stream by that long).

The state is bench/run.py's synthetic stream folded by the Engine; the cycle is one SCHEDULE
marker more. Best of five runs each.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from prometheus_client import generate_latest

from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig
from services.observe.observer import Observer
from services.observe.page import render
from tests.streams import Shape, synthetic_stream

SHAPE = Shape(nodes=200, gangs=600)
REPEAT = 5


def best(run: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    engine = Engine(SchedulerConfig(), on_markers=lambda _: True)
    for line in synthetic_stream("c1", SHAPE):
        engine.handle(parse_event(line.encode()))
    state = engine.clusters["c1"]
    observer = Observer(engine.clusters.values)
    marker = json.dumps({"type": "SCHEDULE", "cluster": "c1", "time": "2030-01-01T00:00:00Z"}).encode()
    cycle = best(lambda: engine.handle(parse_event(marker)))
    scrape = best(lambda: generate_latest(observer.metrics.registry))
    page = best(lambda: render(observer))
    pods, groups = len(state.pods()), len(state.of_kind("PodGroup"))
    print(f"state: {SHAPE.nodes} nodes, {pods} pods, {groups} PodGroups, {state.next_seq} events")
    print(f"baseline, one scheduling cycle: {cycle * 1000:8.1f} ms")
    print(f"/metrics scrape:                {scrape * 1000:8.1f} ms  ({scrape / cycle:.2f} x a cycle)")
    print(f"status page:                    {page * 1000:8.1f} ms  ({page / cycle:.2f} x a cycle)")


if __name__ == "__main__":
    main()
