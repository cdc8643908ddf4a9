"""EventsConsumer: the worker's read side of ``cluster-events``, on aiokafka's consumer.

Faust's agent stream costs about 250 µs per message before our code sees it (its conductor,
a channel queue per topic, a task per get; ``bench/faust_passthrough.py`` measures it), more
than parsing, folding and storing the event. The batch is the unit here instead: one
``getmany`` gives up to ``SCHEDSTREAM_BATCH_SIZE`` messages, already fetched, and the worker
handles them in one store transaction. Faust still runs the app around it: the producer, the
timers, the web server and the shutdown on SIGTERM.

Offsets: the store is the authority (each batch commits its events' positions with them), so an
assignment resumes right after what the store holds, and the consumer group's offsets are
committed after the store's, at most once a second, on revocation and on stop, so that the group
never runs ahead of the store (``StreamService.on_assigned`` refuses a group that does).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.errors import KafkaError

from services import logging as log
from services.config import Settings
from services.pipeline import CLOCK_HEADER, CLOCK_STREAM, ORIGIN_HEADER, Record
from services.stream.topics import MESSAGE_LIMIT

logger = log.get("schedstream.worker")
COMMIT_EVERY = 1.0  # seconds between commits of the group's offsets (the store holds the truth)
IDLE_POLL_MS = 1000  # getmany returns as soon as a message is fetched; this only bounds the wait
CATCH_UP_BATCHES = 10  # more than this many full batches behind: no batch budget
RETRY_START = 2.0  # seconds between attempts to reach the broker at start-up


class Handler(Protocol):
    """What the consumer drives (``StreamService``)."""

    async def on_assigned(self, partitions: set[int], committed: Mapping[int, int | None]) -> dict[int, int]: ...

    def on_revoked(self) -> None: ...

    async def handle(self, records: Sequence[Record], budget: float, lag: Callable[[Record], int | None]) -> int: ...


def _header(headers: Iterable[tuple[str, bytes]], name: str) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def record(message: ConsumerRecord[bytes, bytes]) -> Record:
    """Our Record of one Kafka message, with its position and the clock its headers name."""
    headers = message.headers or ()
    return Record(
        value=message.value,
        timer_marker=_header(headers, ORIGIN_HEADER) == b"timer",
        position=f"{message.topic}[{message.partition}]@{message.offset}",
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        external_clock=_header(headers, CLOCK_HEADER) == CLOCK_STREAM.encode(),
    )


class EventsConsumer(ConsumerRebalanceListener):
    """Reads the events topic in batches for ``handler`` and commits the group's offsets after it."""

    def __init__(self, settings: Settings, handler: Handler) -> None:
        self.settings = settings
        self.handler = handler
        self.topic = settings.events_topic
        self._consumer: AIOKafkaConsumer | None = None  # made in ``run``, on the app's running loop
        self.lock = asyncio.Lock()  # a batch, a rebalance and a commit never overlap
        self.owned: set[int] = set()  # partitions of the events topic assigned and restored
        self.uncommitted: dict[TopicPartition, int] = {}
        self.pending: list[ConsumerRecord[bytes, bytes]] = []  # fetched, left past a batch's budget
        self.revocations = 0  # how many so far: what was fetched before one is not handled after it
        self.last_commit = time.monotonic()

    @property
    def consumer(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            raise RuntimeError("the events consumer has not started")
        return self._consumer

    def _make_consumer(self) -> AIOKafkaConsumer:
        settings = self.settings
        return AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap.split(","),
            client_id=f"{settings.app_id}-worker",
            group_id=settings.app_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=2 * MESSAGE_LIMIT,  # a 1.5 MB object (topics.py)
            # A crashed worker's partitions move to a live one after this long.
            session_timeout_ms=int(settings.session_timeout * 1000),
            heartbeat_interval_ms=int(settings.session_timeout * 1000 / 3),
            rebalance_timeout_ms=int(settings.session_timeout * 2000),
            **settings.kafka_security.client_options(),
        )

    # -- the rebalance listener: aiokafka awaits these, with fetching paused ----------------------

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        async with self.lock:  # the batch in hand ends in the store before the next owner restores
            self.handler.on_revoked()
            self.owned = set()
            await self._commit()
            self.uncommitted.clear()  # no longer ours to commit: the next owner resumes from the store
            self.pending = []  # fetched past the last batch: read again from there by whoever owns them next
            self.revocations += 1

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        async with self.lock:
            tps = sorted(tp for tp in assigned if tp.topic == self.topic)
            try:
                committed = {tp.partition: await self.consumer.committed(tp) for tp in tps}
            except Exception:
                # aiokafka would log a failed listener and go on, and this worker would own
                # partitions it never reads: stop instead, and the restart joins again.
                logger.exception("the group's offsets could not be read, stopping the worker")
                os._exit(70)
            resume = await self.handler.on_assigned({tp.partition for tp in tps}, committed)
            for tp in tps:
                if tp.partition in resume:
                    self.consumer.seek(tp, resume[tp.partition])  # past what the store holds
            self.owned = {tp.partition for tp in tps}

    # -- the loop ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Consume until cancelled (the app stops), then commit and leave the group. Whatever
        else ends the loop stops the worker: it must never go on without reading."""
        await self._start()
        try:
            while True:
                batch = await self._fetch()
                async with self.lock:
                    # A partition revoked since the fetch is another worker's now.
                    messages = [m for m in batch if m.partition in self.owned]
                    if messages:
                        taken = await self._handle([record(m) for m in messages])
                        self.pending = messages[taken:]  # past the batch budget: the next batch's
        except Exception:
            logger.exception("the events consumer failed, stopping the worker")
            os._exit(70)
        finally:
            await asyncio.shield(self._stop())

    async def _start(self) -> None:
        """Start the consumer, waiting for a broker that is away (as the producer's clients do)."""
        while True:
            self._consumer = self._make_consumer()
            try:
                await self.consumer.start()
            except KafkaError as exc:
                logger.warning("Kafka unreachable, retrying", error=repr(exc))
                await self.consumer.stop()
                await asyncio.sleep(RETRY_START)
                continue
            self.consumer.subscribe([self.topic], listener=self)
            return

    async def _handle(self, records: list[Record]) -> int:
        try:
            taken = await self.handler.handle(records, self._budget(records[0]), self._lag)
        except Exception:
            # Going on would commit offsets past a batch the store does not hold; die as a
            # SIGKILL would, so the restart resumes from the store (and retries the batch).
            logger.exception("batch failed, stopping the worker", size=len(records))
            os._exit(70)
        for r in records[:taken]:
            self.uncommitted[TopicPartition(self.topic, r.partition or 0)] = (r.offset or 0) + 1
        if time.monotonic() - self.last_commit >= COMMIT_EVERY:
            await self._commit()
        return taken

    async def _fetch(self) -> list[ConsumerRecord[bytes, bytes]]:
        """Up to a batch of messages: what the last batch left past its budget, then whatever is
        fetched (waiting for the first when nothing is left), topped up for at most
        ``SCHEDSTREAM_BATCH_WITHIN`` seconds when short; in order within each partition."""
        size, within = self.settings.batch_size, self.settings.batch_within
        batch, self.pending = self.pending, []
        if len(batch) < size:
            batch = await self._top_up(batch, 0 if batch else IDLE_POLL_MS, size)
        if 0 < len(batch) < size and within > 0:
            batch = await self._top_up(batch, int(within * 1000), size)
        return batch

    async def _top_up(
        self, batch: list[ConsumerRecord[bytes, bytes]], timeout_ms: int, size: int
    ) -> list[ConsumerRecord[bytes, bytes]]:
        revocations = self.revocations
        more = await self._get(timeout_ms, size - len(batch))
        # Revoked while waiting (and maybe assigned again, and sought back to what the store
        # holds): what was fetched before is read again by whoever owns it now.
        return more if self.revocations != revocations else batch + more

    async def _get(self, timeout_ms: int, most: int) -> list[ConsumerRecord[bytes, bytes]]:
        got = await self.consumer.getmany(timeout_ms=timeout_ms, max_records=most)
        return [m for tp in sorted(got) for m in got[tp]]

    def _budget(self, first: Record) -> float:
        """The batch's budget, or none when catching up: far behind, the newest events' decisions
        are late anyway, and the fewest, fullest batches bring them soonest."""
        behind = self._lag(first)
        if behind is not None and behind > CATCH_UP_BATCHES * self.settings.batch_size:
            return 0.0
        return self.settings.batch_budget

    def _lag(self, last: Record) -> int | None:
        highwater = self.consumer.highwater(TopicPartition(self.topic, last.partition or 0))
        return None if highwater is None or last.offset is None else max(0, highwater - last.offset - 1)

    async def _commit(self) -> None:
        """Commit the group's offsets up to what the store holds; a failure (a rebalance, the broker
        away) only delays them: the store, not the group, says where an assignment resumes."""
        self.last_commit = time.monotonic()
        if not self.uncommitted:
            return
        offsets, self.uncommitted = self.uncommitted, {}
        try:
            await self.consumer.commit(offsets)
        except KafkaError as exc:
            logger.debug("offsets not committed", error=repr(exc))
            for tp, offset in offsets.items():
                self.uncommitted.setdefault(tp, offset)

    async def _stop(self) -> None:
        async with self.lock:
            await self._commit()
        await self.consumer.stop()

    async def end_offsets(self, partitions: Iterable[int]) -> dict[int, int]:
        ends = await self.consumer.end_offsets([TopicPartition(self.topic, p) for p in partitions])
        return {tp.partition: offset for tp, offset in ends.items()}
