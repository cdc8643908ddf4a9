"""The events consumer's view of one Kafka message (its position and what its headers say), and
what it keeps across a revocation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiokafka import ConsumerRecord, TopicPartition

from services.config import Settings
from services.pipeline import CLOCK_HEADER, ORIGIN_HEADER, Record
from services.stream.consume import EventsConsumer, record


def _message(headers: tuple[tuple[str, bytes], ...], value: bytes | None = b"{}") -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(
        topic="cluster-events",
        partition=2,
        offset=41,
        timestamp=0,
        timestamp_type=0,
        key=b"c1",
        value=value,
        checksum=None,
        serialized_key_size=2,
        serialized_value_size=2,
        headers=headers,
    )


def test_a_message_becomes_a_record_at_its_topic_partition_and_offset() -> None:
    got = record(_message(()))
    assert (got.value, got.position, got.topic, got.partition, got.offset) == (
        b"{}",
        "cluster-events[2]@41",
        "cluster-events",
        2,
        41,
    )
    assert not got.external_clock and not got.timer_marker


def test_the_headers_name_a_stream_clock_and_the_worker_s_own_markers() -> None:
    assert record(_message(((CLOCK_HEADER, b"stream"),))).external_clock
    assert not record(_message(((CLOCK_HEADER, b"timer"),))).external_clock
    assert record(_message(((ORIGIN_HEADER, b"timer"), (CLOCK_HEADER, b"stream")))).timer_marker


def test_a_tombstone_keeps_its_missing_value() -> None:
    assert record(_message((), value=None)).value is None


class _Handler:
    revoked = 0

    async def on_assigned(self, partitions: set[int], committed: Mapping[int, int | None]) -> dict[int, int]:
        return {}

    def on_revoked(self) -> None:
        self.revoked += 1

    async def handle(self, records: Sequence[Record], budget: float, lag: Callable[[Record], int | None]) -> int:
        return len(records)


def test_a_revocation_drops_what_was_fetched_past_the_last_batch() -> None:
    """Those messages are read again from the committed offset by whoever owns the partition
    next (this worker too, after a seek to what the store holds): never handled from before."""
    handler = _Handler()
    consumer = EventsConsumer(Settings(), handler)
    consumer.owned, consumer.pending = {2}, [_message(())]
    asyncio.run(consumer.on_partitions_revoked([TopicPartition("cluster-events", 2)]))
    assert (handler.revoked, consumer.owned, consumer.pending) == (1, set(), [])


class _RevokedWhileWaiting:
    """A consumer whose wait for messages sees the partitions revoked (and given back)."""

    def __init__(self, listener: EventsConsumer, fetched: list[ConsumerRecord[bytes, bytes]]) -> None:
        self.listener, self.fetched = listener, fetched

    async def getmany(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Any]]:
        await self.listener.on_partitions_revoked([TopicPartition("cluster-events", 2)])
        return {TopicPartition("cluster-events", 2): self.fetched}


def test_what_was_fetched_before_a_revocation_is_dropped_from_the_batch_being_filled() -> None:
    consumer = EventsConsumer(Settings(), _Handler())
    carried, fresh = _message(()), _message((), b'{"fresh": true}')
    consumer.pending = [carried]
    consumer._consumer = _RevokedWhileWaiting(consumer, [fresh])  # type: ignore[assignment]
    assert asyncio.run(consumer._fetch()) == [fresh]
