"""The fault suite (issue 17): real broker, real PostgreSQL, real `schedstream worker` processes,
faults injected at seeded moments, and every run compared with `replay` of the same stream.

    .venv/bin/python -m tests.faults.suite --full [--seed N]    # make faults: 100k+ events, 20 kills
    .venv/bin/python -m tests.faults.suite [--seed N]           # the short version (also in make test)

A scenario produces one stream (4 or 16 clusters, poison lines, a flood of bad lines, a 1.4 MB
object, a 1.9 MB bad line and a 3 MB line) into fresh topics, runs workers under a supervisor
that restarts any that die (as Kubernetes would), while an injector thread works through the
scenario's faults. Then it counts, against the replay: decisions expected, stored, published,
missing, extra, conflicting (same id, other content), repeats on the topic (allowed: consumers
de-duplicate by id), and the DLQ. ``FAULTS`` is the list of fault kinds: the live-cluster
branches add theirs (SIGKILL of watch and apply, a 410 by etcd compaction) there.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from sqlalchemy import insert

from domain.scheduler.config import SchedulerConfig
from ops.local_kafka import LocalKafka
from ops.local_postgres import LocalPostgres
from ops.run_example import read_topic
from services.record_files import read_records
from services.replay import replay_records
from services.store import tables
from services.store.store import Store
from tests.faults.test_poison import NASTY
from tests.streams import Shape, synthetic_stream

ROOT = Path(__file__).resolve().parents[2]
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")
IDLE = "3"  # --exit-when-idle of every worker


@dataclass(frozen=True)
class Size:
    """How big a run is: the short one runs in `make test`, the full one in `make faults`."""

    clusters: int
    gangs: int  # per cluster; ~9 events a gang (a cluster's cost grows faster than its length)
    flood: int  # bad lines in one burst
    kills: int
    outage: float  # seconds the broker or PostgreSQL is away
    timeout: float  # for one scenario


SHORT = Size(clusters=4, gangs=550, flood=10_000, kills=5, outage=10, timeout=900)
FULL = Size(clusters=16, gangs=700, flood=10_000, kills=20, outage=30, timeout=3_600)


@dataclass(frozen=True)
class Scenario:
    name: str
    faults: tuple[str, ...]
    workers: int = 1


def scenarios(size: Size) -> list[Scenario]:
    """The full suite: every fault in one long run of two workers (the kills pick either), then a
    clean run of the same stream to compare the time with (the poison lines, the flood and the
    large lines are in every stream)."""
    kills = ("kill-worker",) * size.kills
    half = len(kills) // 2
    outages = ("broker-stop", "broker-kill", "postgres-outage")
    return [
        Scenario("every fault, two workers", (*kills[:half], *outages, *kills[half:]), workers=2),
        Scenario("clean", ()),
    ]


def short_scenarios(size: Size) -> list[Scenario]:
    """Every fault once, in two runs (the poison lines, the flood and the large lines are in
    every stream)."""
    kills = ("kill-worker",) * size.kills
    return [
        Scenario("every fault in one run", (*kills[:3], "broker-stop", "broker-kill", "postgres-outage", *kills[3:])),
        Scenario("two workers, one killed", ("kill-worker",), workers=2),
    ]


# ------------------------------------------------------------------------------ the stream


def _pod_line(cluster: str, name: str, *, cpu: str, annotation: int) -> str:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "big", "uid": f"uid-{name}", "annotations": {"blob": "x" * annotation}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": "Pending"},
    }
    return json.dumps({"type": "ADDED", "cluster": cluster, "object": obj})


def build_stream(path: Path, size: Size) -> int:
    """Write the scenario stream; returns its line count."""
    streams = [synthetic_stream(f"c{i}", Shape(nodes=30, gangs=size.gangs)) for i in range(size.clusters)]
    lines = [line for group in itertools.zip_longest(*streams) for line in group if line]
    bad = [line.decode(errors="replace") if b"\n" not in line else "{" for _, line in NASTY]
    step = max(1, len(lines) // (len(bad) + 1))
    for n, line in enumerate(bad, start=1):
        lines.insert(n * step + n, line)
    middle = len(lines) // 2
    flood = [f'{{"type": "ADDED", "cluster": "c{n % 4}", "object": {{"kind": {n}}}}}' for n in range(size.flood)]
    lines[middle:middle] = flood
    # A 1.4 MB object passes end to end (c0 has free nodes at its start); a 1.9 MB bad line is a
    # reject whose DLQ record is capped; a 3 MB line is over the message limit: produce sends it
    # to the DLQ itself.
    lines.insert(40, _pod_line("c0", "big-object", cpu="1", annotation=1_400_000))
    lines.insert(60, _pod_line("c1", "big-reject", cpu="1E1000000000", annotation=1_900_000))
    lines.insert(80, "z" * 3_000_000)
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


@dataclass
class Truth:
    decisions: dict[str, bytes]  # id -> the decision's JSON, from replay
    rejects: int


def replay_truth(path: Path) -> Truth:
    out = io.BytesIO()
    summary = replay_records(read_records([str(path)]), out, config=SchedulerConfig())
    decisions = {msgspec.json.decode(line)["id"]: line for line in out.getvalue().splitlines()}
    return Truth(decisions, len(summary.rejects))


# ------------------------------------------------------------------------------ servers


class ServersUnavailable(RuntimeError):
    """The broker or PostgreSQL could not be started at all (not a fault of the suite's)."""


class Environment:
    """A broker and a PostgreSQL server of the suite's own: faults stop and kill them."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.kafka = LocalKafka(workdir / "kafka")
        # A short path: the server's unix socket lives in it.
        self.pg_dir = Path(tempfile.mkdtemp(prefix="ss-faults-pg-"))
        self.pg = LocalPostgres(self.pg_dir)
        self.bootstrap = ""

    def start(self) -> None:
        self.bootstrap = self.kafka.start()
        self.pg.start()

    def stop(self) -> None:
        try:
            self.kafka.stop()
        finally:
            self.pg.stop()
            shutil.rmtree(self.pg_dir, ignore_errors=True)


# ------------------------------------------------------------------------------ one run


@dataclass
class Outcome:
    scenario: str
    events: int
    faults: list[str] = field(default_factory=list)
    expected: int = 0
    stored: int = 0
    published: int = 0
    missing: int = 0
    extra: int = 0
    conflicting: int = 0
    repeats: int = 0
    dlq: int = 0
    dlq_expected: int = 0
    parked: int = 0
    restarts: int = 0
    early_exits: int = 0  # a worker exited "idle" with the store incomplete and no other worker up
    kafka_error_lines: int = 0  # warnings and errors of the Kafka client in the workers' logs
    seconds: float = 0.0
    complete: bool = False

    @property
    def ok(self) -> bool:
        return (
            self.complete
            and self.missing == self.extra == self.conflicting == self.early_exits == 0
            and self.dlq == self.dlq_expected
            and self.parked == 1
        )


class Deployment:
    """Topics, consumer group and database of one scenario; its worker slots and supervisor."""

    def __init__(self, env: Environment, scenario: Scenario, workdir: Path, truth: Truth) -> None:
        run = uuid.uuid4().hex[:8]
        self.env = env
        self.scenario = scenario
        self.workdir = workdir
        self.truth = truth
        self.db_url = env.pg.create_database(f"faults_{run}")
        self.events_topic = f"events-{run}"
        self.decisions_topic = f"decisions-{run}"
        self.environ = {
            **os.environ,
            "SCHEDSTREAM_KAFKA_BOOTSTRAP": env.bootstrap,
            "SCHEDSTREAM_DB_URL": self.db_url,
            "SCHEDSTREAM_DB_WAIT": "300",
            "SCHEDSTREAM_EVENTS_TOPIC": self.events_topic,
            "SCHEDSTREAM_DECISIONS_TOPIC": self.decisions_topic,
            "SCHEDSTREAM_APP_ID": f"faults-{run}",
            "SCHEDSTREAM_LOG_FORMAT": "json",
            "SCHEDSTREAM_SESSION_TIMEOUT": "6",
            "SCHEDSTREAM_SNAPSHOT_EVERY": "2000",
            "SCHEDSTREAM_BATCH_SIZE": "200",
        }
        self.slots: list[subprocess.Popen[bytes] | None] = [None] * scenario.workers
        self.slot_logs: list[Path] = [workdir] * scenario.workers
        self.logs: list[Path] = []
        self.lock = threading.Lock()
        self.outcome = Outcome(scenario.name, 0)
        self.store = Store(self.db_url)  # the supervisor's view of progress

    def produce(self, stream: Path) -> None:
        subprocess.run([SCHEDSTREAM, "produce", str(stream)], env=self.environ, check=True, capture_output=True)

    def plant_unsendable_outbox_row(self) -> None:
        """A DLQ row over the message limit, as an older version could leave: it must be parked."""
        store = Store(self.db_url)
        store.upgrade()
        with store.engine.begin() as conn:
            conn.execute(
                insert(tables.outbox), [{"topic": f"{self.events_topic}.dlq", "key": "", "payload": "x" * 3_000_000}]
            )
        store.close()

    def start(self, slot: int) -> None:
        log = self.workdir / f"worker-{len(self.logs)}.log"
        self.logs.append(log)
        self.slot_logs[slot] = log
        with open(log, "wb") as out:
            self.slots[slot] = subprocess.Popen(
                [SCHEDSTREAM, "worker", "--exit-when-idle", IDLE],
                env={**self.environ, "SCHEDSTREAM_DATA_DIR": str(self.workdir / f"data-{slot}")},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def store_complete(self) -> bool | None:
        """Whether the store holds every decision with none left to publish; None while
        PostgreSQL cannot say (an outage the injector made)."""
        try:
            return self.store.count("decisions") >= len(self.truth.decisions) and not self.store.pending_outbox(1)
        except Exception:
            return None

    def supervise(self, injector: threading.Thread, timeout: float) -> None:
        """Keep the worker slots running (restart what dies) until the faults are done and
        every worker has exited idle with the store complete."""
        try:
            self._supervise(injector, timeout)
        finally:
            with self.lock:
                for proc in self.slots:
                    if proc is not None and proc.poll() is None:
                        proc.kill()
                        proc.wait()

    def _supervise(self, injector: threading.Thread, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.lock:
            for slot in range(len(self.slots)):
                self.start(slot)
        while time.monotonic() < deadline:
            time.sleep(1)
            with self.lock:
                running = [p for p in self.slots if p is not None and p.poll() is None]
                for slot, proc in enumerate(self.slots):
                    if proc is None or proc.poll() is None:
                        continue
                    if proc.returncode != 0:  # killed, or stopped on a failure: restart it
                        self.outcome.restarts += 1
                        self.start(slot)
                        continue
                    complete = self.store_complete() if not running else True
                    if complete is None:  # an idle exit while PostgreSQL is away: judge it when it is back
                        continue
                    self.slots[slot] = None
                    if not complete:  # "idle" with work left: a bug
                        self.outcome.early_exits += 1
                        self.start(slot)
                    elif not running and injector.is_alive():  # done early; faults still to come
                        self.start(slot)
                if not injector.is_alive() and all(p is None for p in self.slots) and self.store_complete():
                    self.outcome.complete = True
                    return

    def kill_worker(self, rng: random.Random) -> str:
        with self.lock:
            live = [(slot, p) for slot, p in enumerate(self.slots) if p is not None and p.poll() is None]
            if not live:
                return "kill-worker (no worker up)"
            slot, proc = rng.choice(live)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            restored = "state restored" in self.slot_logs[slot].read_text(errors="replace")
        return "kill-worker" if restored else "kill-worker (during start-up/restore)"

    def measure(self) -> None:
        o = self.outcome
        truth = self.truth.decisions
        stored = {msgspec.json.decode(p)["id"]: p.encode() for p in self.store.decisions()}
        o.parked = self.store.count("outbox_parked")
        self.store.close()
        topic = asyncio.run(read_topic(self.env.bootstrap, self.decisions_topic))
        published = {msgspec.json.decode(m)["id"]: m for m in topic}
        dlq = asyncio.run(read_topic(self.env.bootstrap, f"{self.events_topic}.dlq"))
        o.expected, o.stored, o.published = len(truth), len(stored), len(published)
        o.missing = len(set(truth) - set(stored) | set(truth) - set(published))
        o.extra = len((set(stored) | set(published)) - set(truth))
        o.conflicting = sum(
            1 for got in (stored, published) for i, line in got.items() if i in truth and line != truth[i]
        )
        o.repeats = len(topic) - len(published)
        o.dlq = len({msgspec.json.decode(m)["position"] for m in dlq})
        o.dlq_expected = self.truth.rejects  # the planted row is parked, not published
        o.kafka_error_lines = sum(  # Faust's and aiokafka's own lines (ours are JSON)
            1
            for log in self.logs
            for line in log.read_text(errors="replace").splitlines()
            if "] [ERROR] " in line or "] [WARNING] " in line
        )


Fault = Callable[[Deployment, random.Random, Size], str]


def _broker_stop(d: Deployment, _rng: random.Random, size: Size) -> str:
    d.env.kafka.stop()
    time.sleep(size.outage)
    d.env.kafka.start()
    return "broker-stop"


def _broker_kill(d: Deployment, _rng: random.Random, size: Size) -> str:
    info = d.env.kafka.status()
    if info is not None:
        os.killpg(info.pid, signal.SIGKILL)
    time.sleep(size.outage)
    d.env.kafka.start()
    return "broker-kill"


def _postgres_outage(d: Deployment, _rng: random.Random, size: Size) -> str:
    d.env.pg.stop()
    time.sleep(size.outage)
    d.env.pg.start()
    return "postgres-outage"


# The fault kinds: name -> what injecting it does. Extend here (watcher, applier, etcd 410).
FAULTS: dict[str, Fault] = {
    "kill-worker": lambda d, rng, _size: d.kill_worker(rng),
    "broker-stop": _broker_stop,
    "broker-kill": _broker_kill,
    "postgres-outage": _postgres_outage,
}


def run_scenario(env: Environment, scenario: Scenario, stream: Path, truth: Truth, *, size: Size, seed: int) -> Outcome:
    workdir = env.workdir / scenario.name.replace(" ", "-").replace("/", "-").replace(",", "")
    workdir.mkdir(parents=True, exist_ok=True)
    deployment = Deployment(env, scenario, workdir, truth)
    deployment.outcome.events = sum(1 for _ in stream.open("rb"))
    deployment.plant_unsendable_outbox_row()
    deployment.produce(stream)
    rng = random.Random(f"{seed}:{scenario.name}")

    def inject() -> None:
        for name in scenario.faults:
            time.sleep(rng.uniform(0.5, 12.0))  # a worker takes ~6 s to get its partitions back
            deployment.outcome.faults.append(FAULTS[name](deployment, rng, size))

    injector = threading.Thread(target=inject, name="injector")
    started = time.monotonic()
    injector.start()
    deployment.supervise(injector, size.timeout)
    injector.join()
    deployment.outcome.seconds = time.monotonic() - started
    deployment.measure()
    return deployment.outcome


def table(outcomes: list[Outcome], clean: float | None) -> str:
    head = (
        "| scenario | faults injected | expected | stored | published | missing | extra | conflicting "
        "| repeats | DLQ (expected) | parked | restarts | early idle exits | Kafka client log lines | time |"
    )
    rows = [head, "|" + "---|" * 15]
    for o in outcomes:
        kinds = Counter(o.faults)
        faults = ", ".join(f"{n}x {k}" for k, n in sorted(kinds.items())) or "none"
        time_cell = f"{o.seconds:.0f} s" + (f" ({o.seconds / clean:.1f}x clean)" if clean else "")
        rows.append(
            f"| {o.scenario} | {faults} | {o.expected} | {o.stored} | {o.published} | {o.missing} | {o.extra} "
            f"| {o.conflicting} | {o.repeats} | {o.dlq} ({o.dlq_expected}) | {o.parked} | {o.restarts} "
            f"| {o.early_exits} | {o.kafka_error_lines} | {time_cell} |"
        )
    return "\n".join(rows)


def run_suite(
    workdir: Path,
    size: Size,
    chosen: list[Scenario],
    seed: int,
    report: Callable[[str], None],
    *,
    require_servers: bool = True,
) -> list[Outcome]:
    """Run ``chosen`` and report each outcome and the table. ``require_servers=False``: raise
    ServersUnavailable when the broker or PostgreSQL cannot be started (the test then skips)."""
    report(f"fault suite: seed {seed}")
    workdir.mkdir(parents=True, exist_ok=True)
    stream = workdir / "stream.jsonl"
    lines = build_stream(stream, size)
    started = time.monotonic()
    truth = replay_truth(stream)
    took = time.monotonic() - started
    report(f"stream: {lines} lines; replay: {len(truth.decisions)} decisions, {truth.rejects} rejects in {took:.0f} s")
    env = Environment(workdir)
    outcomes = []
    try:
        try:
            env.start()
        except Exception as exc:
            if require_servers:
                raise
            raise ServersUnavailable(str(exc)) from exc
        for scenario in chosen:
            outcome = run_scenario(env, scenario, stream, truth, size=size, seed=seed)
            report(f"{scenario.name}: {'ok' if outcome.ok else 'FAILED'} {outcome}")
            outcomes.append(outcome)
            clean = next((o.seconds for o in outcomes if o.scenario == "clean"), None)
            report(table(outcomes, clean))
    finally:
        env.stop()
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="100k+ events, 20 kills, every fault")
    parser.add_argument("--seed", type=int, default=None, help="seed of the fault moments (default: random, printed)")
    parser.add_argument("--single", action="store_true", help="only the run with every fault and two workers")
    parser.add_argument("--dir", type=Path, default=ROOT / ".local" / "faults")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on the way out
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    size = FULL if args.full else SHORT
    chosen = scenarios(size)[:1] if args.single else scenarios(size) if args.full else short_scenarios(size)
    shutil.rmtree(args.dir, ignore_errors=True)
    outcomes = run_suite(args.dir, size, chosen, seed, lambda text: print(text, flush=True))
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
