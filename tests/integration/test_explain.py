"""`schedstream explain` on scenario streams: a pending gang shows its reason, its members and
which nodes fell short by how much, from event files and from the store (SQLite, PostgreSQL),
cut at a seq or a time; a topology-bound gang shows each domain's shortfall; a Kueue workload
its pending position."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from domain.scheduler.config import SchedulerConfig
from services.cli import load_config, main
from services.pipeline import CLOCK_STREAM, Pipeline
from services.record_files import read_records
from services.store.store import Store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "volcano-gang.jsonl"
SCENARIOS = ROOT / "tests" / "scenarios"
KUEUE_FULL = SCENARIOS / "kueue-port" / "001-single-cluster-queue-full" / "events.jsonl"
NO_IB_FITS = SCENARIOS / "topology" / "003-no-ib-cluster-fits-stays-pending" / "events.jsonl"


def explain(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["explain", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def store_of(url: str, events: Path, snapshot_every: int = 0, config: SchedulerConfig | None = None) -> str:
    """The events folded into the store at ``url`` as the worker folds them, snapshots included."""
    store = Store(url)
    store.upgrade()
    pipeline = Pipeline(config or SchedulerConfig(), store, clocks={"c1": CLOCK_STREAM}, snapshot_every=snapshot_every)
    records = read_records([str(events)])
    for start in range(0, len(records), 5):
        pipeline.process(records[start : start + 5])
    store.close()
    return url


def scenario_config(scenario: Path, tmp_path: Path) -> str:
    """The scenario's `[config]` written as a YAML file for `--config`."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tomllib.loads((scenario / "scenario.toml").read_text())["config"]))
    return str(config)


HELD = SCENARIOS / "backfill" / "005-held-room-keeps-a-later-job-off-the-free-node"


def check_pending_eval_gang(report: dict[str, Any]) -> None:
    assert report["at"] == 18
    assert report["status"]["phase"] == "Inqueue"
    assert report["reason"]["reason"] == "NotEnoughResources"
    assert report["reason"]["message"].startswith("2/2 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu")
    gang = report["details"]
    assert [(m["name"], m["status"], m["node"]) for m in gang["members"]] == [
        ("eval-worker-0", "Pending", None),
        ("eval-worker-1", "Pending", None),
    ]
    # The train gang took two GPUs of gpu-1 and of gpu-2 and four of gpu-0: neither member fits anywhere.
    for member in gang["waitingFor"]:
        assert member["fits"] == []
        short = {row["node"]: row.get("short") for row in member["nodesShort"]}
        assert short == {"gpu-0": {"nvidia.com/gpu": "4"}, "gpu-1": {"nvidia.com/gpu": "2"},
                         "gpu-2": {"nvidia.com/gpu": "2"}, "infra-0": None}  # fmt: skip
    assert gang["queue"]["name"] == "default"
    assert [(e["seq"], e["source"], e["what"]) for e in report["timeline"]] == [
        (14, "event", "ADDED"),
        (18, "decision", "PodGroupStatus"),
    ]


def test_the_example_pending_gang_from_event_files() -> None:
    check_pending_eval_gang(explain("podgroup", "team-b/eval-pg", "--events", str(EXAMPLE), "--at", "18"))


def test_a_time_cuts_before_the_first_later_marker() -> None:
    by_time = explain("podgroup", "team-b/eval-pg", "--events", str(EXAMPLE), "--at", "2026-01-01T00:00:01.5Z")
    assert by_time["at"] == 23
    assert by_time["reason"]["reason"] == "NotEnoughResources"


@pytest.mark.parametrize("at", ["18", "38", "2026-01-01T00:00:01.5Z"])
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_the_store_gives_what_the_event_files_give(
    at: str, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}" if backend == "sqlite" else request.getfixturevalue("pg_url")
    store_of(url, EXAMPLE, snapshot_every=7)  # the latest snapshot lies after seq 18 and before seq 38
    objects = (("podgroup", "team-b/eval-pg"), ("podgroup", "team-a/train-pg"), ("pod", "team-a/train-worker-0"),
               ("queue", "default"))  # fmt: skip
    for kind, name in objects:
        from_events = explain(kind, name, "--events", str(EXAMPLE), "--at", at)
        from_store = explain(kind, name, "--db", url, "--at", at)
        assert from_store == from_events, (kind, at)
    if at == "18":
        check_pending_eval_gang(explain("podgroup", "team-b/eval-pg", "--db", url, "--at", at))


