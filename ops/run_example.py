"""`make run`: the service end to end on the example stream, then a clean stop.

1. Start the local Kafka broker (or use $SCHEDSTREAM_KAFKA_BOOTSTRAP, starting nothing).
2. Feed examples/volcano-gang.jsonl into the events topic with `schedstream produce`.
3. Run `schedstream worker` on a fresh embedded SQLite store until it has been idle a while.
4. Print the decisions it stored and published, the rejected line from the DLQ, and whether
   they equal `schedstream replay` of the same file; then stop the broker.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgspec
from aiokafka import AIOKafkaConsumer

from ops.local_kafka import LocalKafka

ROOT = Path(__file__).resolve().parent.parent
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")


async def read_topic(bootstrap: str, topic: str, quiet_ms: int = 1500) -> list[bytes]:
    """Every message of a topic, in partition order, read until it has been quiet a moment."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    out: list[bytes] = []
    try:
        while batch := await consumer.getmany(timeout_ms=quiet_ms):
            for _, messages in sorted(batch.items()):
                out.extend(m.value for m in messages if m.value is not None)
    finally:
        await consumer.stop()
    return out


def run(cmd: list[str], env: dict[str, str]) -> None:
    print(f"$ {' '.join(cmd)}", flush=True)
    subprocess.run(cmd, env=env, check=True, cwd=ROOT)


def describe(decision: dict) -> str:
    target = decision["target"]
    name = f"{target.get('namespace', '')}/{target['name']}".lstrip("/")
    if decision["kind"] == "Bind":
        detail = f"-> {decision['node']}"
    elif decision["kind"] == "JobStatus":
        detail = decision["phase"]
    elif decision["kind"] == "QueueStatus":
        allocated = ", ".join(f"{k}={v}" for k, v in decision["allocated"].items()) or "nothing"
        detail = f"{decision['state']}, allocated {allocated}"
    else:
        conditions = decision.get("conditions") or []
        detail = f"{decision.get('phase', '')} {conditions[0]['message'] if conditions else ''}".strip()
    return f"  seq {decision['seq']:>3}  {decision['kind']:<15} {name:<22} {detail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default=str(ROOT / "examples" / "volcano-gang.jsonl"))
    parser.add_argument("--workdir", default=str(ROOT / ".local" / "run"))
    args = parser.parse_args()
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    run_id = str(int(time.time()))
    external = os.environ.get("SCHEDSTREAM_KAFKA_BOOTSTRAP")
    broker = None if external else LocalKafka(workdir / "kafka")
    try:
        if broker is None:
            bootstrap = external or ""
            print(f"Kafka at {bootstrap} (yours)")
        else:
            bootstrap = broker.start()
            print(f"Kafka at {bootstrap} (local, started in {broker.start_seconds:.1f} s)")
        # A broker of your own may hold earlier runs: give this run topics of its own.
        topic = f"cluster-events-{run_id}" if external else "cluster-events"
        env = {
            **os.environ,
            "SCHEDSTREAM_KAFKA_BOOTSTRAP": bootstrap,
            "SCHEDSTREAM_DB_URL": f"sqlite:///{workdir / 'schedstream.db'}",
            "SCHEDSTREAM_DATA_DIR": str(workdir / "worker"),
            "SCHEDSTREAM_EVENTS_TOPIC": topic,
            "SCHEDSTREAM_DECISIONS_TOPIC": f"scheduler-decisions-{run_id}" if external else "scheduler-decisions",
            "SCHEDSTREAM_APP_ID": f"schedstream-run-{run_id}",
            "SCHEDSTREAM_LOG_FORMAT": os.environ.get("SCHEDSTREAM_LOG_FORMAT", "console"),
        }
        run([SCHEDSTREAM, "produce", args.events], env)
        run([SCHEDSTREAM, "worker", "--exit-when-idle", "5"], env)
        published = asyncio.run(read_topic(bootstrap, env["SCHEDSTREAM_DECISIONS_TOPIC"]))
        dlq = asyncio.run(read_topic(bootstrap, f"{topic}.dlq"))
        replayed = workdir / "replay.jsonl"
        run([SCHEDSTREAM, "replay", args.events, "--out", str(replayed)], env)
        expected = replayed.read_bytes().splitlines()
        decisions = [msgspec.json.decode(line) for line in published]
        print(f"\n{len(decisions)} decisions published on {env['SCHEDSTREAM_DECISIONS_TOPIC']}:")
        for decision in decisions:
            print(describe(decision))
        print(f"\n{len(dlq)} line(s) rejected to {topic}.dlq:")
        for line in dlq:
            reject = msgspec.json.decode(line)
            print(f"  {reject['position']}: {reject['reason']}")
        same = published == expected
        print(f"\nidentical to `schedstream replay {Path(args.events).name}`: {'yes' if same else 'NO'}")
        return 0 if same else 1
    finally:
        if broker is not None:
            broker.stop()
            print("local Kafka stopped")


if __name__ == "__main__":
    sys.exit(main())
