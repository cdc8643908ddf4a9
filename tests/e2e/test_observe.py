"""The worker's HTTP surface on the real broker: /readyz turns ready once its partitions are
assigned and restored, /metrics is scraped with Prometheus' own parser, the status page is
rendered by headless Chromium (its DOM read and its screenshot's pixels checked), and the log
written to a file is JSON from the first line to the last."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from services.store.store import Store
from tests import builders as b
from tests.e2e.test_worker import EXAMPLE, ROOT, Deployment, wait_for_decisions
from tests.integration.test_simulate import _chromium
from tests.png import colours
from tests.poisoned_cycle import MESSAGE, SITECUSTOMIZE

GANG_WAITS_AT = 25  # the example's first lines: team-a's gang runs, team-b's eval gang waits for GPUs
READY_BADGE = (42, 125, 42)  # the page's "ready" badge (#2a7d2a)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def metrics_once_consumed(base: str, events: int, timeout: float = 60) -> dict[tuple[str, tuple[Any, ...]], float]:
    """The worker's samples once it counts ``events`` consumed (or at ``timeout``): the batch
    with the decisions a test waits for may be committed before the last events' batch."""
    deadline = time.monotonic() + timeout
    while True:
        status, text = get(f"{base}/metrics")
        assert status == 200
        got = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }
        consumed = sum(v for (name, _), v in got.items() if name == "schedstream_events_consumed_total")
        if consumed >= events or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def wait_until_ready(base: str, timeout: float = 120) -> list[int]:
    """Poll /readyz until 200; returns the statuses seen before (503 while not ready)."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _ = get(f"{base}/readyz")
        except OSError:
            time.sleep(0.1)  # not listening yet
            continue
        if status == 200:
            return seen
        seen.append(status)
        time.sleep(0.1)
    raise AssertionError(f"/readyz never answered 200 (saw {sorted(set(seen))})")


def test_the_worker_serves_readiness_metrics_and_a_status_page_and_logs_json(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    deployment = Deployment(kafka_bootstrap, f"sqlite:///{tmp_path / 'worker.db'}", tmp_path)
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(EXAMPLE.read_bytes().splitlines()[:GANG_WAITS_AT]) + b"\n")
    deployment.schedstream("produce", str(events))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    worker = deployment.start_worker("--metrics-addr", f"127.0.0.1:{port}")
    try:
        before = wait_until_ready(base)
        assert set(before) <= {503}
        wait_for_decisions(Store(deployment.db_url), 8)
        assert get(f"{base}/healthz") == (200, "ok\n")

        got = metrics_once_consumed(base, 24)
        assert got[("volcano_unschedule_task_count", (("cluster", "c1"), ("job_id", "team-b/eval-pg")))] == 2
        assert got[("volcano_queue_allocated_milli_cpu", (("cluster", "c1"), ("queue_name", "default")))] == 16000
        assert got[("schedstream_decisions_total", (("kind", "Bind"),))] == 4
        assert got[("schedstream_rejects_total", (("reason", "invalid Pod"),))] == 1
        assert got[("schedstream_outbox_parked", ())] == 0  # nothing the broker refused
        assert sum(v for (name, _), v in got.items() if name == "schedstream_events_consumed_total") == 24
        assert got[("volcano_e2e_scheduling_latency_milliseconds_count", ())] == 2  # one per SCHEDULE marker
        assert ("schedstream_batch_commit_seconds_count", ()) in got
        assert any(name == "schedstream_consumer_lag" for name, _ in got)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
        browser = [_chromium(), *flags, f"--user-data-dir={tmp_path / 'profile'}"]
        dom = subprocess.run(
            [*browser, "--dump-dom", f"{base}/"], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        waiting = dom[dom.index('id="waiting-c1"') : dom.index("</table>", dom.index('id="waiting-c1"'))]
        assert "<td>team-b/eval-pg</td>" in waiting and "<td>NotEnoughResources</td>" in waiting
        assert 'class="ready"' in dom
        shot = tmp_path / "status.png"
        subprocess.run(
            [*browser, f"--screenshot={shot}", "--window-size=1000,900", f"{base}/"],
            capture_output=True,
            timeout=120,
            check=True,
        )
        width, height, pixels = colours(shot)
        assert (width, height) == (1000, 900)
        assert pixels[READY_BADGE] > 200  # the green badge is drawn
        assert len(pixels) > 20  # text and tables, not a blank page
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)

    log = (tmp_path / f"worker-{deployment.runs}.log").read_text()
    assert "\x1b" not in log
    lines = [json.loads(line) for line in log.splitlines() if line.strip()]
    assert any(line["event"].startswith("serving /metrics") for line in lines)
    assert any(line["event"] == "partitions assigned, state restored" for line in lines)


def _timer_worker(
    kafka_bootstrap: str, tmp_path: Path, lines: list[str], **extra: str
) -> tuple[Deployment, subprocess.Popen[bytes], str]:
    """``lines`` produced to a deployment of their own (``extra``: more of its environment), and
    its worker started with its timer every 0.2 s and /metrics served: the deployment, the
    worker and the base URL, once the worker is ready."""
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(lines) + "\n")
    deployment = Deployment(
        kafka_bootstrap, f"sqlite:///{tmp_path / 'worker.db'}", tmp_path, SCHEDSTREAM_SCHEDULE_PERIOD="0.2", **extra
    )
    deployment.schedstream("produce", str(events))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    worker = deployment.start_worker("--metrics-addr", f"127.0.0.1:{port}")
    try:
        wait_until_ready(base)
    except BaseException:
        worker.kill()
        raise
    return deployment, worker, base


def test_the_timer_writes_no_marker_while_a_waiting_gang_could_not_change_and_counts_them(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A stream without markers (the worker's timer clocks it, every 0.2 s): a node, a gang that
    cannot fit and a lone pod that binds. Once the cycles that wrote the pod's bind and the
    gang's status have run, the timer finds every later marker idle: the store holds only the
    markers /metrics counts as written, a handful, while the idle ones pile up."""
    lines = [
        b.added(b.node("n-0", cpu="4")),
        b.added(b.pod_group("g", min_member=2)),
        *[b.added(b.pod(f"g-{i}", cpu="3", group="g")) for i in range(2)],
        b.added(b.pod("lone", cpu="1")),
    ]
    deployment, worker, base = _timer_worker(kafka_bootstrap, tmp_path, lines)
    try:
        store = Store(deployment.db_url)
        wait_for_decisions(store, 2)
        time.sleep(4)  # twenty periods
        got = metrics_once_consumed(base, len(lines))
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    written = got[("schedstream_timer_markers_total", (("outcome", "written"),))]
    idle = got[("schedstream_timer_markers_total", (("outcome", "idle"),))]
    stored = [payload for _, payload in store.iter_events("c1")]
    assert sum('"SCHEDULE"' in payload for payload in stored) == written <= 4
    assert idle >= 10
    assert store.count("decisions") == 2  # the lone pod's bind, the gang's status