def test_a_deleted_gang_is_not_present_but_keeps_its_timeline() -> None:
    report = explain("podgroup", "team-b/eval-pg", "--events", str(EXAMPLE))
    assert report["exists"] is False
    assert report["timeline"][-1] == {"seq": 29, "time": "2026-01-01T00:00:03Z", "source": "event",
                                      "what": "DELETED", "change": "removed"}  # fmt: skip


def test_a_gang_that_no_domain_holds_shows_each_domain_short() -> None:
    report = explain("podgroup", "ns/huge", "--events", str(NO_IB_FITS))
    assert report["reason"]["reason"] == "NoFittingTopologyDomain"
    topology = report["details"]["topology"]
    assert topology["mode"] == "hard"
    assert [(d["domain"], d["short"]) for d in topology["domains"]] == [
        ("ib-a", {"nvidia.com/gpu": "16"}),
        ("ib-b", {"nvidia.com/gpu": "16"}),
    ]


def test_a_waiting_workload_shows_its_quota_and_pending_position() -> None:
    report = explain("workload", "sales/new", "--events", str(KUEUE_FULL))
    assert report["reason"]["reason"] == "Pending"
    assert "1 more needed" in report["reason"]["message"]
    details = report["details"]
    assert details["position"] == {"clusterQueue": "sales", "localQueue": "sales/main", "positionInClusterQueue": 0,
                                   "positionInLocalQueue": 0, "pendingInClusterQueue": 1}  # fmt: skip
    assert details["quota"] == [
        {"flavor": "default", "resource": "cpu", "nominal": "50", "used": "40", "available": "10"}
    ]
    queue = explain("clusterqueue", "sales", "--events", str(KUEUE_FULL))
    assert queue["details"]["admitted"] == ["sales/assigned"]
    assert queue["details"]["pending"] == [{"position": 0, "workload": "sales/new"}]


def test_text_on_a_terminal_names_the_nodes_that_fell_short() -> None:
    result = CliRunner().invoke(main, ["explain", "podgroup", "team-b/eval-pg", "--events", str(EXAMPLE), "--at", "18"])
    assert result.exit_code == 0, result.output
    assert "eval-worker-1 asks cpu=4, memory=16Gi, nvidia.com/gpu=4, pods=1: fits on no node" in result.stdout
    assert "    gpu-2: Insufficient nvidia.com/gpu (short by nvidia.com/gpu=2)" in result.stdout


