"""End to end on the real broker: `schedstream produce` -> `schedstream worker` -> the
decisions topic and the database, compared line for line with `schedstream replay`; the DLQ;
the worker's own SCHEDULE markers; and a SIGKILL in the middle of a stream."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import msgspec
import pytest

from ops.run_example import read_topic
from services.store.store import Store
from tests.streams import Shape, synthetic_stream

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "volcano-gang.jsonl"
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")


class Deployment:
    """One isolated worker deployment: its own topics, consumer group and database."""

    def __init__(self, bootstrap: str, db_url: str, workdir: Path, **extra: str) -> None:
        run = uuid.uuid4().hex[:8]
        self.bootstrap = bootstrap
        self.workdir = workdir
        self.runs = 0
        self.db_url = db_url
        self.events_topic = f"events-{run}"
        self.decisions_topic = f"decisions-{run}"
        self.env = {
            **os.environ,
            "SCHEDSTREAM_KAFKA_BOOTSTRAP": bootstrap,
            "SCHEDSTREAM_DB_URL": db_url,
            "SCHEDSTREAM_EVENTS_TOPIC": self.events_topic,
            "SCHEDSTREAM_DECISIONS_TOPIC": self.decisions_topic,
            "SCHEDSTREAM_APP_ID": f"schedstream-test-{run}",
            "SCHEDSTREAM_DATA_DIR": str(workdir / "worker"),
            "SCHEDSTREAM_LOG_FORMAT": "json",
            **extra,
        }

    def schedstream(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SCHEDSTREAM, *args], env=self.env, check=True, capture_output=True, text=True)

    def start_worker(self, *args: str) -> subprocess.Popen[bytes]:
        # The log goes to a file: a pipe nobody reads would fill up and stall the worker.
        self.runs += 1
        with open(self.workdir / f"worker-{self.runs}.log", "wb") as log:
            return subprocess.Popen([SCHEDSTREAM, "worker", *args], env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def run_worker_until_idle(self, idle: float = 4, timeout: float = 120) -> str:
        worker = self.start_worker("--exit-when-idle", str(idle))
        worker.wait(timeout=timeout)
        output = (self.workdir / f"worker-{self.runs}.log").read_text()
        assert worker.returncode == 0, output
        return output

    def topic(self, name: str) -> list[bytes]:
        return asyncio.run(read_topic(self.bootstrap, name))


def wait_for_decisions(store: Store, count: int, timeout: float = 120) -> None:
    """Until the worker has stored ``count`` decisions (the schema may not exist yet at first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            if store.count("decisions") >= count:
                return
        except Exception:
            continue


def assignments(log: Path) -> list[list[int]]:
    """The partitions a worker was given, at each assignment, from its JSON log."""
    lines = [line[line.index("{") :] for line in log.read_text().splitlines() if "partitions assigned, state" in line]
    return [json.loads(line)["partitions"] for line in lines]


def replay_lines(path: Path, tmp_path: Path) -> list[bytes]:
    out = tmp_path / f"{path.stem}.replay.jsonl"
    subprocess.run([SCHEDSTREAM, "replay", str(path), "--out", str(out)], check=True, capture_output=True)
    return out.read_bytes().splitlines()


@pytest.fixture(params=["sqlite", "postgresql"])
def worker_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'worker.db'}"
    return request.getfixturevalue("pg_url")


def test_the_example_stream_gives_the_decisions_of_replay_on_the_topic_and_in_the_database(
    kafka_bootstrap: str, worker_db: str, tmp_path: Path
) -> None:
    deployment = Deployment(kafka_bootstrap, worker_db, tmp_path)
    deployment.schedstream("produce", str(EXAMPLE))
    deployment.run_worker_until_idle()

    expected = replay_lines(EXAMPLE, tmp_path)
    assert len(expected) == 14
    assert deployment.topic(deployment.decisions_topic) == expected
    assert [line.encode() for line in Store(worker_db).decisions()] == expected

    dlq = [msgspec.json.decode(m) for m in deployment.topic(f"{deployment.events_topic}.dlq")]
    assert len(dlq) == 1
    reason = "invalid Pod: invalid quantity 'two' - at `$.object.spec.containers[0].resources.requests[...]`"
    assert dlq[0]["reason"] == reason
    assert '"name": "broken"' in dlq[0]["value"]


