"""``schedstream watch``: list+watch a Kubernetes API server into the events topic.

One informer per resource (``resources.discover``) lists, then watches from the list's
resourceVersion with bookmarks; every ADDED, MODIFIED, DELETED and BOOKMARK becomes one
CONTRACT section-1 line, the server's object bytes untouched plus ``"cluster"``.  The lines go
through one bounded queue to one Kafka producer (keyed by the cluster, so they keep their
order in one partition): when Kafka is slow the queue fills, the informers stop reading and
TCP holds the rest at the server; nothing is buffered without bound.

A ``410 Gone`` (or any ERROR event) relists: DELETED for every known object the list lacks,
then ADDED for new objects and MODIFIED for those whose resourceVersion changed.  Progress is
saved by ``state.WatchState`` only for lines Kafka acknowledged; a restart resumes the watch
from there (and relists if that resourceVersion is gone).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import msgspec
from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner

from services import logging as log
from services.kafka_security import PLAINTEXT, KafkaSecurity
from services.kube.client import Gone, Kube, KubeError, Unreachable
from services.kube.resources import Resource, discover
from services.kube.state import Identity, ResourceState, WatchState
from services.produce import events_producer

logger = log.get("schedstream.watch")

LIST_PAGE = 500
BATCH = 1000
RETRY_SECONDS = (0.5, 1, 2, 4, 8)


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""


class _Object(msgspec.Struct):
    apiVersion: str = ""
    kind: str = ""
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    code: int = 0  # a Status object's HTTP code (ERROR events)
    message: str = ""


class _Event(msgspec.Struct):
    type: str
    object: _Object


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    next: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta
    items: list[msgspec.Raw]


_EVENT = msgspec.json.Decoder(_Event)
_LIST = msgspec.json.Decoder(_List)
_OBJECT = msgspec.json.Decoder(_Object)


@dataclass(frozen=True, slots=True)
class Line:
    """One queued line, and what it does to the resource's saved progress once Kafka has it."""

    resource: str  # Resource.key
    payload: bytes | None  # the section-1 line; None: it only moves the cursor
    uid: str = ""
    identity: Identity | None = None  # with uid: the object exists now; None with uid: it is gone
    cursor: str | None = None  # resume from here once this line is acknowledged


@dataclass(frozen=True, slots=True)
class WatchOptions:
    cluster: str
    topic: str
    bootstrap: str
    partitions: int
    state_path: Path
    queue_size: int = 1000
    checkpoint_seconds: float = 1.0
    watch_timeout: int = 300
    security: KafkaSecurity = PLAINTEXT