def test_the_timer_backs_off_while_cycles_raise_and_comes_back_when_the_object_changes(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A worker whose cycle raises while a pod named ``poison`` exists (the failure planted by a
    ``sitecustomize`` on its path: no input we know makes a cycle raise), its timer every 0.2 s.
    Each failed cycle is a reject in the DLQ; with nothing else coming, the timer waits one
    period, then two, four...: in 5 s a handful of markers and rejects, not 25. Deleting the
    pod brings a marker at once, and the other pod binds."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    lines = [b.added(b.node("n-0", cpu="4")), b.added(b.pod("poison", cpu="1")), b.added(b.pod("lone", cpu="1"))]
    deployment, worker, base = _timer_worker(kafka_bootstrap, tmp_path, lines, PYTHONPATH=f"{hook}{os.pathsep}{ROOT}")
    try:
        store = Store(deployment.db_url)
        metrics_once_consumed(base, len(lines))
        time.sleep(5)  # twenty-five periods
        got = metrics_once_consumed(base, len(lines))
        reasons = [reason for _, reason in store.rejects()]
        gone = tmp_path / "gone.jsonl"
        gone.write_text(b.deleted(b.pod("poison", cpu="1", rv="2")) + "\n")
        deployment.schedstream("produce", str(gone))
        wait_for_decisions(store, 1, timeout=10)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    written = got[("schedstream_timer_markers_total", (("outcome", "written"),))]
    waited = got[("schedstream_timer_markers_total", (("outcome", "backoff"),))]
    stored = [payload for _, payload in store.iter_events("c1")]
    assert 3 <= written <= 8 and waited >= 15  # 0.2, 0.4, 0.8, 1.6, 3.2 s apart
    # All of them in a row (the last written may not be processed yet when scraped).
    assert written - 1 <= got[("schedstream_cycles_failing", (("cluster", "c1"),))] <= written
    assert written <= len(reasons) <= written + 1  # one failed cycle each (one more may come after the scrape)
    assert all(reason.endswith(f"skipped: ZeroDivisionError: {MESSAGE}") for reason in reasons)
    series = [labels for name, labels in got if name == "schedstream_rejects_total"]
    assert series == [(("reason", "scheduling cycle at seq N failed and was skipped"),)]  # one label, any seq
    assert sum('"SCHEDULE"' in payload for payload in stored) > written  # the marker after the deletion
    (bind,) = [json.loads(payload) for payload in store.decisions()]
    assert (bind["kind"], bind["target"]["name"]) == ("Bind", "lone")
