"""The worker's observation surface without Kafka: metrics and the status page read from a
state folded by the real engine, and the HTTP endpoints served over loopback by aiohttp."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from domain import engine as engine_module
from domain.engine import Engine
from domain.events import InvalidEvent, parse_event
from domain.scheduler.config import SchedulerConfig
from services.observe.metrics import reject_class
from services.observe.observer import Observer
from services.observe.page import render
from services.observe.server import make_app, parse_addr
from tests import builders as b
from tests.poisoned_cycle import poisoned
from tests.scenarios.test_scenarios import load

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "volcano-gang.jsonl"
KUEUE_PORT = ROOT / "tests" / "scenarios" / "kueue-port"
KUEUE_FULL = KUEUE_PORT / "001-single-cluster-queue-full" / "events.jsonl"
KUEUE_ADMITS = KUEUE_PORT / "002-admit-in-different-cohorts" / "events.jsonl"
BACKFILL = ROOT / "tests" / "scenarios" / "backfill"
HELD = BACKFILL / "005-held-room-keeps-a-later-job-off-the-free-node"
LENT = BACKFILL / "004-runtime-history-lends-held-room-to-a-user-whose-runs-end-first"
GANG_WAITS_AT = 25  # the example's first lines: team-a's gang runs, team-b's eval gang waits for GPUs


def observed(lines: list[bytes], config: SchedulerConfig | None = None) -> Observer:
    engine = Engine(config or SchedulerConfig(), on_markers=lambda _: True)
    observer = Observer(engine.clusters.values)
    for line in lines:
        try:
            event = parse_event(line)
        except InvalidEvent as exc:
            observer.batch(0, events=0, decisions=[], rejects=[str(exc)], seconds=0.001, lag=None)
            continue
        processed = engine.handle(event)
        observer.batch(0, events=1, decisions=processed.decisions, rejects=[], seconds=0.001, lag=3)
    observer.assigned(True)
    return observer


def samples(observer: Observer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(observer.metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_volcano_metrics_show_the_waiting_gang_and_what_the_queue_holds() -> None:
    got = samples(observed(EXAMPLE.read_bytes().splitlines()[:GANG_WAITS_AT]))
    queue = (("cluster", "c1"), ("queue_name", "default"))
    assert got[("volcano_queue_allocated_milli_cpu", queue)] == 16000  # 4 workers x 4 cpu
    assert got[("volcano_queue_allocated_scalar_resources", (*queue, ("resource", "nvidia.com/gpu")))] == 8000
    assert got[("volcano_unschedule_job_count", (("cluster", "c1"),))] == 1
    assert got[("volcano_unschedule_task_count", (("cluster", "c1"), ("job_id", "team-b/eval-pg")))] == 2
    assert got[("volcano_schedule_attempts_total", (("result", "scheduled"),))] == 4
    assert got[("volcano_schedule_attempts_total", (("result", "unschedulable"),))] == 1
    assert got[("schedstream_decisions_total", (("kind", "Bind"),))] == 4
    assert got[("schedstream_consumer_lag", (("partition", "0"),))] == 3
    assert got[("schedstream_rejects_total", (("reason", "invalid Pod"),))] == 1


def test_a_cluster_whose_cycles_raise_shows_on_the_page_and_as_a_gauge(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cycles made to raise while a pod named ``poison`` exists: after two failed markers the
    status page says so in the cluster's section and ``schedstream_cycles_failing`` is 2; once
    the pod is gone and a cycle runs to its end, the line goes and the gauge is 0."""
    monkeypatch.setattr(engine_module, "run_cycle", poisoned(engine_module.run_cycle))
    engine = Engine(SchedulerConfig(), on_markers=lambda _: True)
    observer = Observer(engine.clusters.values, engine.failing)
    for line in [b.added(b.node("n-0", cpu="4")), b.added(b.pod("poison", cpu="1")), b.marker(1), b.marker(2)]:
        engine.handle(parse_event(line))
    html = render(observer)
    assert '<p class="failing" id="failing-c1">2 scheduling cycles in a row raised' in html
    assert f"the last at {b.iso(2)}" in html
    assert samples(observer)[("schedstream_cycles_failing", (("cluster", "c1"),))] == 2
    for line in [b.deleted(b.pod("poison", cpu="1", rv="2")), b.marker(3)]:
        engine.handle(parse_event(line))
    assert 'class="failing"' not in render(observer)
    assert samples(observer)[("schedstream_cycles_failing", (("cluster", "c1"),))] == 0


