"""`python -m bench.speed`: the speed table, every row beside a baseline measured in the same run.

Rows (per CPU-second where a figure is a rate, so they hold on a busy machine):
- `schedstream worker` events per CPU-second on SQLite (and PostgreSQL when a server can be
  started or ``SCHEDSTREAM_BENCH_PG_URL`` names one), against a bare aiokafka consume -> produce
  passthrough of the same messages on the same broker (bench/passthrough.py);
- SCHEDULE marker -> decision on the topic, p50 / p99, at 100 and 2,000 events/s, against the
  passthrough's own send -> receive latency of the same marker lines at the same rate;
- `replay` (the Pipeline into an in-memory store) events per CPU-second, against `json.loads`;
- PostgreSQL: the worker's batch transaction (Store.write_batch) rows per second, against COPY of
  the same rows into a table of the same shape, each batch both ways back to back;
- one scheduling cycle over 5,000 nodes and 20,000 pending pods (bench/cycle.py), two pod shapes
  and one shape per pod, against the naive all-pairs first fit;
- Kueue admission, ms of CPU per admission (bench/kueue.py at full scale);
- the whole DLRM trace through ``schedstream simulate``, CPU seconds, with its decisions' sha256.

The stream is what `schedstream simulate` makes of the first 4,000 openb pods on all 1,523 openb
nodes (cached under .local/bench/); without ../shared/data, the synthetic stream of bench/run.py.

Under each row short of its target, where its time goes: a cProfile of a run beside the
measured one, by stage, module and function (``bench.where``); for the worker, how much of an
event's time is replay's; for a latency row, the worker's batches, cycles and share of a core
over the window (``bench.worker_window``). ``--skip where`` leaves them out.

    python -m bench.speed [--skip worker,latency,replay,store,cycle,kueue,dlrm,where]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from bench import cycle, golden, kueue, where, worker_window
from domain.events import peek_cluster
from domain.scheduler.config import SchedulerConfig
from ops.local_kafka import LocalKafka
from ops.local_postgres import LocalPostgres, LocalPostgresError
from services.cli import GC_THRESHOLDS
from services.pipeline import CLOCK_HEADER, CLOCK_STREAM, Pipeline, Record
from services.record_files import marker_clusters
from services.simulate.run import load, simulate
from services.store.store import Store
from services.stream.topics import ensure_topics
from tests.shared_data import SHARED_DATA
from tests.streams import Shape, synthetic_stream

ROOT = Path(__file__).resolve().parents[1]
# The targets: under a row short of its own, where its time goes (``bench.where``,
# ``bench.worker_window``, or for the worker, replay's share).
TARGETS = {
    "replay": 40_000.0, "worker": 1 / 3, "cycle": 1.0, "kueue": 0.5, "p99 ms": 100.0, "p99 ms, busy": 250.0,
    "dlrm": 120.0,
}  # fmt: skip
KUEUE_PROFILED = 0.3  # the Kueue shape is profiled at this scale (under cProfile the full one takes minutes)
DLRM_PROFILED = 6000  # and the DLRM trace on its first lines
CACHE = ROOT / ".local" / "bench"
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")
OPENB_PODS = 4000
PARTITIONS = 1


def openb_stream() -> tuple[str, list[bytes]]:
    """The event stream of the first OPENB_PODS openb pods, simulated once and cached."""
    pods, nodes = SHARED_DATA / "openb_pod_list_default.csv", SHARED_DATA / "openb_node_list_all_node.csv"
    if not pods.exists():
        lines = [line.encode() for line in synthetic_stream(shape=Shape(nodes=200, gangs=3000))]
        return "synthetic stream (200 nodes, 3,000 gangs)", lines
    run = CACHE / f"openb-{OPENB_PODS}"
    events = run / "events.jsonl"
    if not events.exists():
        run.mkdir(parents=True, exist_ok=True)
        head = pods.read_text().splitlines()[: OPENB_PODS + 1]
        trace_file = run / "pods.csv"
        trace_file.write_text("\n".join(head) + "\n")
        trace, node_list = load(trace_file, "openb", nodes)
        simulate(trace, node_list, SchedulerConfig(), run)
    lines = events.read_bytes().splitlines()
    return f"openb, first {OPENB_PODS:,} pods on all nodes", lines


def _markers(lines: list[bytes]) -> list[tuple[int, int]]:
    """(line index, seq) of every SCHEDULE marker; one cluster, so seq counts its lines."""
    return [(i, i) for i, line in enumerate(lines) if b'"SCHEDULE"' in line[:40]]


# -- children and their CPU time ----------------------------------------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def cpu_of_children() -> Iterator[list[float]]:
    """CPU seconds of the children that ended inside the block (waited for), into ``out[0]``."""
    out = [0.0]
    before = _children_cpu()
    yield out
    out[0] = _children_cpu() - before


class Run:
    """One isolated deployment on a broker: its own topics, consumer group and store."""

    def __init__(self, bootstrap: str, db_url: str, workdir: Path) -> None:
        tag = uuid.uuid4().hex[:8]
        self.bootstrap, self.workdir = bootstrap, workdir
        self.events, self.decisions, self.sink = f"events-{tag}", f"decisions-{tag}", f"sink-{tag}"
        self.env = {
            **os.environ,
            "SCHEDSTREAM_KAFKA_BOOTSTRAP": bootstrap,
            "SCHEDSTREAM_DB_URL": db_url,
            "SCHEDSTREAM_EVENTS_TOPIC": self.events,
            "SCHEDSTREAM_DECISIONS_TOPIC": self.decisions,
            "SCHEDSTREAM_APP_ID": f"bench-{tag}",
            "SCHEDSTREAM_DATA_DIR": str(workdir / f"worker-{tag}"),
            "SCHEDSTREAM_PARTITIONS": str(PARTITIONS),
            "SCHEDSTREAM_LOG_FORMAT": "json",
            "SCHEDSTREAM_LOG_LEVEL": "info",
        }
        self.log = workdir / f"worker-{tag}.log"

    def worker(self, *args: str) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as log:
            return subprocess.Popen([SCHEDSTREAM, "worker", *args], env=self.env, stdout=log, stderr=log)

    def passthrough(self, count: int) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "bench.passthrough", self.bootstrap, self.events, self.sink, str(count)]
        return subprocess.Popen(argv, cwd=ROOT)

    def faust_passthrough(self, count: int) -> float:
        """CPU seconds of Faust's own loop (``bench.faust_passthrough``) over the first ``count``
        messages, from its first batch on."""
        out = self.workdir / f"faust-{self.events}.cpu"
        argv = [
            sys.executable,
            "-m",
            "bench.faust_passthrough",
            self.bootstrap,
            self.events,
            self.sink,
            str(count),
            str(out),
        ]
        with self.log.open("ab") as log:
            subprocess.run(argv, cwd=ROOT, env=self.env, stdout=log, stderr=log, timeout=600, check=True)
        return float(out.read_text())


async def _send(bootstrap: str, topic: str, lines: list[bytes], rate: float | None) -> list[float]:
    """Send the lines (paced at ``rate`` lines/s, or as fast as possible); the send time of each."""
    await ensure_topics(bootstrap, [topic, f"{topic}.dlq"], PARTITIONS)
    # Clusters whose stream has its own SCHEDULE markers (all of it: the openb stream opens with
    # 1,523 nodes): the header keeps the worker's own timer from adding markers to them, which
    # would shift every later seq.
    external = marker_clusters([Record(value=line, position="") for line in lines])
    # Idempotent, as `schedstream produce` is: a retried send must not shift every later seq.
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=0 if rate else 5
    )
    await producer.start()
    sent: list[float] = []
    try:
        started = time.perf_counter()
        futures = []
        for i, line in enumerate(lines):
            if rate:
                delay = started + i / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            peeked = peek_cluster(line)
            cluster = peeked[0] if peeked else "default"
            headers = [(CLOCK_HEADER, CLOCK_STREAM.encode())] if cluster in external else None
            sent.append(time.perf_counter())
            futures.append(await producer.send(topic, line, key=cluster.encode(), headers=headers))
        for future in futures:
            await future
    finally:
        await producer.stop()
    return sent


async def _receive(bootstrap: str, topic: str, until: float, want: int | None = None) -> list[tuple[float, bytes]]:
    """(arrival time, value) of a topic's messages from the start, until ``until`` (perf_counter)
    or ``want`` messages."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    got: list[tuple[float, bytes]] = []
    try:
        while time.perf_counter() < until and (want is None or len(got) < want):
            batch = await consumer.getmany(timeout_ms=20)
            now = time.perf_counter()
            got.extend((now, m.value) for messages in batch.values() for m in messages if m.value is not None)
    finally:
        await consumer.stop()
    return got


