"""volcano_cycle.dry_run (what ``explain`` reads the held room from): at every cut of a stream
where a gang holds room, it records nothing in the state, the stream's later decisions are those
of an engine that never ran it, and it sees the room held and whose."""

from __future__ import annotations

import math
from pathlib import Path

from domain import saved_state
from domain.engine import Engine
from domain.events import parse_event
from domain.objects.meta import ObjectKey
from domain.scheduler import volcano_cycle
from tests.scenarios.test_scenarios import load

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
HELD = SCENARIOS / "backfill" / "005-held-room-keeps-a-later-job-off-the-free-node"
CONFIG = load(HELD).config
LINES = (HELD / "events.jsonl").read_text().splitlines()
B, C = ObjectKey("default/b"), ObjectKey("default/c")


def _decide(lines: list[str], dry_at: int | None = None) -> list[object]:
    engine, out = Engine(CONFIG, on_markers=lambda _: True), []
    for index, line in enumerate(lines):
        if index == dry_at:
            state = engine.state("default")
            before = saved_state.take_cluster(state)
            volcano_cycle.dry_run(state, CONFIG, frozenset([B, C]))
            assert saved_state.take_cluster(state) == before, index
        out.extend(engine.handle(parse_event(line)).decisions)
    return out


def test_a_dry_run_changes_nothing() -> None:
    want = _decide(LINES)
    for cut in range(1, len(LINES)):
        assert _decide(LINES, dry_at=cut) == want, cut


def test_a_dry_run_sees_the_room_held_and_from_whom() -> None:
    engine = Engine(CONFIG, on_markers=lambda _: True)
    for line in LINES[:20]:
        engine.handle(parse_event(line))
    seen = volcano_cycle.dry_run(engine.state("default"), CONFIG, frozenset([C]))
    (room,) = seen.holding
    assert (room.gang, room.shadow) == (B, math.inf)  # a-0 has no runtime: n0 frees up "never"
    assert dict(room.nodes)["n1"]["cpu"] == 4000
    assert seen.held_from == {C: [room]}
    assert seen.room[C]["n1"]["cpu"] == 0  # c saw n1 full: b held it
    assert B not in seen.room  # only the watched jobs' room is kept
