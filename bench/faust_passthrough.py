"""Faust's own loop as a baseline: the worker's Faust app with nothing in between.

Run as its own process (``python -m bench.faust_passthrough BOOTSTRAP SOURCE SINK COUNT OUT``): an
agent on SOURCE, configured as ``schedstream worker`` configured its own until it read the topic
with aiokafka itself (raw values, at-least-once, ``take_events`` with the worker's batch size and
wait), sends each message's value to SINK and awaits its delivery, as the worker's outbox does.
After COUNT messages it writes to OUT the CPU seconds the process spent from the first message on
(every thread: Faust consumes in one of its own), and exits. What this costs beyond the bare
aiokafka loop (``bench.passthrough``) is Faust's per-event stream, which no batch size takes away,
and which the worker no longer pays (``services/stream/consume.py``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import faust

from services.config import Settings


def main(argv: list[str]) -> None:
    bootstrap, source, sink, count, out = argv
    want, settings = int(count), Settings.from_env()
    app = faust.App(
        f"faust-passthrough-{source}",
        broker=[f"kafka://{host}" for host in bootstrap.split(",")],
        value_serializer="raw",
        key_serializer="raw",
        store="memory://",
        processing_guarantee="at_least_once",
        web_enabled=False,
        datadir=str(Path(out).parent / f"faust-passthrough-{source}"),
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
    )
    topic = app.topic(source, value_serializer="raw", key_serializer="raw")
    started: list[float] = []  # process CPU seconds at the first batch
    copied = 0

    @app.agent(topic)
    async def copy(stream: faust.StreamT) -> None:
        nonlocal copied
        async for events in stream.take_events(settings.batch_size, within=settings.batch_within):
            started[:] = started or [time.process_time()]
            futures = [await app.producer.send(sink, e.message.key, e.message.value, None, None, None) for e in events]
            for future in futures:
                await future
            copied += len(events)
            if copied >= want:
                Path(out).write_text(f"{time.process_time() - started[0]}\n")
                os._exit(0)

    worker = faust.Worker(app, quiet=True, loglevel="warning")
    worker.spinner = None
    worker.execute_from_commandline()


if __name__ == "__main__":
    main(sys.argv[1:])
