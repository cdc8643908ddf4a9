"""The worker's baseline: a bare aiokafka consume -> produce loop, with nothing in between.

Run as its own process (``python -m bench.passthrough BOOTSTRAP SOURCE SINK COUNT``) so that its
CPU time is measured the same way as the worker's: it copies COUNT messages of SOURCE, from the
earliest offset, to SINK, in batches as ``getmany`` hands them over, and exits.
"""

from __future__ import annotations

import asyncio
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


async def copy(bootstrap: str, source: str, sink: str, count: int) -> None:
    consumer = AIOKafkaConsumer(
        source,
        bootstrap_servers=bootstrap,
        group_id=f"passthrough-{source}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await consumer.start()
    await producer.start()
    copied = 0
    try:
        while copied < count:
            batch = await consumer.getmany(timeout_ms=100, max_records=500)
            futures = [
                await producer.send(sink, message.value, key=message.key)
                for messages in batch.values()
                for message in messages
            ]
            for future in futures:
                await future
            if futures:
                await consumer.commit()
            copied += len(futures)
    finally:
        await producer.stop()
        await consumer.stop()


def main(argv: list[str]) -> None:
    bootstrap, source, sink, count = argv
    asyncio.run(copy(bootstrap, source, sink, int(count)))


if __name__ == "__main__":
    main(sys.argv[1:])
