"""``schedstream produce``: feed event files into the events topic, keyed by cluster.

Each line goes in as one message, in file order, keyed by its cluster (``default`` when the
line cannot be read, so malformed lines reach the worker and its DLQ too). Clusters whose
lines carry SCHEDULE markers drive their own clock: their messages get the header
``schedstream-clock: stream``, and the worker's timer leaves them alone. A line the broker
cannot take (larger than its message limit) goes to the DLQ topic instead, with its reason,
and the rest of the input is still sent.

Files are read whole first (a cluster with a marker anywhere has its clock from the first
line on); standard input is streamed line by line as it arrives (``kubectl get --raw
'/api/v1/pods?watch=1' | schedstream produce -``), and there a cluster drives its own clock
from its first marker on.  At most ``IN_FLIGHT`` messages wait for Kafka's acknowledgement.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

from aiokafka import AIOKafkaProducer

from domain.events import DEFAULT_CLUSTER, peek_cluster
from services.kafka_security import PLAINTEXT, KafkaSecurity
from services.pipeline import CLOCK_HEADER, CLOCK_STREAM, Record, Reject, normalise
from services.stream.topics import MESSAGE_LIMIT, ensure_topics, refused

IN_FLIGHT = 10_000
READ_SIZE = 1 << 16


@dataclass
class Produced:
    sent: int = 0
    rejects: list[Reject] = field(default_factory=list)


@asynccontextmanager
async def events_producer(
    bootstrap: str,
    topic: str,
    partitions: int,
    security: KafkaSecurity = PLAINTEXT,
    *,
    max_batch_size: int = 16384,
) -> AsyncIterator[AIOKafkaProducer]:
    """An idempotent producer (acks=all) for the events topic, which is created if missing."""
    await ensure_topics(bootstrap, [topic, f"{topic}.dlq"], partitions, security)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        max_request_size=MESSAGE_LIMIT,
        max_batch_size=max_batch_size,
        **security.client_options(),
    )
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop()


async def produce(
    records: Iterable[Record] | AsyncIterator[Record],
    *,
    bootstrap: str,
    topic: str,
    partitions: int,
    external: set[str] | None = None,
    security: KafkaSecurity = PLAINTEXT,
) -> Produced:
    """Send ``records`` in order; ``external``: clusters with their own clock (None: learnt from the markers)."""
    learn = external is None
    clocked = set() if external is None else external
    result = Produced()
    async with events_producer(bootstrap, topic, partitions, security) as producer:
        pending: deque[tuple[Record, bytes, asyncio.Future[object]]] = deque()

        async def settle(record: Record, line: bytes, future: asyncio.Future[object]) -> None:
            try:
                await future
            except Exception as exc:
                if not refused(exc):
                    raise
                result.rejects.append(_refusal(record, line, exc))
                return
            result.sent += 1

        async for record in _each(records):
            line = normalise(record.value) or b""
            peeked = peek_cluster(line)
            cluster = peeked[0] if peeked else DEFAULT_CLUSTER
            if learn and peeked and peeked[1]:
                clocked.add(cluster)
            headers = [(CLOCK_HEADER, CLOCK_STREAM.encode())] if cluster in clocked else None
            try:
                future = await producer.send(topic, line, key=cluster.encode(), headers=headers)
            except Exception as exc:
                if not refused(exc):
                    raise
                result.rejects.append(_refusal(record, line, exc))
                continue
            pending.append((record, line, future))
            while pending and (len(pending) > IN_FLIGHT or pending[0][2].done()):
                await settle(*pending.popleft())
        for item in pending:
            await settle(*item)
        for reject in result.rejects:
            await producer.send_and_wait(f"{topic}.dlq", reject.to_json(), key=b"")
    return result


def _refusal(record: Record, line: bytes, exc: Exception) -> Reject:
    reason = f"message of {len(line)} bytes refused by Kafka (the limit is {MESSAGE_LIMIT} bytes): {type(exc).__name__}"
    return Reject.of(record.position, reason, line)


async def _each(records: Iterable[Record] | AsyncIterator[Record]) -> AsyncIterator[Record]:
    if isinstance(records, AsyncIterator):
        async for record in records:
            yield record
    else:
        for record in records:
            yield record


async def stream_lines(name: str, handle: BinaryIO) -> AsyncIterator[Record]:
    """The lines of ``handle`` as they arrive: a thread waits for the bytes, the loop keeps sending."""
    pending = b""
    number = 0
    while chunk := await asyncio.to_thread(handle.read1, READ_SIZE):  # type: ignore[attr-defined]
        *complete, pending = (pending + chunk).split(b"\n")
        for line in complete:
            number += 1
            if line.strip():
                yield Record(line, f"{name}:{number}")
    if pending.strip():
        yield Record(pending, f"{name}:{number + 1}")