def test_kueue_metrics_show_usage_against_quota_and_the_inadmissible_workload() -> None:
    got = samples(observed(KUEUE_FULL.read_bytes().splitlines()))
    quota = (("cluster", "c1"), ("cluster_queue", "sales"), ("cohort", ""), ("flavor", "default"))
    quota += (("replica_role", "standalone"), ("resource", "cpu"))
    assert got[("kueue_cluster_queue_resource_usage", quota)] == 40
    assert got[("kueue_cluster_queue_nominal_quota", quota)] == 50
    pending = (("cluster", "c1"), ("cluster_queue", "sales"), ("replica_role", "standalone"))
    assert got[("kueue_pending_workloads", (*pending, ("status", "inadmissible")))] == 1
    assert got[("kueue_pending_workloads", (*pending, ("status", "active")))] == 0
    assert got[("kueue_admitted_active_workloads", pending)] == 1
    assert got[("kueue_admission_attempts_total", (("replica_role", "standalone"), ("result", "inadmissible")))] == 1


def test_kueue_admissions_are_counted_per_cluster_queue() -> None:
    got = samples(observed(KUEUE_ADMITS.read_bytes().splitlines()))
    role = ("replica_role", "standalone")
    assert got[("kueue_admission_attempts_total", (role, ("result", "success")))] == 2
    for queue in ("sales", "eng-alpha"):
        assert got[("kueue_admitted_workloads_total", (("cluster_queue", queue), role))] == 1
        assert got[("kueue_admitted_active_workloads", (("cluster", "c1"), ("cluster_queue", queue), role))] == 1


def test_the_status_page_lists_queues_the_waiting_gang_with_its_reason_and_recent_decisions() -> None:
    html = render(observed(EXAMPLE.read_bytes().splitlines()[:GANG_WAITS_AT]))
    assert '<meta http-equiv="refresh"' in html
    assert "http://" not in html and "<script" not in html  # self-contained
    waiting = html[html.index('id="waiting-c1"') : html.index("</table>", html.index('id="waiting-c1"'))]
    assert "<td>team-b/eval-pg</td>" in waiting
    assert "<td>NotEnoughResources</td>" in waiting
    queues = html[html.index('id="queues-c1"') : html.index("</table>", html.index('id="queues-c1"'))]
    assert "cpu: 16, memory: 64Gi, nvidia.com/gpu: 8" in queues
    assert html.count("<td>Bind</td>") == 4


@pytest.mark.parametrize(
    ("reason", "want"),
    [
        ("not JSON: unexpected character: line 1, column 1", "not JSON"),
        ("invalid Pod: invalid quantity 'two' - at `$.object.spec`", "invalid Pod"),
        ("object lacks `metadata.name` - at `$.object.metadata.name`", "object lacks `metadata.name`"),
        (
            "scheduling cycle at seq 31234 failed and was skipped: KeyError: 'ns/p'",
            "scheduling cycle at seq N failed and was skipped",
        ),
        ("invalid batch.volcano.sh/v1alpha1 Job: expected int", "invalid batch.volcano.sh/v1alpha1 Job"),
    ],
    ids=["not json", "invalid object", "missing name", "failed cycle", "version digits kept"],
)
def test_a_reject_reason_loses_its_detail_to_stay_a_bounded_label(reason: str, want: str) -> None:
    assert reject_class(reason) == want