class Informer:
    """List+watch of one resource, emitting lines into ``out``; keeps uid -> identity of what lives."""

    def __init__(self, kube: Kube, resource: Resource, cluster: str, saved: ResourceState, out: asyncio.Queue[Line]):
        self.kube = kube
        self.resource = resource
        self._suffix = b',"cluster":' + msgspec.json.encode(cluster) + b"}"
        self._cluster = cluster
        self._out = out
        self.known: dict[str, Identity] = dict(saved.objects)
        self.rv: str | None = saved.resource_version

    async def run(self, watch_timeout: int) -> None:
        failures = 0
        while True:
            try:
                if self.rv is None:
                    await self.relist()
                await self.watch(watch_timeout)
                failures = 0
            except Gone as gone:
                logger.info("resourceVersion gone; relisting", resource=self.resource.key, reason=str(gone))
                self.rv = None
            except (Unreachable, aiohttp.ClientPayloadError, TimeoutError) as exc:
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                logger.warning("watch interrupted; retrying", resource=self.resource.key, error=str(exc), delay=delay)
                await asyncio.sleep(delay)

    async def relist(self) -> None:
        items: list[tuple[msgspec.Raw, _Object]] = []
        rv = ""
        query = {"limit": str(LIST_PAGE)}
        while True:
            body = await self.kube.read(self.resource.path, query)
            assert body is not None  # only a missing_ok read answers None
            page = _LIST.decode(body)
            rv = rv or page.metadata.resourceVersion
            items.extend((raw, _OBJECT.decode(raw)) for raw in page.items)
            if not page.metadata.next:
                break
            query = {"limit": str(LIST_PAGE), "continue": page.metadata.next}
        listed = {obj.metadata.uid for _, obj in items}
        gone = sorted((i for uid, i in self.known.items() if uid not in listed), key=lambda i: (i.namespace, i.name))
        for identity in gone:  # first: a name deleted and created again must end up existing
            del self.known[identity.uid]
            payload = msgspec.json.encode({"type": "DELETED", "object": identity.as_object(), "cluster": self._cluster})
            await self._out.put(Line(self.resource.key, payload, identity.uid, None))
        added = changed = 0
        for raw, obj in items:
            before = self.known.get(obj.metadata.uid)
            if before is not None and before.resource_version == obj.metadata.resourceVersion:
                continue
            kind = "ADDED" if before is None else "MODIFIED"
            added, changed = (added + 1, changed) if before is None else (added, changed + 1)
            await self._emit_object(self._item_line(kind, bytes(raw), obj), obj, cursor=None)
        await self._out.put(Line(self.resource.key, None, cursor=rv))
        self.rv = rv
        logger.info(
            "listed", resource=self.resource.key, objects=len(items), added=added, modified=changed, deleted=len(gone)
        )

    async def watch(self, timeout: int) -> None:
        query = {
            "watch": "1",
            "resourceVersion": self.rv or "",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        async with self.kube.stream(self.resource.path, query, read_timeout=timeout + 30) as body:
            async for line in _lines(body):
                await self._on_event(line)

    async def _on_event(self, line: bytes) -> None:
        event = _EVENT.decode(line)
        obj = event.object
        if event.type == "ERROR":
            raise Gone(f"ERROR event {obj.code}: {obj.message}")
        payload = line[: line.rindex(b"}")] + self._suffix
        if event.type == "BOOKMARK":
            await self._out.put(Line(self.resource.key, payload, cursor=obj.metadata.resourceVersion))
        elif event.type == "DELETED":
            self.known.pop(obj.metadata.uid, None)
            await self._out.put(Line(self.resource.key, payload, obj.metadata.uid, None, obj.metadata.resourceVersion))
        else:
            await self._emit_object(payload, obj, cursor=obj.metadata.resourceVersion)
        self.rv = obj.metadata.resourceVersion

    async def _emit_object(self, payload: bytes, obj: _Object, *, cursor: str | None) -> None:
        m = obj.metadata
        identity = Identity(obj.apiVersion, obj.kind, m.namespace, m.name, m.uid, m.resourceVersion)
        self.known[m.uid] = identity
        await self._out.put(Line(self.resource.key, payload, m.uid, identity, cursor))

    def _item_line(self, kind: str, raw: bytes, obj: _Object) -> bytes:
        """A list item as an ADDED/MODIFIED line: list items of built-in kinds lack apiVersion and kind."""
        if not obj.apiVersion:
            obj.apiVersion, obj.kind = self.resource.api_version, self.resource.kind
            head = msgspec.json.encode({"apiVersion": obj.apiVersion, "kind": obj.kind})
            raw = head[:-1] + b"," + raw.lstrip()[1:]
        return b'{"type":"' + kind.encode() + b'","object":' + raw + self._suffix


async def _lines(body: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    pending = b""
    async for chunk in body.iter_any():
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def apply(state: WatchState, line: Line) -> None:
    """Move the saved progress by one acknowledged line."""
    saved = state.resource(line.resource)
    if line.uid:
        if line.identity is not None:
            saved.objects[line.uid] = line.identity
        else:
            saved.objects.pop(line.uid, None)
    if line.cursor is not None:
        saved.resource_version = line.cursor


async def pump(
    queue: asyncio.Queue[Line], producer: AIOKafkaProducer, options: WatchOptions, state: WatchState
) -> None:
    """Queue -> Kafka in batches; each batch is acknowledged before it moves the saved progress.

    The lines go in as record batches (``send_batch``) to the partition that ``send`` would
    pick for the cluster's key (the producer's default partitioner): the same partition, for
    a fraction of the per-message cost.
    """
    key = options.cluster.encode()
    partitions = sorted(await producer.partitions_for(options.topic))
    partition = DefaultPartitioner()(key, partitions, partitions)
    saved_at = time.monotonic()
    sent = 0
    try:
        while True:
            lines = [await queue.get()]
            while len(lines) < BATCH and not queue.empty():
                lines.append(queue.get_nowait())
            futures = []
            batch = producer.create_batch()
            for line in lines:
                if line.payload is None:
                    continue
                if batch.append(key=key, value=line.payload, timestamp=None) is None:  # full: send it
                    futures.append(await producer.send_batch(batch, options.topic, partition=partition))
                    batch = producer.create_batch()
                    batch.append(key=key, value=line.payload, timestamp=None)
                sent += 1
            if batch.record_count():
                futures.append(await producer.send_batch(batch, options.topic, partition=partition))
            await asyncio.gather(*futures)
            for line in lines:
                apply(state, line)
            if time.monotonic() - saved_at >= options.checkpoint_seconds:
                state.save()
                saved_at = time.monotonic()
    finally:
        state.save()
        logger.info("watch stopped", lines=sent, state=str(state.path))


async def run_watch(kube: Kube, options: WatchOptions) -> None:
    """Discover, then list+watch every resource into Kafka until SIGINT/SIGTERM."""
    state = WatchState.load(options.state_path, options.cluster)
    resources = await discover(kube)
    queue: asyncio.Queue[Line] = asyncio.Queue(maxsize=options.queue_size)
    logger.info(
        "watching",
        server=kube.server,
        cluster=options.cluster,
        resources=[r.key for r in resources],
        topic=options.topic,
    )
    producer_batch = 512 * 1024  # record batches of many lines, well below the broker's message limit
    async with events_producer(
        options.bootstrap, options.topic, options.partitions, options.security, max_batch_size=producer_batch
    ) as producer:
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(_stop_on_signal())
                tasks.create_task(pump(queue, producer, options, state))
                for resource in resources:
                    informer = Informer(kube, resource, options.cluster, state.resource(resource.key), queue)
                    tasks.create_task(informer.run(options.watch_timeout))
        except* _Stop:
            pass
        except* KubeError as failed:  # one clear error for the command line, not a group of them
            raise failed.exceptions[0] from None


class _Stop(Exception):
    """SIGINT or SIGTERM: stop the informers and the pump (which saves what Kafka acknowledged)."""


async def _stop_on_signal() -> None:
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, signalled.set)
    try:
        await signalled.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    raise _Stop
