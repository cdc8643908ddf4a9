"""domain.decisions and ClusterState.record: decisions are typed values, the object the cycle
records is the one it emits, the published JSON Schema is current, and every decision line the
scenarios produce is valid against the types the schema is made from."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from domain.decisions import AnyDecision, Bind, ObjectRef, Reject
from domain.engine import Engine
from domain.events import InvalidEvent, parse_event
from domain.objects.meta import ObjectKey
from domain.state import ClusterState
from services import decision_schema
from tests import builders as b
from tests.scenarios.test_scenarios import discover, load


def test_the_published_schema_is_current() -> None:
    assert decision_schema.PATH.read_text() == decision_schema.text(), "run: python -m services.decision_schema"


@pytest.mark.parametrize("path", discover(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_decision_of_the_scenarios_is_valid_against_the_types(path: Path) -> None:
    scenario = load(path)
    engine = Engine(scenario.config, on_markers=lambda _: True)
    for line in scenario.events.read_text().splitlines():
        try:
            event = parse_event(line)
        except InvalidEvent:
            continue
        for decision in engine.handle(event).decisions:
            wire = msgspec.json.decode(msgspec.json.encode(decision.to_dict()))
            back = msgspec.convert(wire, AnyDecision)
            assert type(back) is type(decision)
            assert (back.id, back.seq, back.target, back.reason) == (decision.id, decision.seq, decision.target,
                                                                     decision.reason)  # fmt: skip


def _state_with_pod() -> tuple[ClusterState, ObjectRef]:
    state = ClusterState("c1")
    state.apply(parse_event(b.added(b.pod("p"))), seq=0)
    return state, ObjectRef.of(state.pods()[ObjectKey("ns/p")])


def test_a_recorded_bind_is_the_emitted_one_and_a_second_is_refused() -> None:
    state, ref = _state_with_pod()
    first = Bind.make("c1", 1, ref, "Scheduled", node="n-0")
    assert state.record(first)
    assert state.machines["Pod"][ObjectKey("ns/p")].node == "n-0"
    # Bound already: a second bind is an illegal transition, recorded nowhere (and not emitted).
    assert not state.record(Bind.make("c1", 2, ref, "Scheduled", node="n-1"))
    assert state.machines["Pod"][ObjectKey("ns/p")].node == "n-0"
    assert state.counters["illegal_transition:Pod"] == 1


def test_a_reject_in_force_is_not_recorded_twice() -> None:
    state, ref = _state_with_pod()
    reject = Reject.make("c1", 1, ref, "QueueNotLeaf", message="queue q has child queues")
    assert state.record(reject)
    assert not state.record(Reject.make("c1", 2, ref, "QueueNotLeaf", message="queue q has child queues"))


def test_a_decision_for_an_object_the_state_does_not_hold_is_not_recorded() -> None:
    state = ClusterState("c1")
    assert not state.record(Bind.make("c1", 0, ObjectRef("v1", "Pod", "ns", "gone", "u"), "Scheduled", node="n"))