# -- rows ---------------------------------------------------------------------------------------


def _check(run: Run, code: int) -> None:
    """A worker that failed measured nothing: say so, with the end of its log."""
    if code:
        tail = run.log.read_text(errors="replace").splitlines()[-5:]
        raise RuntimeError(f"the worker exited with {code}; its log ends:\n" + "\n".join(tail))


def worker_rate(bootstrap: str, db_url: str, lines: list[bytes], workdir: Path) -> tuple[float, float, float]:
    """Events per CPU-second of the worker (its start-up, measured on an empty topic, taken off),
    of the bare aiokafka passthrough on the same messages, and of Faust's own loop on them."""
    empty = Run(bootstrap, db_url, workdir)
    asyncio.run(ensure_topics(bootstrap, [empty.events, f"{empty.events}.dlq"], PARTITIONS))
    with cpu_of_children() as idle:
        _check(empty, empty.worker("--exit-when-idle", "3").wait(timeout=300))
    run = Run(bootstrap, db_url, workdir)
    asyncio.run(_send(bootstrap, run.events, lines, None))
    with cpu_of_children() as busy:
        _check(run, run.worker("--exit-when-idle", "3").wait(timeout=3600))
    store = Store(db_url)
    stored = store.count("events")
    store.close()
    if stored != len(lines):  # it stopped early (idle while it joined its group, say): no rate to give
        raise RuntimeError(f"the worker stored {stored:,} of {len(lines):,} events; its log: {run.log}")
    with cpu_of_children() as bare:
        run.passthrough(len(lines)).wait(timeout=600)
    faust = run.faust_passthrough(len(lines))
    return len(lines) / max(busy[0] - idle[0], 1e-9), len(lines) / bare[0], len(lines) / faust


