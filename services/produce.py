"""``schedstream produce``: feed event files into the events topic, keyed by cluster.

Each line goes in as one message, in file order, keyed by its cluster (``default`` when the
line cannot be read, so malformed lines reach the worker and its DLQ too). Clusters whose
lines carry SCHEDULE markers drive their own clock: their messages get the header
``schedstream-clock: stream``, and the worker's timer leaves them alone. A line the broker
cannot take (larger than its message limit) goes to the DLQ topic instead, with its reason,
and the rest of the input is still sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiokafka import AIOKafkaProducer

from domain.events import DEFAULT_CLUSTER, peek_cluster
from services.inputs import marker_clusters
from services.pipeline import CLOCK_HEADER, CLOCK_STREAM, Record, Reject, normalise
from services.stream.topics import MESSAGE_LIMIT, ensure_topics, refused


@dataclass
class Produced:
    sent: int = 0
    rejects: list[Reject] = field(default_factory=list)


async def produce(records: list[Record], *, bootstrap: str, topic: str, partitions: int) -> Produced:
    dlq = f"{topic}.dlq"
    await ensure_topics(bootstrap, [topic, dlq], partitions)
    external = marker_clusters(records)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5, max_request_size=MESSAGE_LIMIT
    )
    await producer.start()
    result = Produced()
    try:
        futures = []
        for record in records:
            line = normalise(record.value) or b""
            peeked = peek_cluster(line)
            cluster = peeked[0] if peeked else DEFAULT_CLUSTER
            headers = [(CLOCK_HEADER, CLOCK_STREAM.encode())] if cluster in external else None
            try:
                futures.append((record, await producer.send(topic, line, key=cluster.encode(), headers=headers)))
            except Exception as exc:
                if not refused(exc):
                    raise
                result.rejects.append(_refusal(record, line, exc))
        for record, future in futures:
            try:
                await future
            except Exception as exc:
                if not refused(exc):
                    raise
                result.rejects.append(_refusal(record, normalise(record.value), exc))
                continue
            result.sent += 1
        for reject in result.rejects:
            await producer.send_and_wait(dlq, reject.to_json(), key=b"")
        return result
    finally:
        await producer.stop()


def _refusal(record: Record, line: bytes | None, exc: Exception) -> Reject:
    size = len(line or b"")
    reason = f"message of {size} bytes refused by Kafka (the limit is {MESSAGE_LIMIT} bytes): {type(exc).__name__}"
    return Reject.of(record.position, reason, line)
