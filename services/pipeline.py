"""Pipeline: the one path every input takes, for the streaming worker and for replay alike.

Raw lines (or Kafka message values) are parsed by the domain, folded into the Engine, and the
resulting events, decisions and rejects are written to the Store in one transaction per batch.
Records the store already holds (their partition offset is at or below the recorded progress)
are skipped, which makes at-least-once redelivery harmless.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from domain import saved_state
from domain.decisions import Decision
from domain.engine import Engine
from domain.events import InvalidEvent, ScheduleMarker, parse_event
from domain.scheduler.config import SchedulerConfig
from services.store.batch import Batch, Position
from services.store.store import Store

CLOCK_TIMER = "timer"  # the worker's timer writes this cluster's SCHEDULE markers
CLOCK_STREAM = "stream"  # the producer of the stream writes them
CLOCK_NONE = "none"  # no markers: a cycle after every event
CLOCK_HEADER = "schedstream-clock"  # Kafka header set by `schedstream produce` for CLOCK_STREAM clusters
ORIGIN_HEADER = "schedstream-origin"  # Kafka header on markers written by the worker's timer
# Characters of a rejected line that its DLQ record (or rejects-file line) carries: the record
# must stay far below the broker's message limit; the store keeps the whole line.
REJECT_VALUE_LIMIT = 16_384


def normalise(value: bytes | None) -> bytes | None:
    """The one normalisation of an input line, for the worker, ``produce`` and ``replay`` alike:
    trailing whitespace (a file's newline, a CR) goes, so one line gets one reject reason."""
    return None if value is None else value.rstrip()


@dataclass(frozen=True, slots=True)
class Record:
    """One input line or Kafka message, with where it came from."""

    value: bytes | None  # None: a Kafka message without a value (a tombstone)
    position: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    external_clock: bool = False  # produced with the header schedstream-clock: stream
    timer_marker: bool = False  # a SCHEDULE marker written by the worker's own timer

    @property
    def at(self) -> Position:
        return Position(self.topic, self.partition, self.offset)


@dataclass(frozen=True, slots=True)
class Reject:
    position: str
    reason: str
    value: str  # the whole line as text (undecodable bytes replaced, NUL escaped)
    size: int = 0  # of the line, in bytes
    sha256: str = ""  # of the line's bytes

    @classmethod
    def of(cls, position: str, reason: str, line: bytes | None) -> Reject:
        raw = line or b""
        # NUL cannot be stored in PostgreSQL text: keep it visible, escaped.
        text = raw.decode(errors="replace").replace("\x00", "\\u0000")
        return cls(position, reason, text, len(raw), hashlib.sha256(raw).hexdigest())

    def to_json(self) -> bytes:
        """The DLQ record: a long line is cut to REJECT_VALUE_LIMIT characters and says so, with
        its size and hash (to find it in the store's rejects table)."""
        record: dict[str, Any] = {"position": self.position, "reason": self.reason, "value": self.value}
        if len(self.value) > REJECT_VALUE_LIMIT:
            record.update(value=self.value[:REJECT_VALUE_LIMIT], truncated=True, size=self.size, sha256=self.sha256)
        return msgspec.json.encode(record)


@dataclass
class BatchResult:
    decisions: list[Decision] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    events: int = 0
    skipped: int = 0
    taken: int = 0  # records of the batch processed (with those skipped); the rest are the next batch's


def encode_decision(decision: Decision) -> bytes:
    """The decision's JSON, byte for byte the same in the topic, the database and replay files."""
    return msgspec.json.encode(decision.to_dict())


class Pipeline:
    def __init__(
        self,
        config: SchedulerConfig,
        store: Store,
        *,
        consumer: str = "replay",
        default_clock: str = CLOCK_NONE,
        clocks: dict[str, str] | None = None,
        outbox_topics: tuple[str, str] | None = None,
        snapshot_every: int = 0,
    ) -> None:
        """``outbox_topics``: (decisions topic, dlq topic) when results are to be published;
        ``snapshot_every``: snapshot a cluster in the batch that takes it this many events past
        its last snapshot (0: never)."""
        self.store = store
        self.config = config
        self.consumer = consumer
        self.default_clock = default_clock
        self.clocks: dict[str, str] = dict(clocks or {})
        self.partitions: dict[str, int] = {}  # cluster -> the events partition its lines arrive on
        self.outbox_topics = outbox_topics
        self.snapshot_every = snapshot_every
        self.snapshot_seq: dict[str, int] = {}  # cluster -> next seq at its latest snapshot
        self.elsewhere: set[str] = set()  # stored clusters left to the group's other members at restore
        self.restored_for: frozenset[int] | None = None  # the partitions of the restore the state comes from
        self.engine = self._new_engine()
        self.progress = store.progress(consumer)
        self.on_cycle: Callable[[float], None] | None = None  # told each cycle's duration (seconds)

    def _new_engine(self) -> Engine:
        return Engine(self.config, on_markers=lambda c: self.clocks.get(c, self.default_clock) != CLOCK_NONE)

    def restore(self, partitions: Collection[int] | None = None) -> int:
        """Rebuild the domain state and progress from the store alone (at start and after every
        rebalance, so no state from before can linger); returns how many events were folded.
        With ``partitions`` (a worker's assignment), only the clusters whose events arrive on
        those partitions are rebuilt now: the others belong to another member of the group, and
        one whose events turn up here after all (its producer's partitioning changed) is rebuilt
        before its first event is folded."""
        self.restored_for = None
        self.engine = self._new_engine()
        self.progress = self.store.progress(self.consumer)
        self.partitions.clear()
        self.snapshot_seq.clear()
        self.elsewhere.clear()
        snapshots = self.store.snapshots()
        folded = 0
        for cluster, (next_seq, clock, partition) in sorted(self.store.clusters().items()):
            if partitions is not None and partition is not None and partition not in partitions:
                self.elsewhere.add(cluster)
                continue
            folded += self._restore_cluster(cluster, next_seq, clock, partition, snapshots.get(cluster))
        self.restored_for = None if partitions is None else frozenset(partitions)
        return folded

    def restore_unless_held(self, partitions: Collection[int]) -> int | None:
        """``restore(partitions)``, unless the state held is the one it would build: None then.

        Kafka's group coordinator gets no heartbeat from a member while its assignment callback
        runs, so a restore longer than the session timeout gets the member thrown out of the
        group as it finishes; it rejoins and is given the same partitions. Restoring them again
        would take as long, and the member would go round for ever. When the last restore was
        for the same partitions and the store holds, for them, exactly what this pipeline has
        folded and written since (no other member wrote in between), the state held is kept."""
        owned = frozenset(partitions)
        if self.restored_for == owned and self._store_matches(owned):
            return None
        return self.restore(owned)

    def _store_matches(self, owned: frozenset[int]) -> bool:
        """Whether the store's progress and clusters on ``owned`` are what this pipeline wrote."""
        ours = {tp: offset for tp, offset in self.progress.items() if tp[1] in owned}
        if {tp: o for tp, o in self.store.progress(self.consumer).items() if tp[1] in owned} != ours:
            return False
        stored = self.store.clusters()
        if not stored.keys() >= self.engine.clusters.keys():
            return False
        for cluster, (next_seq, clock, partition) in stored.items():
            if partition is not None and partition not in owned:
                if cluster not in self.elsewhere:
                    return False  # held here, but a restore would leave it to another member
                continue
            held = self.engine.clusters.get(cluster)
            if held is None or (held.next_seq, self.clocks.get(cluster), self.partitions.get(cluster)) != (
                next_seq,
                clock,
                partition,
            ):
                return False
        return True

    def _restore_cluster(
        self, cluster: str, next_seq: int, clock: str, partition: int | None, latest: tuple[int, int, str] | None
    ) -> int:
        """Fold one cluster's latest snapshot and the events stored after it into the engine."""
        self.clocks[cluster] = clock
        if partition is not None:
            self.partitions[cluster] = partition
        start = 0
        if latest is not None:
            version, start, payload = latest
            saved_state.restore_cluster(self.engine, cluster, msgspec.json.decode(payload), version)
            self.snapshot_seq[cluster] = start
        folded = 0
        for seq, payload in self.store.iter_events(cluster, start=start):
            processed = self.engine.handle(parse_event(payload))
            if processed.seq != seq:
                raise RuntimeError(f"event store of {cluster!r} has a gap: expected seq {processed.seq}, found {seq}")
            folded += 1
        stored = self.engine.state(cluster).next_seq
        if stored != next_seq:
            raise RuntimeError(f"cluster {cluster!r}: {next_seq} events recorded, {stored} stored")
        return folded

    def process(self, records: Sequence[Record], budget: float = 0.0) -> BatchResult:
        """Process the records in one transaction. With a ``budget`` (seconds), the batch ends after
        the record that used it up (``result.taken`` says how many it took); the order of the
        records, not where batches end, decides everything else."""
        result = BatchResult()
        batch = Batch()
        progress = dict(self.progress)
        started = time.perf_counter()
        for record in records:
            result.taken += 1
            tp = (record.topic or "", record.partition or 0)
            if record.offset is not None:
                if record.offset <= progress.get(tp, -1):
                    result.skipped += 1
                    continue
                progress[tp] = record.offset
                batch.progress[(self.consumer, *tp)] = record.offset
            self._process_one(record, batch, result)
            if budget and time.perf_counter() - started >= budget:
                break
        self._snapshot_due(batch)
        self.store.write_batch(batch)
        self.progress = progress
        return result

    def _snapshot_due(self, batch: Batch) -> None:
        """Add, to the batch's own transaction, the snapshot of every cluster that is due one."""
        if not self.snapshot_every:
            return
        for cluster in batch.clusters:
            next_seq = batch.next_seq(cluster)
            if next_seq - self.snapshot_seq.get(cluster, 0) >= self.snapshot_every:
                data = saved_state.take_cluster(self.engine.state(cluster))
                payload = msgspec.json.encode(data).decode()
                batch.add_snapshot(cluster, saved_state.SNAPSHOT_VERSION, next_seq, payload)
                self.snapshot_seq[cluster] = next_seq

    def _process_one(self, record: Record, batch: Batch, result: BatchResult) -> None:
        line = normalise(record.value)
        try:
            event = parse_event(line)
        except InvalidEvent as exc:
            self._reject(record, str(exc), batch, result)
            return
        except MemoryError:
            raise  # the machine, not the line
        except Exception as exc:  # whatever one line makes the parser raise rejects it
            self._reject(record, f"cannot parse: {type(exc).__name__}: {exc}", batch, result)
            return
        cluster = event.cluster
        if cluster in self.elsewhere:
            self.elsewhere.discard(cluster)
            next_seq, clock, partition = self.store.clusters()[cluster]
            self._restore_cluster(cluster, next_seq, clock, partition, self.store.snapshots().get(cluster))
        if record.external_clock or (
            isinstance(event, ScheduleMarker) and record.topic is not None and not record.timer_marker
        ):
            self.clocks[cluster] = CLOCK_STREAM  # whoever writes this cluster's markers owns its clock
        self.clocks.setdefault(cluster, self.default_clock)
        if record.partition is not None:
            self.partitions[cluster] = record.partition
        started = time.perf_counter()
        try:
            processed = self.engine.handle(event)
        except MemoryError:
            raise
        except Exception as exc:  # the fold raised half-way: undo it, reject the line
            self._rebuild(cluster, batch)
            self._reject(record, f"cannot fold: {type(exc).__name__}: {exc}", batch, result)
            return
        cycled = isinstance(event, ScheduleMarker) or not self.engine.state(cluster).on_markers
        if self.on_cycle is not None and cycled:
            self.on_cycle(time.perf_counter() - started)
        result.events += 1
        batch.add_event(event, processed.seq, (line or b"").decode(), record.at)
        batch.set_cluster(cluster, processed.seq + 1, self.clocks[cluster], self.partitions.get(cluster))
        if processed.cycle_failure:  # the event stands; the cycle it triggered was skipped
            reason = f"scheduling cycle at seq {processed.seq} failed and was skipped: {processed.cycle_failure}"
            self._reject(record, reason, batch, result)
        for ordinal, decision in enumerate(processed.decisions):
            payload = encode_decision(decision).decode()
            batch.add_decision(decision, ordinal, payload)
            if self.outbox_topics:
                batch.publish(self.outbox_topics[0], cluster, payload)
            result.decisions.append(decision)

    def _rebuild(self, cluster: str, batch: Batch) -> None:
        """The cluster's state again without the event whose fold raised half-way: from the store
        and this batch's events before it, exactly as a restart would build it."""
        self.engine.clusters.pop(cluster, None)
        self.snapshot_seq.pop(cluster, None)
        stored = self.store.clusters().get(cluster)
        if stored is not None:
            next_seq, clock, partition = stored
            latest = self.store.snapshots().get(cluster)
            self._restore_cluster(cluster, next_seq, self.clocks.get(cluster, clock), partition, latest)
        for line in batch.event_lines(cluster):
            self.engine.handle(parse_event(line))

    def _reject(self, record: Record, reason: str, batch: Batch, result: BatchResult) -> None:
        reject = Reject.of(record.position, reason, normalise(record.value))
        result.rejects.append(reject)
        batch.add_reject(reject.position, reason, reject.value, record.at)
        if self.outbox_topics:
            batch.publish(self.outbox_topics[1], "", reject.to_json().decode())
