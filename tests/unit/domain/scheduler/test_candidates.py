"""domain.scheduler.candidates: node rankings carried from one cycle to the next decide exactly
what rankings made afresh in every cycle decide."""

from __future__ import annotations

from domain.decisions import Decision
from domain.engine import Engine
from domain.events import parse_event
from domain.scheduler.config import SchedulerConfig
from tests.streams import Shape, synthetic_stream

SHAPE = Shape(nodes=12, gangs=60, marker_every=7)


def _run(lines: list[str], *, forget: bool) -> tuple[list[Decision], int]:
    """The decisions, and how many cycles reused the last cycle's candidates."""
    engine = Engine(SchedulerConfig(), on_markers=lambda _: True)
    out: list[Decision] = []
    carried = 0
    for line in lines:
        cache = engine.cache(engine.state("c1"))
        before = cache.volcano.rankings
        if forget:
            engine.caches.clear()
        out.extend(engine.handle(parse_event(line)).decisions)
        after = engine.cache(engine.state("c1")).volcano.rankings
        carried += before is not None and after is before
    return out, carried


def test_carried_rankings_decide_as_fresh_ones() -> None:
    lines = synthetic_stream("c1", SHAPE)
    carried, reused = _run(lines, forget=False)
    fresh, _ = _run(lines, forget=True)
    assert reused > 10  # the rankings really were carried over
    assert sum(d.kind == "Bind" for d in carried) > 50
    assert [d.to_dict() for d in carried] == [d.to_dict() for d in fresh]
