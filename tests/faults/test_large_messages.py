"""Issue 14 item 10 and issue 17 item 2 on the real broker: a 1.4 MB object passes end to end, a
3 MB line goes from `produce` to the DLQ with its reason and the rest is still sent, and an
outbox row the broker refuses is parked without holding back the decisions behind it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import msgspec
import pytest
from sqlalchemy import insert

from ops.run_example import read_topic
from services.pipeline import REJECT_VALUE_LIMIT
from services.store import tables
from services.store.store import Store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "volcano-gang.jsonl"
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")


def _big_pod(name: str, blob: int) -> str:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "big", "uid": f"uid-{name}", "annotations": {"blob": "x" * blob}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"},
    }
    return json.dumps({"type": "ADDED", "cluster": "c1", "object": obj})


@pytest.mark.kafka
def test_a_large_object_passes_a_too_large_line_goes_to_the_dlq_and_a_refused_outbox_row_is_parked(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    db_url = f"sqlite:///{tmp_path / 'worker.db'}"
    env = {
        **os.environ,
        "SCHEDSTREAM_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "SCHEDSTREAM_DB_URL": db_url,
        "SCHEDSTREAM_EVENTS_TOPIC": f"events-{run}",
        "SCHEDSTREAM_DECISIONS_TOPIC": f"decisions-{run}",
        "SCHEDSTREAM_APP_ID": f"large-{run}",
        "SCHEDSTREAM_DATA_DIR": str(tmp_path / "worker"),
        "SCHEDSTREAM_LOG_FORMAT": "json",
    }
    lines = EXAMPLE.read_text().splitlines()
    lines[3:3] = [_big_pod("big-object", 1_400_000), "z" * 3_000_000]  # after the nodes
    stream = tmp_path / "large.jsonl"
    stream.write_text("\n".join(lines) + "\n")
    store = Store(db_url)
    store.upgrade()
    with store.engine.begin() as conn:  # what an older version could leave behind
        conn.execute(insert(tables.outbox), [{"topic": f"decisions-{run}", "key": "", "payload": "y" * 3_000_000}])

    produced = subprocess.run(
        [SCHEDSTREAM, "produce", str(stream)], env=env, check=True, capture_output=True, text=True
    )
    assert f"{stream}:5: message of 3000000 bytes refused by Kafka" in produced.stderr
    assert f"produced {len(lines) - 1} messages" in produced.stderr
    worker = subprocess.run(
        [SCHEDSTREAM, "worker", "--exit-when-idle", "4"], env=env, check=False, capture_output=True, timeout=300
    )
    assert worker.returncode == 0, worker.stderr.decode()[-3000:]

    decisions = [msgspec.json.decode(m) for m in asyncio.run(read_topic(kafka_bootstrap, f"decisions-{run}"))]
    assert any(d["kind"] == "Bind" and d["target"]["name"] == "big-object" for d in decisions)
    assert len(decisions) == store.count("decisions") > 10
    assert store.count("outbox_parked") == 1 and store.count("outbox") == 0
    dlq = [msgspec.json.decode(m) for m in asyncio.run(read_topic(kafka_bootstrap, f"events-{run}.dlq"))]
    too_large = next(r for r in dlq if r["position"] == f"{stream}:5")
    assert too_large["truncated"] and too_large["size"] == 3_000_000
    assert len(too_large["value"]) == REJECT_VALUE_LIMIT
    assert any("invalid quantity 'two'" in r["reason"] for r in dlq)  # the example's own bad line
    store.close()