def _wait_for(path: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{path.name} never said {text!r} in {timeout:.0f} s")


def latencies(
    bootstrap: str, db_url: str, lines: list[bytes], workdir: Path, *, rate: float, seconds: float
) -> tuple[dict[str, tuple[float, float, int]], worker_window.Window]:
    """Marker -> first decision of its seq on the decisions topic, and the passthrough's marker
    send -> receive, each at ``rate`` events/s over ``rate * seconds`` lines; and what the worker
    did over the window (``bench.worker_window``). The worker is warmed first: the lines before
    the window (the nodes, the first pods) go in at full speed, and the window starts once their
    last marker has its decisions on the topic."""
    warm = min(len(lines) // 2, 3000)
    part = lines[warm : warm + int(rate * seconds)]
    markers = {i - warm: seq for i, seq in _markers(lines[: warm + len(part)]) if i >= warm}
    last_warm = max((seq for i, seq in _markers(lines[:warm])), default=None)
    out: dict[str, list[float]] = {}
    run = Run(bootstrap, db_url, workdir)
    asyncio.run(ensure_topics(bootstrap, [run.events, f"{run.events}.dlq", run.decisions], PARTITIONS))
    address = worker_window.free_address()
    worker = run.worker("--metrics-addr", address)
    try:
        _wait_for(run.log, "partitions assigned", 300)
        asyncio.run(_send(bootstrap, run.events, lines[:warm], None))
        deadline = time.monotonic() + 300
        while last_warm is not None and time.monotonic() < deadline:
            got = asyncio.run(_receive(bootstrap, run.decisions, time.perf_counter() + 2))
            if any(json.loads(value)["seq"] >= last_warm for _, value in got):
                break

        async def both() -> tuple[list[float], list[tuple[float, bytes]]]:
            until = time.perf_counter() + seconds + 15
            return await asyncio.gather(
                _send(bootstrap, run.events, part, rate), _receive(bootstrap, run.decisions, until)
            )

        watch = worker_window.Watch(worker.pid, address)
        sent, got = asyncio.run(both())
        window = watch.stop(max((at for at, _ in got), default=None))
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    first: dict[int, float] = {}
    for at, value in got:
        first.setdefault(json.loads(value)["seq"], at)
    out["worker"] = [(first[seq] - sent[index]) * 1000 for index, seq in markers.items() if seq in first]

    bare_run = Run(bootstrap, db_url, workdir)
    asyncio.run(ensure_topics(bootstrap, [bare_run.events, bare_run.sink], PARTITIONS))
    bare = bare_run.passthrough(len(part))
    try:
        time.sleep(3)  # its start-up

        async def passthrough() -> tuple[list[float], list[tuple[float, bytes]]]:
            until = time.perf_counter() + seconds + 15
            return await asyncio.gather(
                _send(bootstrap, bare_run.events, part, rate), _receive(bootstrap, bare_run.sink, until, len(part))
            )

        sent, got = asyncio.run(passthrough())
    finally:
        bare.wait(timeout=600)
    arrivals = [at for at, _ in got]
    out["passthrough"] = [(arrivals[i] - sent[i]) * 1000 for i in markers if i < len(arrivals)]
    return {name: _percentiles(values) for name, values in out.items()}, window


def _percentiles(values: list[float]) -> tuple[float, float, int]:
    if not values:
        return (float("nan"), float("nan"), 0)
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], len(ordered)


def replay_rate(lines: list[bytes]) -> tuple[float, float, list[float]]:
    """Events per CPU-second of the Pipeline into an in-memory store (what `replay` runs), of
    json.loads on the same lines, and the seconds of each scheduling cycle in it."""
    started = time.process_time()
    for line in lines:
        json.loads(line)
    loads = time.process_time() - started
    replay, cycles = replay_run(lines)
    return len(lines) / replay, len(lines) / loads, cycles


def replay_run(lines: list[bytes]) -> tuple[float, list[float]]:
    """The Pipeline over ``lines`` into an in-memory store: its CPU seconds, and each cycle's."""
    store = Store("sqlite://")
    store.upgrade()
    records = [Record(value=line, position=str(i)) for i, line in enumerate(lines)]
    pipeline = Pipeline(SchedulerConfig(), store, clocks=dict.fromkeys(marker_clusters(records), CLOCK_STREAM))
    cycles: list[float] = []
    pipeline.on_cycle = cycles.append
    started = time.process_time()
    for start in range(0, len(records), 1000):
        pipeline.process(records[start : start + 1000])
    replay = time.process_time() - started
    store.close()
    return replay, cycles


def store_rates(db_url: str, lines: list[bytes]) -> tuple[float, float, int]:
    """Rows per second of the worker's batch transactions (events, decisions, outbox, statuses,
    progress) on PostgreSQL, and of COPY of the same rows into tables of the same shape (keys,
    indexes, logged). Each batch is written both ways back to back, in turn first, so that what
    else the server and the machine do weighs on both alike."""
    store = Store(db_url)
    store.upgrade()
    records = [Record(value=line, position=str(i)) for i, line in enumerate(lines)]
    pipeline = Pipeline(SchedulerConfig(), store, clocks=dict.fromkeys(marker_clusters(records), CLOCK_STREAM))
    batches = []
    original = store.write_batch
    store.write_batch = batches.append  # type: ignore[method-assign]  # keep the batches, write later
    for start in range(0, len(records), 500):
        pipeline.process(records[start : start + 500])
    store.write_batch = original  # type: ignore[method-assign]
    rows = sum(len(b.events) + len(b.decisions) + len(b.outbox) + len(b.statuses) for b in batches)
    tables = ("events", "decisions", "outbox", "object_status")
    with psycopg.connect(db_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        # Tables of the same shape as the store's: logged (a TEMP table skips the WAL), with the
        # same keys and indexes (COPY into a bare table skips their upkeep, which ours pays); but
        # no key on the statuses, which ours upserts and plain COPY could only append.
        for table in tables:
            like = "INCLUDING DEFAULTS" if table == "object_status" else "INCLUDING ALL"
            conn.execute(f"DROP TABLE IF EXISTS copy_{table}")
            conn.execute(f"CREATE TABLE copy_{table} (LIKE {table} {like})")
        conn.commit()

        def copy(batch: Any) -> float:
            started = time.perf_counter()
            with conn.transaction(), conn.cursor() as cursor:
                parts = (batch.events, batch.decisions, batch.outbox, list(batch.statuses.values()))
                for table, batch_rows in zip(tables, parts, strict=True):
                    if not batch_rows:
                        continue
                    keys = list(batch_rows[0])
                    names = ", ".join(f'"{k}"' for k in keys)
                    with cursor.copy(f"COPY copy_{table} ({names}) FROM STDIN") as copying:
                        for one in batch_rows:
                            copying.write_row([one[k] for k in keys])
            return time.perf_counter() - started

        def write(batch: Any) -> float:
            started = time.perf_counter()
            store.write_batch(batch)
            return time.perf_counter() - started

        written = copied = 0.0
        for n, batch in enumerate(batches):
            if n % 2:
                copied += copy(batch)
                written += write(batch)
            else:
                written += write(batch)
                copied += copy(batch)
        store.close()
        for table in tables:
            conn.execute(f"DROP TABLE copy_{table}")
        # Leave the database empty: the worker rows run on it next, and must find no events there.
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return rows / written, rows / copied, rows


@contextmanager
def postgres(workdir: Path) -> Iterator[str | None]:
    if os.environ.get("SCHEDSTREAM_BENCH_PG_URL"):
        yield os.environ["SCHEDSTREAM_BENCH_PG_URL"]
        return
    try:
        with LocalPostgres(workdir / "pg") as server:
            yield server.create_database(f"bench_{uuid.uuid4().hex[:8]}")
    except LocalPostgresError as exc:
        print(f"(PostgreSQL rows skipped: {exc})")
        yield None


@contextmanager
def broker(workdir: Path) -> Iterator[str]:
    if os.environ.get("SCHEDSTREAM_KAFKA_BOOTSTRAP"):
        yield os.environ["SCHEDSTREAM_KAFKA_BOOTSTRAP"]
        return
    kafka = LocalKafka(workdir / "kafka")
    try:
        yield kafka.start(timeout=300)  # a busy machine starts it slowly
    finally:
        kafka.stop()


def _worker_row(
    row: Any, store_name: str, bootstrap: str, url: str, *, lines: list[bytes], work: Path, replayed: float | None
) -> None:
    label = f"worker ({store_name}), events/CPU-s (baseline passthrough)"
    try:
        ours, base, faust = worker_rate(bootstrap, url, lines, work)
    except (RuntimeError, subprocess.SubprocessError) as exc:
        row(label, "failed", "", None)
        print(f"  {exc}")
        return
    row(label, f"{ours:,.0f}", f"{base:,.0f}", ours / base)
    row("  Faust's own loop: take_events -> send, events/CPU-s", f"{faust:,.0f}", f"{base:,.0f}", faust / base)
    if replayed is not None and ours / base < TARGETS["worker"]:
        # The worker runs replay's Pipeline on each batch: replay's rate bounds it.
        print(f"  (the same Pipeline as replay, {replayed:,.0f} events/CPU-s above: {1e6 / replayed:,.0f} us of each"
              f" event's {1e6 / ours:,.0f}; Kafka, Faust's loop and the commit take the other"
              f" {max(0.0, 1e6 / ours - 1e6 / replayed):,.0f})")  # fmt: skip


def _latency_rows(row: Any, bootstrap: str, rate: int, *, lines: list[bytes], work: Path, explain: bool) -> None:
    """The two latency rows at ``rate`` events/s; under a p99 short of its target, the worker's window."""
    seconds = 30 if rate <= 500 else 15
    url = f"sqlite:///{work / f'l-{rate}.db'}"
    lat, window = latencies(bootstrap, url, lines, work, rate=rate, seconds=seconds)
    (w50, w99, wn), (p50, p99, _) = lat["worker"], lat["passthrough"]
    row(f"marker -> decision at {rate:,} ev/s, p50 ms ({wn} markers)", f"{w50:,.0f}", f"{p50:,.1f}", None)
    row(f"marker -> decision at {rate:,} ev/s, p99 ms", f"{w99:,.0f}", f"{p99:,.1f}", None)
    if explain and not w99 < (TARGETS["p99 ms"] if rate <= 100 else TARGETS["p99 ms, busy"]):
        print(window.line(), flush=True)


def dlrm_run(trace_file: Path, out_dir: Path) -> str:
    """``schedstream simulate`` of a DLRM trace file into ``out_dir``: its decisions' sha256 (16 hex)."""
    trace, nodes = load(trace_file, "dlrm", None)
    simulate(trace, nodes, SchedulerConfig(), out_dir)
    return golden.sha(out_dir / "decisions.jsonl")


def _dlrm_row(row: Any, work: Path, *, explain: bool) -> None:
    """The whole DLRM trace through ``simulate`` (the closed loop and the three baselines); under
    it, when short of its target, where the first DLRM_PROFILED lines' run spends its time."""
    trace_file = SHARED_DATA / "disaggregated_DLRM_trace.csv"
    if not trace_file.exists():
        print(f"(the DLRM row skipped: no {trace_file})")
        return
    started = time.process_time()
    digest = dlrm_run(trace_file, work / "dlrm")
    cpu = time.process_time() - started
    row(f"whole DLRM trace through simulate: CPU-s (decisions {digest})", f"{cpu:,.0f}", "-", None)
    if explain and cpu > TARGETS["dlrm"]:
        head = work / "dlrm-head.csv"
        head.write_text("\n".join(trace_file.read_text().splitlines()[: DLRM_PROFILED + 1]) + "\n")
        _where(lambda: dlrm_run(head, work / "dlrm-head"), f"on its first {DLRM_PROFILED:,} lines")


def _replay_row(row: Any, lines: list[bytes], *, explain: bool) -> float:
    """The replay row; replay's events per CPU-second."""
    ours, base, cycles = replay_rate(lines)
    row("replay, events/CPU-s (baseline json.loads)", f"{ours:,.0f}", f"{base:,.0f}", ours / base)
    share = sum(cycles) * ours / len(lines)
    print(f"  ({len(cycles):,} cycles, {share:.0%} of the time, {sum(cycles) / len(cycles) * 1e6:,.0f} us each;"
          f" the rest parsing, folding and the store: {(1 - share) / ours * 1e6:,.0f} us per event)")  # fmt: skip
    if explain and ours < TARGETS["replay"]:
        _where(lambda: replay_run(lines))
    return ours


def _where(run: Callable[[], object], note: str = "") -> None:
    """Print where the time of ``run()`` goes (``bench.where``), for a row short of its target."""
    _, found = where.profiled(run)
    print("\n".join(found.lines(note)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip", default="", help="comma-separated rows to leave out")
    parser.add_argument("--rates", default="100,2000", help="events/s of the latency rows (30 s and 15 s of events)")
    args = parser.parse_args()
    gc.set_threshold(*GC_THRESHOLDS)  # as every `schedstream` command runs (replay is measured in this process)
    skip = set(args.skip.split(","))
    rates = [int(rate) for rate in args.rates.split(",")]
    name, lines = openb_stream()
    print(f"stream: {name}: {len(lines):,} events, {len(_markers(lines)):,} SCHEDULE markers\n")
    print(f"{'measure':<58} {'ours':>14} {'baseline':>14} {'ratio':>7}")

    def row(label: str, ours: str, base: str, ratio: float | None) -> None:
        print(f"{label:<58} {ours:>14} {base:>14} {'' if ratio is None else f'{ratio:.3f}':>7}", flush=True)

    explain = "where" not in skip
    replayed = None if "replay" in skip else _replay_row(row, lines, explain=explain)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # PostgreSQL's server runs as its own user, inside it
        with postgres(work) as pg_url:
            if "store" not in skip and pg_url:
                ours_rows, copy_rows, rows = store_rates(pg_url, lines)
                row(f"PG batch transaction, rows/s ({rows:,} rows; baseline COPY)", f"{ours_rows:,.0f}",
                    f"{copy_rows:,.0f}", ours_rows / copy_rows)  # fmt: skip
            if {"worker", "latency"} - skip:
                with broker(work) as bootstrap:
                    stores = {"SQLite": f"sqlite:///{work / 'w.db'}"}
                    if pg_url:
                        stores["PostgreSQL"] = pg_url
                    if "worker" not in skip:
                        for store_name, url in stores.items():
                            _worker_row(row, store_name, bootstrap, url, lines=lines, work=work, replayed=replayed)
                    if "latency" not in skip:
                        for rate in rates:
                            _latency_rows(row, bootstrap, rate, lines=lines, work=work, explain=explain)
    if "cycle" not in skip:
        for unique in (False, True):
            r = cycle.measure(5000, unique_shapes=unique)
            shapes = "one shape per pod" if unique else "two pod shapes"
            row(f"cycle, 5,000 nodes / {r.pods:,} pods, {shapes}: CPU-s (baseline naive*)", f"{r.cpu_seconds:.2f}",
                f"{r.baseline_seconds:.1f}", r.cpu_seconds / r.baseline_seconds)  # fmt: skip
            if explain and r.cpu_seconds > TARGETS["cycle"]:
                _where(cycle.prepared(5000, unique_shapes=unique)[1])
    if "kueue" not in skip:
        result: dict[str, Any] = kueue.run(1.0, 100)
        per = result["scheduler_cpu_s"] / result["admissions"] * 1000
        whole = result["cpu_s"] / result["admissions"] * 1000
        row(f"Kueue shape, {result['admissions']:,} admissions: scheduler CPU ms/admission (Kueue ~9)", f"{per:.2f}",
            "9", per / 9)  # fmt: skip
        print(f"  (the bench process, with its own JSON and digest: {whole:.2f} ms/admission)")
        if explain and per > TARGETS["kueue"]:
            _where(lambda: kueue.run(KUEUE_PROFILED, 100), f"at {KUEUE_PROFILED} of the shape")
    if "dlrm" not in skip:
        with tempfile.TemporaryDirectory() as tmp:
            _dlrm_row(row, Path(tmp), explain=explain)
    print("\n* naive all-pairs first fit (bench/cycle.py), timed on 2,000 pods and scaled; wall seconds")


if __name__ == "__main__":
    main()