def test_a_worker_killed_mid_stream_and_restarted_ends_with_the_decisions_of_an_uninterrupted_run(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    stream = tmp_path / "long.jsonl"
    stream.write_text("\n".join(synthetic_stream(shape=Shape(nodes=30, gangs=400))) + "\n")
    expected = replay_lines(stream, tmp_path)
    db_url = f"sqlite:///{tmp_path / 'worker.db'}"
    # Small batches so the kill lands between commits; the shortest session Kafka allows, so the
    # restarted worker gets the partitions back soon after the dead one's session expires.
    deployment = Deployment(
        kafka_bootstrap,
        db_url,
        tmp_path,
        SCHEDSTREAM_BATCH_SIZE="40",
        SCHEDSTREAM_SESSION_TIMEOUT="6",
        SCHEDSTREAM_SNAPSHOT_EVERY="300",  # the restart restores from a snapshot and folds the tail
    )
    deployment.schedstream("produce", str(stream))

    worker = deployment.start_worker()
    store = Store(db_url)
    wait_for_decisions(store, len(expected) // 3)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    stored_at_kill = store.count("decisions")
    assert 0 < stored_at_kill < len(expected), "the kill must land mid-stream"
    assert store.snapshots(), "the first worker took snapshots"

    deployment.run_worker_until_idle()
    stored = [line.encode() for line in store.decisions()]
    assert stored == expected
    published = deployment.topic(deployment.decisions_topic)
    ids = [msgspec.json.decode(m)["id"] for m in published]
    # At-least-once on the topic: a decision published just before the kill may repeat, never change.
    assert list(dict.fromkeys(published)) == expected
    assert set(ids) == {msgspec.json.decode(m)["id"] for m in expected}


def test_the_worker_writes_schedule_markers_and_a_replay_of_the_stored_stream_repeats_its_cycles(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    stream = tmp_path / "no-markers.jsonl"
    stream.write_text("\n".join(synthetic_stream(shape=Shape(nodes=4, gangs=12, marker_every=None))) + "\n")
    db_url = f"sqlite:///{tmp_path / 'worker.db'}"
    deployment = Deployment(kafka_bootstrap, db_url, tmp_path, SCHEDSTREAM_SCHEDULE_PERIOD="0.2")
    deployment.schedstream("produce", str(stream))
    deployment.run_worker_until_idle(idle=3)

    store = Store(db_url)
    stored = tmp_path / "stored.jsonl"
    stored.write_text("\n".join(payload for _, payload in store.iter_events("c1")) + "\n")
    markers = stored.read_text().count('"SCHEDULE"')
    assert markers >= 1
    assert replay_lines(stored, tmp_path) == [line.encode() for line in store.decisions()]
    assert deployment.topic(deployment.decisions_topic) == [line.encode() for line in store.decisions()]


def test_two_clusters_on_their_own_partitions_each_get_the_decisions_of_replay(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    lines = synthetic_stream("east", Shape(nodes=4, gangs=20)) + synthetic_stream("west", Shape(nodes=3, gangs=20))
    stream = tmp_path / "two.jsonl"
    stream.write_text("\n".join(lines) + "\n")
    db_url = f"sqlite:///{tmp_path / 'worker.db'}"
    deployment = Deployment(kafka_bootstrap, db_url, tmp_path)
    deployment.schedstream("produce", str(stream))
    deployment.run_worker_until_idle()

    store = Store(db_url)
    partitions = {cluster: partition for cluster, (_, _, partition) in store.clusters().items()}
    assert partitions == {"east": 2, "west": 1}  # the producer's murmur2 hash of each key, 4 partitions
    replayed = [msgspec.json.decode(line) for line in replay_lines(stream, tmp_path)]
    for cluster in ("east", "west"):
        want = [d for d in replayed if d["cluster"] == cluster]
        assert want, cluster
        assert [msgspec.json.decode(p) for p in store.decisions(cluster)] == want


def test_a_consumer_group_ahead_of_its_store_stops_the_worker_instead_of_skipping_events(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    first = Deployment(kafka_bootstrap, f"sqlite:///{tmp_path / 'first.db'}", tmp_path)
    first.schedstream("produce", str(EXAMPLE))
    first.run_worker_until_idle()
    # The same group, a store that has seen nothing (a restored backup, a wrong URL).
    second = Deployment(kafka_bootstrap, f"sqlite:///{tmp_path / 'second.db'}", tmp_path)
    second.env.update({k: first.env[k] for k in ("SCHEDSTREAM_EVENTS_TOPIC", "SCHEDSTREAM_APP_ID")})
    worker = second.start_worker("--exit-when-idle", "4")
    assert worker.wait(timeout=120) == 78
    assert "the consumer group is ahead of the store" in (tmp_path / f"worker-{second.runs}.log").read_text()


# A budget used up by every batch's first record: each batch leaves the rest of its fetch to
# the next, so a rebalance always finds messages fetched and not yet handled.
@pytest.mark.parametrize("budget", ["0.05", "0.000001"], ids=["default-budget", "one-record-a-batch"])
def test_two_workers_in_one_group_split_the_partitions_and_a_rebalance_mid_stream_loses_or_repeats_nothing(
    kafka_bootstrap: str, pg_url: str, tmp_path: Path, budget: str
) -> None:
    lines = synthetic_stream("east", Shape(nodes=20, gangs=150)) + synthetic_stream("west", Shape(nodes=20, gangs=150))
    stream = tmp_path / "two.jsonl"
    stream.write_text("\n".join(lines) + "\n")
    expected = [msgspec.json.decode(line) for line in replay_lines(stream, tmp_path)]
    deployment = Deployment(
        kafka_bootstrap,
        pg_url,
        tmp_path,
        SCHEDSTREAM_BATCH_SIZE="40",
        SCHEDSTREAM_SESSION_TIMEOUT="6",
        SCHEDSTREAM_SNAPSHOT_EVERY="500",
        SCHEDSTREAM_BATCH_BUDGET=budget,
    )
    deployment.schedstream("produce", str(stream))

    first = deployment.start_worker("--exit-when-idle", "5")
    store = Store(pg_url)
    wait_for_decisions(store, len(expected) // 4)
    # A second member joins the group mid-stream: the partitions are split between the two, and
    # whoever gets a partition rebuilds its clusters from the store before reading on.
    second = deployment.start_worker("--exit-when-idle", "5")
    assert first.wait(timeout=180) == 0
    assert second.wait(timeout=180) == 0
    assigned = [assignments(tmp_path / f"worker-{run}.log") for run in (1, 2)]
    assert assigned[0][0] == [0, 1, 2, 3], "the first worker owned every partition until the second joined"
    assert any(0 < len(p) < 4 for p in assigned[1]), f"the second worker got a share of the partitions: {assigned}"
    assert [msgspec.json.decode(line) for line in store.decisions()] == sorted(
        expected, key=lambda d: (d["cluster"], d["seq"])
    ), "the store holds each decision once, as replay made it"
    published = [msgspec.json.decode(m) for m in deployment.topic(deployment.decisions_topic)]
    for cluster in ("east", "west"):
        want = [d for d in expected if d["cluster"] == cluster]
        got = [d for d in published if d["cluster"] == cluster]
        # At-least-once: both relays may publish a row before either deletes it; first copies keep order.
        assert list({d["id"]: d for d in got}.values()) == want
