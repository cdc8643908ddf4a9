"""The simulated cluster feeds its scheduler each watch event as ``parse_event`` reads the line
it wrote (``parse_watch``, without decoding the line again): for every kind it writes, on the
Volcano side (with preemption's evictions) and the Kueue side (with PodsReady timeouts)."""

from __future__ import annotations

import io

import pytest

from domain.events import Inbound, ScheduleMarker, parse_event
from domain.scheduler.config import SchedulerConfig, from_mapping
from services.simulate import cluster
from services.simulate.loop import run_closed_loop
from services.traces.model import Trace
from tests.sim_traces import KUEUE, PODS_READY, PODS_READY_CONFIG, PREEMPTION, PREEMPTION_CONFIG, SMALL


@pytest.mark.parametrize(
    ("trace", "config"),
    [
        (SMALL, {}),
        (PREEMPTION, PREEMPTION_CONFIG),
        (KUEUE, {}),
        (PODS_READY, PODS_READY_CONFIG),
    ],
    ids=["small", "preemption", "kueue", "pods-ready"],
)
def test_the_scheduler_gets_what_the_lines_say(
    trace: Trace, config: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    fed: list[Inbound] = []
    parse_watch = cluster.parse_watch

    def spy(cluster_name: str, event_type: str, obj: dict[str, object]) -> Inbound:
        event = parse_watch(cluster_name, event_type, obj)
        fed.append(event)
        return event

    monkeypatch.setattr(cluster, "parse_watch", spy)
    events = io.BytesIO()
    scheduler_config = from_mapping(config) if config else SchedulerConfig()
    run_closed_loop(trace, trace.nodes, scheduler_config, events, io.BytesIO())
    read = [parse_event(line) for line in events.getvalue().splitlines()]
    assert fed == [event for event in read if not isinstance(event, ScheduleMarker)]
    assert len({type(event.obj).__name__ for event in fed if hasattr(event, "obj")}) >= 3
