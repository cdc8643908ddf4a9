"""The streaming service: the one Faust app, consuming ``cluster-events`` and publishing
``scheduler-decisions``.

Delivery is at-least-once (Faust acks a batch only after the agent returns from it); the
database makes it effectively once: each batch of messages is processed by the shared
Pipeline and committed with its consumer offsets in one transaction, messages at or below the
committed offset are skipped, and decisions and rejects reach Kafka through an outbox drained
after every commit (and at start-up), so a crash never loses or duplicates a decision in the
store; the topic may repeat one, and consumers de-duplicate by its deterministic id.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import faust
import msgspec
from faust.auth import SASLCredentials, SSLCredentials
from faust.types import TP
from faust.types.auth import CredentialsT

from domain.objects.meta import timestamp
from domain.scheduler.config import SchedulerConfig
from services import logging as log
from services.config import Settings
from services.kafka_security import KafkaSecurity
from services.observe.observer import Observer
from services.observe.server import ObserveService
from services.pipeline import (
    CLOCK_HEADER,
    CLOCK_NONE,
    CLOCK_STREAM,
    CLOCK_TIMER,
    ORIGIN_HEADER,
    BatchResult,
    Pipeline,
    Record,
)
from services.store.store import OUTBOX_PAGE, Store
from services.stream import log_limit
from services.stream.topics import MESSAGE_LIMIT, refused

logger = log.get("schedstream.worker")
END_OFFSETS_TIMEOUT = 5.0


def _header(headers: Any, name: str) -> bytes | None:
    items = headers.items() if isinstance(headers, dict) else (headers or ())
    for key, value in items:
        if key == name:
            return value if isinstance(value, bytes) else str(value).encode()
    return None


class StreamService:
    """What the agent and the timer do; holds the pipeline and the outbox relay."""

    def __init__(self, app: faust.App, settings: Settings, config: SchedulerConfig, store: Store) -> None:
        self.app = app
        self.settings = settings
        self.store = store
        default_clock = CLOCK_TIMER if settings.schedule_period > 0 else CLOCK_NONE
        self.pipeline = Pipeline(
            config,
            store,
            consumer="worker",  # progress is per (topic, partition), whatever the consumer group
            default_clock=default_clock,
            outbox_topics=(settings.decisions_topic, settings.dlq_topic),
            snapshot_every=settings.snapshot_every,
        )
        self.outbox_lock = asyncio.Lock()
        self.last_activity = time.monotonic()
        self.owned: set[int] = set()  # partitions of the events topic assigned to this worker
        self.ready = asyncio.Event()  # set once the current assignment's state is restored
        self.own_markers: set[tuple[int, int]] = set()  # (partition, offset) of our timer's markers
        self.observer = Observer(lambda: list(self.pipeline.engine.clusters.values()))
        self.observer.metrics.parked.set_function(self.parked_outbox)  # read from the store at each scrape
        self.pipeline.on_cycle = self.observer.cycle

    async def on_assigned(self, assigned: set[TP]) -> None:
        """Own the new assignment: rebuild state and progress from the store, and refuse to run if
        the consumer group already committed past what the store holds (a store restored from an
        older backup, or a new store under an old group): that would skip events silently."""
        self.observer.assigned(False)
        self.owned = {tp.partition for tp in assigned if tp.topic == self.settings.events_topic}
        started = time.monotonic()
        # Off the event loop: a long restore must not starve the heartbeats (the group would
        # throw this member out and restore again), nor look like idleness; ``handle`` and the
        # timer wait for ``ready``.
        self.ready.clear()
        try:
            folded = await asyncio.to_thread(self.pipeline.restore_unless_held, self.owned)
        except Exception:
            # E.g. the partition's previous owner still wrote while we read: die as a batch
            # failure does (never hang with ``ready`` unset), and the restart restores again.
            logger.exception("restore failed, stopping the worker", partitions=sorted(self.owned))
            os._exit(70)
        logger.info(
            "partitions assigned, state restored" if folded is not None else "partitions assigned, state kept",
            partitions=sorted(self.owned),
            events=folded or 0,
            seconds=round(time.monotonic() - started, 3),
        )
        committed = await self.app.consumer.seek_to_committed()
        for tp, offset in sorted(committed.items()):
            done = self.pipeline.progress.get((tp.topic, tp.partition), -1)
            if tp.topic == self.settings.events_topic and offset is not None and offset > done + 1:
                logger.critical(
                    "the consumer group is ahead of the store; use a new SCHEDSTREAM_APP_ID to read the "
                    "topic again, or the store this group wrote to",
                    partition=tp.partition,
                    committed=offset,
                    stored=done,
                )
                os._exit(78)
        self.ready.set()
        self.last_activity = time.monotonic()  # waiting for the group is not idleness
        self.observer.assigned(True)

    async def handle(self, events: Sequence[faust.types.EventT]) -> None:
        await self.ready.wait()
        records = []
        for event in events:
            m = event.message
            timer_marker = _header(m.headers, ORIGIN_HEADER) == b"timer"
            if not timer_marker:
                self.last_activity = time.monotonic()  # our own markers are not input
            external = _header(m.headers, CLOCK_HEADER) == CLOCK_STREAM.encode()
            records.append(
                Record(
                    value=m.value,
                    timer_marker=timer_marker,
                    position=f"{m.topic}[{m.partition}]@{m.offset}",
                    topic=m.topic,
                    partition=m.partition,
                    offset=m.offset,
                    external_clock=external,
                )
            )
        started = time.perf_counter()
        result = self.pipeline.process(records)
        self._observe(records[-1], result, time.perf_counter() - started)
        for reject in result.rejects:
            logger.warning("rejected", position=reject.position, reason=reject.reason)
        for decision in result.decisions:
            logger.info(
                "decision",
                cluster=decision.cluster,
                seq=decision.seq,
                decision=decision.kind.value,
                key=f"{decision.target.namespace}/{decision.target.name}".lstrip("/"),
                reason=decision.reason,
            )
        first, last = records[0], records[-1]
        logger.debug(
            "batch committed",
            partition=first.partition,
            offset=f"{first.offset}-{last.offset}",
            events=result.events,
            skipped=result.skipped,
            decisions=len(result.decisions),
        )
        await self.flush_outbox()

    def _observe(self, last: Record, result: BatchResult, seconds: float) -> None:
        highwater = self.app.consumer.highwater(TP(last.topic or "", last.partition or 0))
        lag = None if highwater is None or last.offset is None else max(0, highwater - last.offset - 1)
        rejects = [reject.reason for reject in result.rejects]
        self.observer.batch(
            last.partition or 0,
            events=result.events,
            decisions=result.decisions,
            rejects=rejects,
            seconds=seconds,
            lag=lag,
        )

    async def flush_outbox(self) -> None:
        """Publish what the outbox holds, in commit order, then forget it. A row the broker
        refuses for itself is parked with its error (``parked_outbox`` counts them); any other
        failure (the broker is away) propagates and the rows stay for the next flush."""
        async with self.outbox_lock:
            while rows := self.store.pending_outbox(OUTBOX_PAGE):
                sent = []
                for row_id, topic, key, payload in rows:
                    try:
                        future = await self.app.producer.send(topic, key.encode(), payload.encode(), None, None, None)
                    except Exception as exc:
                        self._park_or_raise(row_id, topic, exc)
                        continue
                    sent.append((row_id, topic, future))
                published = []
                for row_id, topic, future in sent:
                    try:
                        await future
                    except Exception as exc:
                        self._park_or_raise(row_id, topic, exc)
                        continue
                    published.append(row_id)
                self.store.delete_outbox(published)
                if len(rows) < OUTBOX_PAGE:
                    return  # all there was; a later batch flushes its own rows after its commit

    def _park_or_raise(self, row_id: int, topic: str, exc: Exception) -> None:
        if not refused(exc):
            raise exc
        error = f"{type(exc).__name__}: {exc}"
        logger.error("outbox row refused by the broker, parked", row=row_id, topic=topic, error=error)
        self.store.park_outbox(row_id, error)

    def parked_outbox(self) -> int:
        """How many outbox rows the broker refused (kept in ``outbox_parked``): alert when not 0."""
        return self.store.count("outbox_parked")

    async def tick(self) -> None:
        """Write a SCHEDULE marker for each timer-clocked cluster this worker owns that wants a
        cycle, into the partition its events arrive on (whatever partitioner their producer used)."""
        if not self.ready.is_set():
            return
        now = timestamp(datetime.now(UTC))
        for cluster, state in sorted(self.pipeline.engine.clusters.items()):
            partition = self.pipeline.partitions.get(cluster)
            if partition not in self.owned or self.pipeline.clocks.get(cluster) != CLOCK_TIMER:
                continue
            if not state.wants_cycle():
                continue
            marker = msgspec.json.encode({"type": "SCHEDULE", "cluster": cluster, "time": now})
            delivery = await self.app.producer.send(
                self.settings.events_topic, cluster.encode(), marker, partition, None, {ORIGIN_HEADER: b"timer"}
            )
            self.own_markers.add((partition, (await delivery).offset))

    def idle_for(self) -> float:
        """Seconds since the last input other than our own SCHEDULE markers."""
        return time.monotonic() - self.last_activity

    async def caught_up(self) -> bool:
        """Whether every assigned partition of the events topic is processed to its end (our own
        timer's markers aside). False while restoring and while the broker cannot say: an
        outage is not idleness."""
        if not self.ready.is_set():
            return False
        topic = self.settings.events_topic
        tps = [TP(topic, partition) for partition in sorted(self.owned)]
        if not tps:
            return True
        try:
            ends = await asyncio.wait_for(self.app.consumer.highwaters(*tps), END_OFFSETS_TIMEOUT)
        except Exception as exc:  # any failure to learn the ends means "not known"
            logger.debug("end offsets unknown", error=repr(exc))
            return False
        for tp in tps:
            done = self.pipeline.progress.get((topic, tp.partition), -1)
            unread = range(done + 1, ends.get(tp, 0))
            if len(unread) > len(self.own_markers) or any((tp.partition, o) not in self.own_markers for o in unread):
                return False
        self.own_markers = {(p, o) for p, o in self.own_markers if o > self.pipeline.progress.get((topic, p), -1)}
        return True


def broker_credentials(security: KafkaSecurity) -> CredentialsT | None:
    """Faust's form of the Kafka security settings (None: plaintext)."""
    if security.uses_sasl:
        return SASLCredentials(
            username=security.username,
            password=security.password,
            ssl_context=security.ssl_context(),
            mechanism=security.mechanism,
        )
    if security.uses_ssl:
        return SSLCredentials(security.ssl_context())
    return None


def create_app(
    settings: Settings,
    config: SchedulerConfig,
    *,
    exit_when_idle: float | None = None,
    metrics_addr: str | None = None,
) -> faust.App:
    app = faust.App(
        settings.app_id,
        broker=[f"kafka://{host}" for host in settings.kafka_bootstrap.split(",")],
        broker_credentials=broker_credentials(settings.kafka_security),
        value_serializer="raw",
        key_serializer="raw",
        store="memory://",
        processing_guarantee="at_least_once",
        producer_max_request_size=MESSAGE_LIMIT,  # a 1.5 MB object (topics.py)
        consumer_max_fetch_size=2 * MESSAGE_LIMIT,
        web_enabled=False,
        datadir=str(settings.data_dir),
        topic_partitions=settings.partitions,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        # A crashed worker's partitions move to a live one after this long (Faust's default is 60 s).
        broker_session_timeout=settings.session_timeout,
        broker_heartbeat_interval=settings.session_timeout / 3,
        broker_rebalance_timeout=settings.session_timeout * 2,
    )
    log_limit.install()
    store = Store(settings.db_url)
    service = StreamService(app, settings, config, store)
    if metrics_addr:
        app.add_dependency(ObserveService(metrics_addr, service.observer))
    events_topic = app.topic(settings.events_topic, value_serializer="raw", key_serializer="raw")

    @app.task
    async def start() -> None:
        await service.flush_outbox()  # what a crash left behind

    @app.agent(events_topic)
    async def consume(stream: faust.StreamT) -> None:
        async for events in stream.take_events(settings.batch_size, within=settings.batch_within):
            try:
                await service.handle(events)
            except Exception:
                # Leaving this loop would let Faust ack the batch the store does not hold; die as
                # a SIGKILL would, so the restart resumes from the store (and retries the batch).
                logger.exception("batch failed, stopping the worker", size=len(events))
                os._exit(70)

    if settings.schedule_period > 0:
        app.timer(settings.schedule_period)(service.tick)

    @app.on_partitions_revoked.connect
    async def revoked(_app: faust.App, revoked: set[TP], **_: Any) -> None:
        service.observer.assigned(False)  # ready again once the new assignment is restored

    @app.on_partitions_assigned.connect
    async def assigned(_app: faust.App, assigned: set[TP], **_: Any) -> None:
        # Faust awaits this with the partitions paused, before any message of the new assignment.
        await service.on_assigned(assigned)

    if exit_when_idle:

        @app.timer(0.5)
        async def stop_when_idle() -> None:
            if service.idle_for() <= exit_when_idle or store.pending_outbox():
                return
            if await service.caught_up():
                logger.info("idle, stopping", idle_seconds=round(service.idle_for(), 1))
                os.kill(os.getpid(), signal.SIGTERM)

    return app