def test_an_object_the_stream_never_names_is_a_one_line_error() -> None:
    result = CliRunner().invoke(main, ["explain", "pod", "team-a/ghost", "--events", str(EXAMPLE)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "schedstream explain: error: Pod team-a/ghost does not appear in the stream (up to the cut)"
    ]


def test_a_pipelined_gang_shows_the_preemption_under_way(tmp_path: Path) -> None:
    scenario = SCENARIOS / "preempt" / "004-pipelined-room-is-not-taken-by-another-job"
    config = scenario_config(scenario, tmp_path)
    events = str(scenario / "events.jsonl")
    report = explain("podgroup", "ns/high", "--events", events, "--config", config, "--at", "8")
    assert report["reason"]["reason"] == "WaitingForPreemption"
    assert report["details"]["members"] == [
        {"name": "high-0", "status": "Pipelined", "node": None, "nominated": "n-0", "evicting": False}
    ]
    assert report["details"]["preemption"] == {"pipelined": {"high-0": "n-0"}, "victims": ["ns/low-0"]}
    victim = explain("pod", "ns/low-0", "--events", events, "--config", config, "--at", "8")
    assert victim["details"]["where"]["status"] == "Releasing"
    assert victim["timeline"][-1]["what"] == "Evict"


def test_a_waiting_gang_member_carries_its_gangs_reason() -> None:
    report = explain("pod", "team-b/eval-worker-1", "--events", str(EXAMPLE), "--at", "18")
    assert report["status"]["node"] is None
    assert report["reason"]["reason"] == "NotEnoughResources"
    assert report["details"]["group"] == "eval-pg"
    assert report["details"]["waitingFor"]["fits"] == []  # no node has the four GPUs it asks for


def test_a_gangs_timeline_holds_its_members_binds() -> None:
    report = explain("podgroup", "team-a/train-pg", "--events", str(EXAMPLE), "--at", "18")
    assert [(e["seq"], e["source"], e["what"], e["change"]) for e in report["timeline"]] == [
        (8, "event", "ADDED", "first seen"),
        (18, "decision", "PodGroupStatus", "Running (GangScheduled)"),
        (18, "member", "Bind", "train-worker-0 -> gpu-0 (Scheduled)"),
        (18, "member", "Bind", "train-worker-1 -> gpu-1 (Scheduled)"),
        (18, "member", "Bind", "train-worker-2 -> gpu-2 (Scheduled)"),
        (18, "member", "Bind", "train-worker-3 -> gpu-0 (Scheduled)"),
    ]


def test_a_job_kept_off_held_room_is_told_whose_room_it_is(tmp_path: Path) -> None:
    args = ["--events", str(HELD / "events.jsonl"), "--config", scenario_config(HELD, tmp_path), "--at", "19"]
    report = explain("podgroup", "default/c", *args)
    # The condition is Volcano's: held room counts as taken.
    assert report["reason"]["message"].endswith("0/2 nodes are unavailable: 2 Insufficient cpu.")
    (member,) = report["details"]["waitingFor"]
    assert member["fits"] == []
    assert {row["node"]: row.get("heldFor") for row in member["nodesShort"]} == {"n0": None, "n1": ["default/b"]}
    assert report["details"]["heldFrom"] == [
        {"gang": "default/b", "nodes": {"n1": {"cpu": "4", "pods": "1"}, "n0": {"pods": "1"}}, "startsBy": None}
    ]
    assert report["details"]["holding"] is None
    holder = explain("podgroup", "default/b", *args)["details"]
    assert holder["holding"] == report["details"]["heldFrom"][0]
    assert holder["heldFrom"] == []
    pod = explain("pod", "default/c-0", *args)["details"]
    assert pod["heldFrom"] == report["details"]["heldFrom"]
    assert pod["waitingFor"]["nodesShort"][1]["heldFor"] == ["default/b"]
    node = explain("node", "n1", *args)["details"]
    assert node["free"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert node["heldFor"] == {"default/b": {"cpu": "4", "pods": "1"}}
    text = CliRunner().invoke(main, ["explain", "podgroup", "default/c", *args]).stdout
    assert "    n1: Insufficient cpu (short by cpu=4; room held for default/b)" in text
    assert "Room held for default/b, ahead of this one: n1 cpu=4, pods=1; n0 pods=1; starts when" in text


def test_without_held_room_explain_reads_the_free_room() -> None:
    """The same stream under Volcano's default configuration, cut before c's first cycle:
    nothing holds room, and c would take n1."""
    report = explain("podgroup", "default/c", "--events", str(HELD / "events.jsonl"), "--at", "17")
    (member,) = report["details"]["waitingFor"]
    assert member["takes"] == "n1"
    assert report["details"]["heldFrom"] == []


def test_the_store_tells_whose_held_room_it_is_as_the_event_files_do(tmp_path: Path) -> None:
    """A worker's store, with a snapshot before the cut, gives the held room the events give."""
    config = scenario_config(HELD, tmp_path)
    url = store_of(f"sqlite:///{tmp_path / 'store.db'}", HELD / "events.jsonl", 7, load_config(Path(config)))
    for kind, name in (("podgroup", "default/c"), ("podgroup", "default/b"), ("pod", "default/c-0"), ("node", "n1")):
        from_events = explain(kind, name, "--events", str(HELD / "events.jsonl"), "--config", config, "--at", "19")
        from_store = explain(kind, name, "--db", url, "--config", config, "--at", "19")
        assert from_store == from_events, kind
    assert from_store["details"]["heldFor"] == {"default/b": {"cpu": "4", "pods": "1"}}
