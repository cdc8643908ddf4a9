"""``schedstream produce``: feed event files into the events topic, keyed by cluster.

Each line goes in as one message, in file order, keyed by its cluster (``default`` when the
line cannot be read, so malformed lines reach the worker and its DLQ too). Clusters whose
lines carry SCHEDULE markers drive their own clock: their messages get the header
``schedstream-clock: stream``, and the worker's timer leaves them alone.
"""

from __future__ import annotations

from aiokafka import AIOKafkaProducer

from domain.events import DEFAULT_CLUSTER, peek_cluster
from services.inputs import marker_clusters
from services.kafka_security import PLAINTEXT, KafkaSecurity
from services.pipeline import CLOCK_HEADER, CLOCK_STREAM, Record
from services.stream.topics import ensure_topics


async def produce(
    records: list[Record], *, bootstrap: str, topic: str, partitions: int, security: KafkaSecurity = PLAINTEXT
) -> int:
    await ensure_topics(bootstrap, [topic, f"{topic}.dlq"], partitions, security)
    external = marker_clusters(records)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5, **security.client_options()
    )
    await producer.start()
    try:
        futures = []
        for record in records:
            peeked = peek_cluster(record.value)
            cluster = peeked[0] if peeked else DEFAULT_CLUSTER
            headers = [(CLOCK_HEADER, CLOCK_STREAM.encode())] if cluster in external else None
            futures.append(
                await producer.send(topic, record.value.rstrip(b"\r\n"), key=cluster.encode(), headers=headers)
            )
        for future in futures:
            await future
        return len(futures)
    finally:
        await producer.stop()
