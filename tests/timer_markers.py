"""The worker's timer, played on a recorded stream: ``Engine.idle`` says when a SCHEDULE marker
would decide nothing, and the timer then writes none. To check that claim, a stream is handled
with two markers more after each of its markers, bookmarks and lines of kinds we skip, where a
timer could have written them (a third and two thirds of the way from the cluster's last marker
to its next; one second and ten days after its last), and each added marker the engine calls
idle is handled anyway: it must decide nothing. Then the stream is played as the timer plays
it, the idle markers skipped: everything else must decide what it decided."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from domain.decisions import Decision
from domain.engine import Engine
from domain.events import Inbound, ScheduleMarker, WatchEvent, parse_event
from domain.scheduler.config import SchedulerConfig

AFTER_THE_LAST = (timedelta(seconds=1), timedelta(days=10))


def check_idle_markers(lines: Iterable[bytes | str], config: SchedulerConfig) -> tuple[int, int]:
    """Handles ``lines`` with the added markers, asserting that no idle one decides anything,
    then again skipping the idle ones, as the timer does, asserting that every other event
    decides what it decided the first time (ids and seqs aside: the skipped markers took seqs).
    Gives how many added markers were idle, and how many were added. A line that does not
    parse, or whose fold raises, is left out, as the pipeline leaves it out."""
    stream: list[Inbound] = []
    for line in lines:
        try:
            stream.append(parse_event(line))
        except Exception:  # a line meant to be rejected
            continue
    played = _with_added(stream)
    every, idle = _play(config, stream, played, skip=False)
    skipping, skipped = _play(config, stream, played, skip=True)
    assert skipping == every
    assert skipped == idle
    return len(idle), sum(extra for _, extra in played)


def _play(
    config: SchedulerConfig, stream: list[Inbound], played: list[tuple[Inbound, bool]], *, skip: bool
) -> tuple[list[tuple[int, list[dict[str, Any]]]], list[int]]:
    """What each event of ``played`` decided (those that decided something), and which added
    markers were idle; with ``skip`` the idle ones are not handled."""
    engine, accepted = _engine(config, stream), []
    decided: list[tuple[int, list[dict[str, Any]]]] = []
    idle: list[int] = []
    for i, (event, extra) in enumerate(played):
        quiet = extra and engine.idle(event.cluster, event.time)  # type: ignore[union-attr]
        if quiet:
            idle.append(i)
            if skip:
                continue
        try:
            decisions = engine.handle(event).decisions
        except Exception:  # the fold refused it: the cluster is rebuilt without it
            engine = _engine(config, stream)
            for kept in accepted:
                engine.handle(kept)
            continue
        accepted.append(event)
        assert not (quiet and decisions), (event, decisions)
        if decisions:
            decided.append((i, [_content(d) for d in decisions]))
    return decided, idle


def _content(decision: Decision) -> dict[str, Any]:
    return {key: value for key, value in decision.to_dict().items() if key not in ("id", "seq")}


def _engine(config: SchedulerConfig, stream: list[Inbound]) -> Engine:
    clocked = {event.cluster for event in stream if isinstance(event, ScheduleMarker)}
    return Engine(config, on_markers=lambda cluster: cluster in clocked)


def _with_added(stream: list[Inbound]) -> list[tuple[Inbound, bool]]:
    """The stream's events (False) with the added markers (True) in place."""
    before: dict[int, ScheduleMarker] = {}  # per event, its cluster's last marker up to it
    after: dict[int, ScheduleMarker] = {}  # and its cluster's next marker after it
    last: dict[str, ScheduleMarker] = {}
    for i, event in enumerate(stream):
        if isinstance(event, ScheduleMarker):
            last[event.cluster] = event
        if event.cluster in last:
            before[i] = last[event.cluster]
    following: dict[str, ScheduleMarker] = {}
    for i in reversed(range(len(stream))):
        event = stream[i]
        if event.cluster in following:
            after[i] = following[event.cluster]
        if isinstance(event, ScheduleMarker):
            following[event.cluster] = event
    out: list[tuple[Inbound, bool]] = []
    for i, event in enumerate(stream):
        out.append((event, False))
        start, then = before.get(i), after.get(i)
        if isinstance(event, WatchEvent) or start is None:
            continue
        if then is None:
            steps: tuple[timedelta, ...] = AFTER_THE_LAST
        elif then.time > start.time:
            gap = (then.time - start.time) / 3
            steps = (gap, 2 * gap)
        else:
            steps = ()
        out.extend((ScheduleMarker(event.cluster, start.time + step), True) for step in steps)
    return out
