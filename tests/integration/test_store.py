"""The store and the pipeline on both databases: the migration from empty, one transaction per
batch, idempotent redelivery, and restart from the stored events."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from sqlalchemy import inspect, select
from sqlalchemy.exc import IntegrityError

from domain.scheduler.config import SchedulerConfig
from services.pipeline import CLOCK_STREAM, Pipeline, Record
from services.record_files import read_records
from services.replay import replay
from services.store import tables
from services.store.batch import Batch
from services.store.store import Store
from tests.streams import Shape, synthetic_stream

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "volcano-gang.jsonl"
TABLES = {"events", "decisions", "object_status", "rejects", "outbox", "consumer_progress", "clusters", "snapshots"}


def kafka_records(lines: list[str], partition: int = 0) -> list[Record]:
    """Lines as if consumed from one partition of the events topic."""
    return [
        Record(value=line.encode(), position=f"t[{partition}]@{offset}", topic="t", partition=partition, offset=offset)
        for offset, line in enumerate(lines)
    ]


def stream_and_its_replay(tmp_path: Path) -> tuple[list[Record], str]:
    """A synthetic stream as consumed records, and the decisions replay gives for it."""
    lines = synthetic_stream(shape=Shape(nodes=6, gangs=40))
    path = tmp_path / "stream.jsonl"
    path.write_text("\n".join(lines) + "\n")
    expected = io.BytesIO()
    replay([str(path)], expected, config=SchedulerConfig())
    return kafka_records(lines), expected.getvalue().decode()


@pytest.fixture
def store(db_url: str) -> Store:
    store = Store(db_url)
    store.upgrade()
    yield store
    store.close()


def test_the_migration_creates_every_table_from_empty_and_is_idempotent(db_url: str) -> None:
    store = Store(db_url)
    assert not TABLES & set(inspect(store.engine).get_table_names())
    store.upgrade()
    store.upgrade()
    assert set(inspect(store.engine).get_table_names()) >= TABLES
    store.close()


def test_a_batch_is_written_whole_or_not_at_all(store: Store) -> None:
    row = {"id": "d1", "cluster": "c1", "seq": 0, "ordinal": 0, "kind": "Bind", "target_kind": "Pod",
           "namespace": "ns", "name": "p", "uid": "u", "payload": "{}"}  # fmt: skip
    event = {"cluster": "c1", "seq": 0, "type": "ADDED", "payload": "{}", "api_version": "v1", "kind": "Pod",
             "namespace": "ns", "name": "p", "uid": "u", "topic": None, "partition": None, "offset": None}  # fmt: skip
    store.write_batch(Batch(decisions=[row]))
    with pytest.raises(IntegrityError):
        store.write_batch(Batch(events=[event], decisions=[row], progress={("g", "t", 0): 5}))
    assert store.count("events") == 0
    assert store.progress("g") == {}


def test_the_outbox_keeps_commit_order_and_forgets_what_was_published(store: Store) -> None:
    store.write_batch(Batch(outbox=[{"topic": "d", "key": "c1", "payload": str(i)} for i in range(5)]))
    rows = store.pending_outbox()
    assert [payload for *_, payload in rows] == ["0", "1", "2", "3", "4"]
    store.delete_outbox([rows[0][0], rows[1][0]])
    assert [payload for *_, payload in store.pending_outbox()] == ["2", "3", "4"]


def test_redelivered_messages_are_skipped_and_nothing_is_duplicated(store: Store) -> None:
    lines = EXAMPLE.read_text().splitlines()
    records = kafka_records(lines)
    first = Pipeline(SchedulerConfig(), store, consumer="g", clocks={"c1": CLOCK_STREAM}).process(records)
    again = Pipeline(SchedulerConfig(), store, consumer="g", clocks={"c1": CLOCK_STREAM}).process(records)
    assert again.skipped == len(lines)
    assert again.decisions == [] and again.rejects == []
    assert store.count("decisions") == len(first.decisions) == 14
    assert store.count("events") == len(lines) - 1
    assert store.rejects() == [("t[0]@17", first.rejects[0].reason)]
    assert store.progress("g") == {("t", 0): len(lines) - 1}


def test_a_batch_budget_ends_batches_early_and_the_decisions_are_those_of_replay(store: Store, tmp_path: Path) -> None:
    records, expected = stream_and_its_replay(tmp_path)
    pipeline = Pipeline(SchedulerConfig(), store, consumer="g", clocks={"c1": CLOCK_STREAM})
    taken = []
    rest = records
    while rest:
        result = pipeline.process(rest, budget=1e-9)  # used up by the first record of each batch
        taken.append(result.taken)
        rest = rest[result.taken :]
    assert taken == [1] * len(records)
    assert store.progress("g") == {("t", 0): len(records) - 1}
    assert "\n".join(store.decisions()) + "\n" == expected


def test_a_restarted_pipeline_restores_its_state_and_continues_exactly(store: Store, tmp_path: Path) -> None:
    records, expected = stream_and_its_replay(tmp_path)

    half = len(records) // 2
    Pipeline(SchedulerConfig(), store, consumer="g", clocks={"c1": CLOCK_STREAM}).process(records[:half])
    restarted = Pipeline(SchedulerConfig(), store, consumer="g")
    assert restarted.restore() == half
    restarted.process(records)  # the first half is redelivered and skipped
    assert "\n".join(store.decisions()) + "\n" == expected


def test_replay_into_a_database_stores_the_same_decisions_it_prints(db_url: str) -> None:
    out = io.BytesIO()
    summary = replay([str(EXAMPLE)], out, config=SchedulerConfig(), db_url=db_url)
    store = Store(db_url)
    assert store.decisions() == out.getvalue().decode().splitlines()
    assert store.count("events") == summary.events == len(read_records([str(EXAMPLE)])) - 1
    assert [position for position, _ in store.rejects()] == [f"{EXAMPLE}:18"]
    store.close()


def test_hostile_lines_are_rejects_that_both_databases_can_store(store: Store) -> None:
    hostile = [
        b"\x00\x01 binary garbage",
        b'{"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x\xff"}}}',
        b'{"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a\\u0000b"}}}',
        None,  # a Kafka message without a value
    ]
    records = [Record(value=v, position=f"t[0]@{i}", topic="t", partition=0, offset=i) for i, v in enumerate(hostile)]
    result = Pipeline(SchedulerConfig(), store, consumer="g").process(records)
    assert result.events == 0
    assert [position for position, _ in store.rejects()] == ["t[0]@0", "t[0]@1", "t[0]@2", "t[0]@3"]
    assert store.progress("g") == {("t", 0): 3}


def test_a_restart_from_a_snapshot_folds_only_the_tail_and_continues_exactly(store: Store, tmp_path: Path) -> None:
    records, expected = stream_and_its_replay(tmp_path)

    half = len(records) // 2
    first = Pipeline(SchedulerConfig(), store, consumer="g", clocks={"c1": CLOCK_STREAM}, snapshot_every=50)
    for start in range(0, half, 40):  # batches of 40, as a worker would commit them
        first.process(records[start : min(start + 40, half)])
    (_, snapshot_seq, _) = store.snapshots()["c1"]
    assert half - 50 < snapshot_seq <= half

    restarted = Pipeline(SchedulerConfig(), store, consumer="g", snapshot_every=50)
    assert restarted.restore() == half - snapshot_seq
    restarted.process(records)
    assert "\n".join(store.decisions()) + "\n" == expected


def test_a_member_of_a_group_restores_only_its_partitions_and_a_cluster_that_moves_to_it_on_its_first_event(
    store: Store, tmp_path: Path
) -> None:
    lines = {cluster: synthetic_stream(cluster, Shape(nodes=4, gangs=15)) for cluster in ("east", "west")}
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(lines["east"] + lines["west"]) + "\n")
    expected = io.BytesIO()
    replay([str(path)], expected, config=SchedulerConfig())
    east, west = kafka_records(lines["east"], partition=2), kafka_records(lines["west"], partition=1)
    half = {"east": len(east) // 2, "west": len(west) // 2}
    clocks = {"east": CLOCK_STREAM, "west": CLOCK_STREAM}
    Pipeline(SchedulerConfig(), store, consumer="g", clocks=clocks).process(east[: half["east"]] + west[: half["west"]])

    member = Pipeline(SchedulerConfig(), store, consumer="g")
    assert member.restore(partitions={2}) == half["east"]
    assert set(member.engine.clusters) == {"east"}
    # west's producer now partitions by another rule: its next lines arrive on partition 2.
    moved = [Record(r.value, r.position, topic="t", partition=2, offset=len(east) + i) for i, r in enumerate(west)]
    member.process(east + moved[half["west"] :])
    replayed = expected.getvalue().decode().splitlines()
    for cluster in ("east", "west"):
        assert store.decisions(cluster) == [d for d in replayed if json.loads(d)["cluster"] == cluster], cluster


def test_a_member_given_the_same_partitions_again_keeps_its_state_unless_another_member_wrote_meanwhile(
    store: Store, tmp_path: Path
) -> None:
    """A member thrown out of its group at the end of a long restore gets the same partitions
    back: it keeps what it holds (no restore, which would take as long again), and it goes on
    exactly; once another member has written to those partitions, or for other partitions, it
    restores."""
    records, expected = stream_and_its_replay(tmp_path)
    third = len(records) // 3
    member = Pipeline(SchedulerConfig(), store, consumer="g", clocks={"c1": CLOCK_STREAM})
    assert member.restore_unless_held({0}) == 0  # a first assignment always restores
    member.process(records[:third])
    held = member.engine
    assert member.restore_unless_held({0}) is None
    assert member.engine is held
    member.process(records[third : 2 * third])  # on the state it kept
    assert member.restore_unless_held({0, 1}) == 2 * third  # other partitions: restored
    other = Pipeline(SchedulerConfig(), store, consumer="g")
    other.restore({0})
    other.process(records[2 * third : 2 * third + 5])  # the partition moved, and came back
    assert member.restore_unless_held({0, 1}) == 2 * third + 5
    member.process(records)
    assert "\n".join(store.decisions()) + "\n" == expected


def test_a_rolled_back_batch_takes_its_staging_table_with_it_and_the_next_batch_still_upserts(store: Store) -> None:
    """Many statuses go through a staging table, made once per database session; a batch that
    fails after making it rolls it back, and the next batch makes it again."""

    def statuses(seq: int) -> dict[tuple[str, str, str, str], dict[str, object]]:
        rows = [{"cluster": "c1", "kind": "Pod", "namespace": "ns", "name": f"p{i}", "uid": f"u{i}",
                 "decision_id": f"d{seq}-{i}", "seq": seq, "payload": "{}"} for i in range(100)]  # fmt: skip
        return {(r["cluster"], r["kind"], r["namespace"], r["name"]): r for r in rows}  # type: ignore[misc]

    with pytest.raises(IntegrityError):  # fails after the statuses: a progress offset may not be null
        store.write_batch(Batch(statuses=statuses(1), progress={("g", "t", 0): None}))  # type: ignore[dict-item]
    assert store.count("object_status") == 0
    store.write_batch(Batch(statuses=statuses(2)))
    store.write_batch(Batch(statuses=statuses(3)))
    assert store.count("object_status") == 100


def test_appended_rows_are_read_by_the_first_row_s_columns_and_a_row_of_another_shape_by_name(store: Store) -> None:
    """An append (COPY on PostgreSQL, the driver's executemany on SQLite) reads each row with one
    getter made from the first row's columns; a later row with other columns keeps its own
    values, and a default fills only what a row lacks."""
    base = {"cluster": "c1", "type": "ADDED", "payload": "{}"}
    rows = [
        {**base, "seq": 1},  # kind and name from their defaults
        {**base, "seq": 2, "kind": "Pod", "name": "p2"},  # columns the first row lacks
        {**base, "seq": 3, "kind": "Node", "name": "n3", "uid": "u3"},
        {**base, "seq": 4},
    ]
    store.write_batch(Batch(events=rows))
    with store.engine.connect() as conn:
        got = conn.execute(select(tables.events.c.seq, tables.events.c.kind, tables.events.c.name,
                                  tables.events.c.uid).order_by(tables.events.c.seq)).all()  # fmt: skip
    assert [tuple(r) for r in got] == [(1, "", "", ""), (2, "Pod", "p2", ""), (3, "Node", "n3", "u3"), (4, "", "", "")]
