"""The streaming service: the one Faust app, consuming ``cluster-events`` and publishing
``scheduler-decisions``.

Delivery is at-least-once (the events consumer, consume.py, commits the group's offsets only
after the store holds the batch); the database makes it effectively once: each batch of
messages is processed by the shared Pipeline and committed with its positions in one
transaction, messages at or below the stored position are skipped, and decisions and rejects
reach Kafka through an outbox drained after every commit (and at start-up), so a crash never
loses or duplicates a decision in the store; the topic may repeat one, and consumers
de-duplicate by its deterministic id.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

import faust
import msgspec
from faust.auth import SASLCredentials, SSLCredentials
from faust.types.auth import CredentialsT

from domain.engine import Failing
from domain.objects.meta import timestamp
from domain.scheduler.config import SchedulerConfig
from services import logging as log
from services.config import Settings
from services.kafka_security import KafkaSecurity
from services.observe.observer import Observer
from services.observe.server import ObserveService
from services.pipeline import (
    CLOCK_NONE,
    CLOCK_TIMER,
    ORIGIN_HEADER,
    BatchResult,
    Pipeline,
    Record,
)
from services.store.store import OUTBOX_PAGE, Store
from services.stream import log_limit
from services.stream.consume import EventsConsumer
from services.stream.topics import MESSAGE_LIMIT, refused

logger = log.get("schedstream.worker")
END_OFFSETS_TIMEOUT = 5.0
FAILED_CYCLE_BACKOFF = 300.0  # seconds: the longest wait of the timer after cycles that raised


class StreamService:
    """What the events consumer and the timer drive; holds the pipeline and the outbox relay."""

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
        self.ready = asyncio.Event()  # set once the current assignment's state is restored
        self.own_markers: set[tuple[int, int]] = set()  # (partition, offset) of our timer's markers
        self.observer = Observer(lambda: list(self.pipeline.engine.clusters.values()), self._failing)
        self.observer.metrics.parked.set_function(self.parked_outbox)  # read from the store at each scrape
        self.pipeline.on_cycle = self.observer.cycle
        self.consumer = EventsConsumer(settings, self)

    async def on_assigned(self, partitions: set[int], committed: Mapping[int, int | None]) -> dict[int, int]:
        """Own the new assignment: rebuild state and progress from the store, refuse to run if the
        consumer group already committed past what the store holds (a store restored from an
        older backup, or a new store under an old group: that would skip events silently), and
        give the offset each partition resumes at, right after what the store holds."""
        self.observer.assigned(False)
        started = time.monotonic()
        # Off the event loop: a long restore must not starve the heartbeats (the group would
        # throw this member out and restore again), nor look like idleness; the timer waits for
        # ``ready``.
        self.ready.clear()
        try:
            folded = await asyncio.to_thread(self.pipeline.restore_unless_held, set(partitions))
        except Exception:
            # E.g. the partition's previous owner still wrote while we read: die as a batch
            # failure does (never hang with ``ready`` unset), and the restart restores again.
            logger.exception("restore failed, stopping the worker", partitions=sorted(partitions))
            os._exit(70)
        logger.info(
            "partitions assigned, state restored" if folded is not None else "partitions assigned, state kept",
            partitions=sorted(partitions),
            events=folded or 0,
            seconds=round(time.monotonic() - started, 3),
        )
        resume = {}
        for partition in sorted(partitions):
            done = self.pipeline.progress.get((self.settings.events_topic, partition), -1)
            offset = committed.get(partition)
            if offset is not None and offset > done + 1:
                logger.critical(
                    "the consumer group is ahead of the store; use a new SCHEDSTREAM_APP_ID to read the "
                    "topic again, or the store this group wrote to",
                    partition=partition,
                    committed=offset,
                    stored=done,
                )
                os._exit(78)
            if done >= 0:
                resume[partition] = done + 1
        self.ready.set()
        self.last_activity = time.monotonic()  # waiting for the group is not idleness
        self.observer.assigned(True)
        return resume

    def on_revoked(self) -> None:
        # Ready again once the new assignment is restored: until then the timer writes no marker
        # and the worker is not idle.
        self.ready.clear()
        self.observer.assigned(False)

    async def handle(self, records: Sequence[Record], budget: float, lag: Callable[[Record], int | None]) -> int:
        """Process a batch, as much of it as ``budget`` (seconds, 0: all) allows; how many records it took."""
        started = time.perf_counter()
        result = self.pipeline.process(records, budget)
        records = records[: result.taken]
        if not all(r.timer_marker for r in records):
            self.last_activity = time.monotonic()  # our own markers are not input
        self._observe(records[-1], result, time.perf_counter() - started, lag(records[-1]))
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
        return result.taken

    def _observe(self, last: Record, result: BatchResult, seconds: float, lag: int | None) -> None:
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
        cycle, into the partition its events arrive on (whatever partitioner their producer used).
        A cluster whose marker now would decide nothing (``Engine.idle``: nothing came since the
        last cycle, which decided nothing, and no clock-reading answer of it has changed) gets
        none: a gang that cannot fit adds no marker a second to the topic and the store."""
        if not self.ready.is_set():
            return
        engine = self.pipeline.engine
        at = datetime.now(UTC)
        now = timestamp(at)
        for cluster in sorted(engine.clusters):
            partition = self.pipeline.partitions.get(cluster)
            if partition not in self.consumer.owned or self.pipeline.clocks.get(cluster) != CLOCK_TIMER:
                continue
            if not engine.wants_cycle(cluster, at):
                continue
            if engine.idle(cluster, at):
                self.observer.timer("idle")
                continue
            if self._backing_off(cluster, at.timestamp()):
                self.observer.timer("backoff")
                continue
            marker = msgspec.json.encode({"type": "SCHEDULE", "cluster": cluster, "time": now})
            delivery = await self.app.producer.send(
                self.settings.events_topic, cluster.encode(), marker, partition, None, {ORIGIN_HEADER: b"timer"}
            )
            self.own_markers.add((partition, (await delivery).offset))
            self.observer.timer("written")

    def _failing(self, cluster: str) -> Failing | None:
        """``Engine.failing`` of the pipeline's engine now (a restore makes a new one)."""
        return self.pipeline.engine.failing(cluster)

    def _backing_off(self, cluster: str, now: float) -> bool:
        """Whether the cluster's cycles have been raising with nothing come since (``Engine.failing``,
        ``quiet``) and the wait after the last is not over: one period after the first, doubling
        with each one after it up to ``FAILED_CYCLE_BACKOFF`` seconds. Over the same state (only
        the clock moves) a cycle that raised most likely raises again, and each adds a reject to
        the DLQ: without the wait, one object the cycle cannot handle on a quiet cluster adds one
        a period, 86,400 a day."""
        failing = self._failing(cluster)
        if failing is None or not failing.quiet:
            return False
        wait = min(self.settings.schedule_period * 2 ** min(failing.quiet - 1, 32), FAILED_CYCLE_BACKOFF)
        return now < failing.last + wait

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
        partitions = sorted(self.consumer.owned)
        if not partitions:
            return True
        try:
            ends = await asyncio.wait_for(self.consumer.end_offsets(partitions), END_OFFSETS_TIMEOUT)
        except Exception as exc:  # any failure to learn the ends means "not known"
            logger.debug("end offsets unknown", error=repr(exc))
            return False
        for partition in partitions:
            done = self.pipeline.progress.get((topic, partition), -1)
            unread = range(done + 1, ends.get(partition, 0))
            if len(unread) > len(self.own_markers) or any((partition, o) not in self.own_markers for o in unread):
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
        producer_max_request_size=MESSAGE_LIMIT,  # a 1.5 MB object (topics.py)
        producer_acks=-1,
        web_enabled=False,
        datadir=str(settings.data_dir),
        topic_partitions=settings.partitions,
    )
    # Faust's consumer (and its agent stream, its conductor and tables) stays off: the events
    # consumer reads the topic in batches itself (consume.py). Faust keeps the producer, the
    # timers, the dependencies and the shutdown.
    app.boot_strategy = faust.App.BootStrategy(app, enable_kafka_consumer=False)
    log_limit.install()
    store = Store(settings.db_url)
    service = StreamService(app, settings, config, store)
    if metrics_addr:
        app.add_dependency(ObserveService(metrics_addr, service.observer))

    @app.task
    async def start() -> None:
        await service.flush_outbox()  # what a crash left behind

    @app.task
    async def consume() -> None:
        await service.consumer.run()

    if settings.schedule_period > 0:
        app.timer(settings.schedule_period)(service.tick)

    if exit_when_idle:

        @app.timer(0.5)
        async def stop_when_idle() -> None:
            if service.idle_for() <= exit_when_idle or store.pending_outbox():
                return
            if await service.caught_up():
                logger.info("idle, stopping", idle_seconds=round(service.idle_for(), 1))
                os.kill(os.getpid(), signal.SIGTERM)

    return app