@pytest.mark.parametrize(
    ("addr", "want"), [("127.0.0.1:9090", ("127.0.0.1", 9090)), (":9090", ("0.0.0.0", 9090)), ("[::1]:80", ("::1", 80))]
)
def test_metrics_addr_is_host_and_port(addr: str, want: tuple[str, int]) -> None:
    assert parse_addr(addr) == want


@pytest.mark.parametrize("addr", ["9090", "localhost:http", "127.0.0.1:70000"])
def test_a_bad_metrics_addr_is_refused(addr: str) -> None:
    with pytest.raises(ValueError, match="is not HOST:PORT"):
        parse_addr(addr)


def test_the_endpoints_answer_over_http() -> None:
    observer = observed(EXAMPLE.read_bytes().splitlines()[:GANG_WAITS_AT])

    async def scrape() -> dict[str, tuple[int, str]]:
        async with TestClient(TestServer(make_app(observer))) as client:
            out = {}
            for path in ("/metrics", "/healthz", "/readyz", "/"):
                response = await client.get(path)
                out[path] = (response.status, await response.text())
            observer.assigned(False)
            response = await client.get("/readyz")
            out["not ready"] = (response.status, await response.text())
            return out

    got = asyncio.run(scrape())
    assert got["/metrics"][0] == 200 and "volcano_queue_allocated_milli_cpu" in got["/metrics"][1]
    assert got["/healthz"] == (200, "ok\n")
    assert got["/readyz"] == (200, "ready\n")
    assert got["/"][0] == 200 and "team-b/eval-pg" in got["/"][1]
    assert got["not ready"][0] == 503


def scenario(folder: Path) -> tuple[list[bytes], SchedulerConfig]:
    return (folder / "events.jsonl").read_bytes().splitlines(), load(folder).config


def test_room_held_for_a_gang_past_its_bound_is_a_gauge_and_a_row_of_the_page() -> None:
    lines, config = scenario(HELD)
    observer = observed(lines, config)
    got = samples(observer)
    gang = (("cluster", "default"), ("podgroup", "default/b"))
    assert got[("schedstream_held_room_milli_cpu", gang)] == 4000  # n1, kept from c
    assert got[("schedstream_held_room_nodes", gang)] == 2  # and a pod slot of n0, where a-0 runs
    assert ("schedstream_held_room_starts_by_timestamp_seconds", gang) not in got  # no runtimes: no shadow time
    html = render(observer)
    held = html[html.index('id="held-default"') : html.index("</table>", html.index('id="held-default"'))]
    assert "<td>default/b</td><td>2</td><td>cpu: 4, pods: 2</td><td>-</td>" in held


def test_a_gang_holding_room_on_a_runtime_history_shows_by_when_it_starts() -> None:
    lines, config = scenario(LENT)
    got = samples(observed(lines[:14], config))  # through the 60 s cycle: the gang holds n-1
    gang = (("cluster", "c1"), ("podgroup", "team/gang"))
    starts = datetime(2026, 1, 1, 0, 1, 42, tzinfo=UTC).timestamp()  # v-long started at 52, runs 50 s
    assert got[("schedstream_held_room_starts_by_timestamp_seconds", gang)] == starts
    assert "2026-01-01T00:01:42Z" in render(observed(lines[:14], config))


def test_held_room_is_the_last_cycles_only() -> None:
    lines, config = scenario(HELD)
    added = [line for line in lines if line.startswith(b'{"type":"ADDED"') and b'"name":"b' in line[:200]]
    assert len(added) == 3  # the PodGroup b and its two pods
    gone = [line.replace(b'"type":"ADDED"', b'"type":"DELETED"') for line in added]
    end = [*lines, *gone, b'{"type":"SCHEDULE","cluster":"default","time":"2026-01-01T00:00:30Z"}']
    got = samples(observed(end, config))
    assert not [name for name, _ in got if name.startswith("schedstream_held_room")]
    assert 'id="held-default"' in render(observed(end, config))  # the table is there, empty
