"""Poison lines (issue 17 item 1, 2, 6): whatever one line makes the parser, the fold or the cycle
raise, that line is a reject with its reason and everything around it is processed as if it
were not there; a reject's DLQ record stays small whatever the line's size. No server needed."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain import engine as engine_module
from domain.cache import ClusterCache
from domain.events import InvalidEvent, WatchEvent, parse_event, peek_cluster
from domain.scheduler.config import SchedulerConfig
from domain.state import ClusterState
from services.pipeline import CLOCK_STREAM, REJECT_VALUE_LIMIT, Pipeline, Record, Reject, normalise
from services.replay import replay_records
from services.store.store import Store
from tests.streams import Shape, synthetic_stream

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _pod(requests: Any, name: str = "poison") -> bytes:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": "Pending"},
    }
    return json.dumps({"type": "ADDED", "cluster": "c1", "object": obj}).encode()


def _nested(depth: int) -> bytes:
    return b'{"type": "ADDED", "cluster": "c1", "object": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"


# The corpus of the fault-injection run of issue 17, and more: each line must be a reject.
NASTY: list[tuple[str, bytes]] = [
    ("huge exponent in a quantity", _pod({"cpu": "1E1000000000"})),
    ("exponent past Decimal's range", _pod({"memory": "1e999999"})),
    ("1e999 as a JSON number", _pod({"cpu": "X"}).replace(b'"X"', b"1e999")),
    ("a 5,000-digit integer", _pod({"cpu": "X"}).replace(b'"X"', b"9" * 5000)),
    ("a quantity of 2 MB of digits", _pod({"cpu": "9" * 2_000_000})),
    ("JSON nested 1,000 deep", _nested(1000)),
    ("JSON nested 100,000 deep", _nested(100_000)),
    ("lists 1,000 deep", _pod({}).replace(b'"namespace"', b'"x": ' + b"[" * 999 + b"]" * 999 + b', "namespace"')),
    ("a NUL byte", b'{"type": "ADDED"\x00, "cluster": "c1"}'),
    ("a NUL in a name", _pod({}, name="a\u0000b")),
    ("invalid UTF-8", b"\xff\xfe\xfd" * 10),
    ("400 KB of 0xFF", b"\xff" * 400_000),
    ("a 2 MB string in a name", _pod({}, name="n" * 2_000_000)),
    ("a truncated line", _pod({"cpu": "1"})[:60]),
    ("an empty object", b"{}"),
    ("a JSON array", b"[1, 2, 3]"),
    ("a negative quantity", _pod({"cpu": "-1"})),
]  # fmt: skip


def _records(lines: list[bytes], name: str = "in") -> list[Record]:
    return [Record(value=line + b"\n", position=f"{name}:{n}") for n, line in enumerate(lines, start=1)]


def _replay(records: list[Record]) -> tuple[bytes, list[Reject]]:
    out = io.BytesIO()
    summary = replay_records(records, out, config=SchedulerConfig())
    return out.getvalue(), summary.rejects


@pytest.fixture(scope="module")
def good() -> list[bytes]:
    return [line.encode() for line in synthetic_stream(shape=Shape(nodes=4, gangs=12))]


def test_every_nasty_line_is_a_reject_and_the_good_lines_give_the_decisions_of_a_clean_run(good: list[bytes]) -> None:
    clean, none = _replay(_records(good))
    assert clean and none == []
    mixed: list[bytes] = []
    for n, line in enumerate(good):
        mixed.append(line)
        if n % 7 == 3 and len(mixed) // 8 < len(NASTY):
            mixed.append(NASTY[len(mixed) // 8][1])
    mixed.extend(line for _, line in NASTY)
    decisions, rejects = _replay(_records(mixed))
    assert decisions == clean
    nasty = {line for _, line in NASTY}
    assert [r.position for r in rejects] == [f"in:{n}" for n, line in enumerate(mixed, start=1) if line in nasty]
    for reject in rejects:
        assert reject.reason, reject
        assert len(reject.to_json()) < 8 * REJECT_VALUE_LIMIT  # under any broker's limit


@pytest.mark.parametrize(("name", "line"), NASTY, ids=[name for name, _ in NASTY])
def test_a_nasty_line_is_refused_by_the_parser_with_a_reason(name: str, line: bytes) -> None:
    with pytest.raises(InvalidEvent) as caught:
        parse_event(normalise(line))
    assert str(caught.value)


def test_a_huge_reject_carries_a_capped_value_with_its_size_and_hash() -> None:
    line = b"\xff" * 400_000
    reject = Reject.of("t[0]@1", "not JSON", line)
    record = msgspec.json.decode(reject.to_json())
    assert len(record["value"]) == REJECT_VALUE_LIMIT and record["truncated"] is True
    assert record["size"] == 400_000 and len(record["sha256"]) == 64
    assert len(reject.value) == 400_000  # the store keeps the whole line
    small = msgspec.json.decode(Reject.of("t[0]@2", "not JSON", b"{").to_json())
    assert small == {"position": "t[0]@2", "reason": "not JSON", "value": "{"}


def test_one_truncated_line_gets_one_reason_from_the_worker_and_from_replay() -> None:
    truncated = _pod({"cpu": "1"})[:60]
    as_in_a_file = Record(value=truncated + b"\n", position="f:1")
    as_a_message = Record(value=truncated, position="t[0]@0", topic="t", partition=0, offset=0)
    as_with_crlf = Record(value=truncated + b"\r\n", position="f:1")
    reasons = set()
    for record in (as_in_a_file, as_a_message, as_with_crlf):
        store = Store("sqlite://")
        store.upgrade()
        reasons.add(Pipeline(SchedulerConfig(), store).process([record]).rejects[0].reason)
        store.close()
    assert len(reasons) == 1, reasons


def _half_folding_apply(original: Any) -> Any:
    def apply(self: ClusterState, event: Any, *, seq: int, history_label: str = "") -> None:
        original(self, event, seq=seq, history_label=history_label)  # the state takes the event in...
        if isinstance(event, WatchEvent) and event.obj.metadata.name == "poison":
            raise KeyError("a bug met half-way through the fold")  # ...and then the fold raises

    return apply


def test_a_fold_that_raises_half_way_rejects_the_line_and_leaves_no_trace_in_the_state(
    good: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    clean, _ = _replay(_records(good))
    monkeypatch.setattr(ClusterState, "apply", _half_folding_apply(ClusterState.apply))
    poisoned = [*good[:40], _pod({"cpu": "1"}), *good[40:]]
    decisions, rejects = _replay(_records(poisoned))
    assert decisions == clean
    assert [(r.position, r.reason) for r in rejects] == [
        ("in:41", "cannot fold: KeyError: 'a bug met half-way through the fold'")
    ]


def test_a_cycle_that_raises_is_skipped_with_a_reject_and_the_stream_goes_on(
    good: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_cycle = engine_module.run_cycle

    def cycle(state: ClusterState, cache: ClusterCache, config: SchedulerConfig, *, seq: int) -> list[Any]:
        if seq == 50:
            raise ZeroDivisionError("an object the cycle cannot handle")
        return real_cycle(state, cache, config, seq=seq)

    monkeypatch.setattr(engine_module, "run_cycle", cycle)
    records = _records(good)
    decisions, rejects = _replay(records)
    assert [r.reason for r in rejects] == [
        "scheduling cycle at seq 50 failed and was skipped: ZeroDivisionError: an object the cycle cannot handle"
    ]
    assert len(decisions.splitlines()) > 10
    # The worker, in batches and after a restart, gives the same: the failure is deterministic.
    store = Store("sqlite://")
    store.upgrade()
    kafka = [
        Record(value=r.value, position=f"t[0]@{n}", topic="t", partition=0, offset=n, external_clock=True)
        for n, r in enumerate(records)
    ]
    pipeline = Pipeline(SchedulerConfig(), store, clocks={"c1": CLOCK_STREAM})
    got = []
    for start in range(0, len(kafka), 30):
        got.extend(pipeline.process(kafka[start : start + 30]).decisions)
        pipeline.restore([0])
    assert b"".join(msgspec.json.encode(d.to_dict()) + b"\n" for d in got) == decisions
    store.close()


# ---------------------------------------------------------------------- fuzzing every field


def _scenario_streams() -> dict[str, list[bytes]]:
    """One scenario stream per (apiVersion, kind) that the scenarios use: every kind is fuzzed."""
    streams: dict[str, list[bytes]] = {}
    for path in sorted(SCENARIOS.glob("*/*/events.jsonl")):
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        for line in lines:
            try:
                obj = json.loads(line).get("object") or {}
            except (ValueError, AttributeError):
                continue
            kind = f"{obj.get('apiVersion')}/{obj.get('kind')}" if isinstance(obj, dict) else ""
            if "/" in kind and kind not in streams and "None" not in kind:
                streams[kind] = lines
    return streams


STREAMS = _scenario_streams()
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["1E1000000000", "1e999", "-1", "", "\x00", "9" * 200, "NaN", "Inf", "1Ei", "0.5n", "ÿ", "*"]),
    st.text(max_size=12),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=2),
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for key in value:
            yield from _paths(value[key], (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_wrong_value_at_any_field_of_any_kind_is_a_reject_or_is_folded_and_scheduled(data: st.DataObject) -> None:
    """Through the pipeline: nothing escapes, every line is an event or a reject, and what the
    parser lets in but the fold cannot take (hypothesis found some: a Workload whose
    ``status.admission.podSetAssignments`` is not a list of objects) is a "cannot fold" reject."""
    kind = data.draw(st.sampled_from(sorted(STREAMS)), label="kind")
    lines = STREAMS[kind]
    targets = [n for n, line in enumerate(lines) if kind.encode().split(b"/")[-1] in line]
    index = data.draw(st.sampled_from(targets), label="line")
    envelope = json.loads(lines[index])
    path = data.draw(st.sampled_from(list(_paths(envelope))), label="path")
    junk = data.draw(JUNK, label="value")
    mutated = [*lines]
    mutated[index] = json.dumps(_replace(envelope, path, junk)).encode()
    out = io.BytesIO()
    summary = replay_records(_records(mutated), out, config=SchedulerConfig())  # must not raise
    rejected = {r.position for r in summary.rejects}
    assert summary.events + len(rejected - {r.position for r in summary.rejects if "cycle" in r.reason}) == len(mutated)
    for reject in summary.rejects:
        assert reject.position == f"in:{index + 1}" or "cycle" in reject.reason, reject


@pytest.mark.parametrize(("name", "line"), NASTY, ids=[name for name, _ in NASTY])
def test_produce_can_key_every_nasty_line(name: str, line: bytes) -> None:
    peeked = peek_cluster(normalise(line))
    assert peeked is None or peeked[0] == "c1"
