"""`schedstream simulate` end to end: the run directory, replay of its events giving exactly its
decisions (gangs, preemption, deletions), a slice of the real openb trace, and the HTML report
rendered by headless Chromium with its plots present."""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from domain.engine import Engine
from domain.scheduler import held_plans, node_offers, registry
from domain.scheduler.config import SchedulerConfig
from services.cli import load_config, main
from services.traces import kueue_shape
from services.traces.native import write_native
from tests.conftest import IN_CI
from tests.decided import at_marker_times
from tests.shared_data import SHARED_DATA
from tests.sim_traces import PREEMPTION, PREEMPTION_CONFIG, SMALL

DATA = SHARED_DATA
OPENB_PODS = DATA / "openb_pod_list_default.csv"
OPENB_NODES = DATA / "openb_node_list_all_node.csv"
DLRM = DATA / "disaggregated_DLRM_trace.csv"
SWF_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample.swf"
POLICIES = ["schedstream", "fcfs", "easy", "greedy"]
CHARTS = ["utilisation-cpu", "utilisation-memory", "queue-length", "wait-cdf"]


def simulate(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["simulate", *args, "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "wait p95 (s)" in result.stdout
    return out


def replayed(tmp_path: Path, run: Path, *config: str) -> bytes:
    out = tmp_path / "replayed.jsonl"
    result = CliRunner().invoke(main, ["replay", str(run / "events.jsonl"), "--out", str(out), *config])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def test_simulate_then_replay_gives_the_same_decisions(tmp_path: Path) -> None:
    jobs, nodes, config = tmp_path / "jobs.jsonl", tmp_path / "nodes.jsonl", tmp_path / "policy.yaml"
    write_native(PREEMPTION, jobs, nodes)
    config.write_text(json.dumps(PREEMPTION_CONFIG))  # JSON is YAML
    run = simulate(tmp_path, str(jobs), "--nodes", str(nodes), "--config", str(config))
    assert sorted(path.name for path in run.iterdir()) == [
        "decisions.jsonl",
        "events.jsonl",
        "metrics.json",
        "report.html",
    ]
    decisions = (run / "decisions.jsonl").read_bytes()
    kinds = {json.loads(line)["kind"] for line in decisions.splitlines()}
    assert {"Bind", "Evict", "PodGroupStatus"} <= kinds
    assert b'"DELETED"' in (run / "events.jsonl").read_bytes()
    assert replayed(tmp_path, run, "--config", str(config)) == decisions
    document = json.loads((run / "metrics.json").read_text())
    assert list(document["policies"]) == POLICIES
    assert document["policies"]["schedstream"]["restarts"] == 2


def test_small_trace_through_the_command_line(tmp_path: Path) -> None:
    jobs, nodes = tmp_path / "jobs.jsonl", tmp_path / "nodes.jsonl"
    write_native(SMALL, jobs, nodes)
    run = simulate(tmp_path, str(jobs), "--nodes", str(nodes), "--period", "1")
    assert replayed(tmp_path, run) == (run / "decisions.jsonl").read_bytes()
    policies = json.loads((run / "metrics.json").read_text())["policies"]
    assert [policies[p]["makespan"] for p in POLICIES] == [283, 330, 280, 280]


def test_gzipped_swf_with_compressed_arrivals_through_the_command_line(tmp_path: Path) -> None:
    trace = tmp_path / "sample.swf.gz"
    trace.write_bytes(gzip.compress(SWF_SAMPLE.read_bytes()))
    run = simulate(tmp_path, str(trace), "--format", "swf", "--arrival-scale", "2")
    assert replayed(tmp_path, run) == (run / "decisions.jsonl").read_bytes()
    document = json.loads((run / "metrics.json").read_text())
    assert list(document["policies"]) == POLICIES
    for numbers in document["policies"].values():
        assert list(numbers["by_size"]) == ["1", "2-8"]  # the sample's gangs have 1 to 4 tasks
    # Under proportion queue-1 deserves a third of the 16 cpus: its gangs of 6 and 12 cpus never
    # start ("queue queue-1 is at its deserved share"), and count as censored until the run ends.
    ours = document["policies"]["schedstream"]
    assert (ours["censored"]["count"], ours["by_size"]["2-8"]["censored"]["count"]) == (2, 2)
    assert all(document["policies"][p]["censored"] == {"count": 0} for p in ("fcfs", "easy", "greedy"))


def test_swf_with_its_requested_times_as_estimates_under_the_large_gangs_policy(tmp_path: Path) -> None:
    policy = Path(__file__).resolve().parents[2] / "examples" / "policies" / "large-gangs.yaml"
    run = simulate(tmp_path, str(SWF_SAMPLE), "--format", "swf", "--estimates", "trace", "--config", str(policy))
    assert replayed(tmp_path, run, "--config", str(policy)) == (run / "decisions.jsonl").read_bytes()
    events = (run / "events.jsonl").read_text()
    assert '"schedstream.io/runtime-estimate":"900s"' in events  # swf-1's PodGroup
    assert '"startTime":' in events


def test_swf_without_estimates_under_the_runtime_history_policy(tmp_path: Path) -> None:
    policy = Path(__file__).resolve().parents[2] / "examples" / "policies" / "large-gangs-history.yaml"
    run = simulate(tmp_path, str(SWF_SAMPLE), "--format", "swf", "--config", str(policy))
    assert replayed(tmp_path, run, "--config", str(policy)) == (run / "decisions.jsonl").read_bytes()
    events = (run / "events.jsonl").read_text()
    assert "schedstream.io/runtime-estimate" not in events
    assert '"startTime":' in events  # the history needs every pod's start
    assert '"swf/user":' in events


@pytest.mark.usefixtures("shared_data")
def test_held_room_offers_kept_between_cycles_decide_as_none_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HPC2N's first 200 jobs at 2.5x under the history policy: what a node no member has taken
    offers a held gang's members, and what it offers once members are planned there, is kept
    between cycles while the node, its free room and its pods' ends are the same. Nothing kept
    gives the same run byte for byte, with 9x the offers read."""
    trace = tmp_path / "hpc2n-200.swf"
    with gzip.open(DATA / "HPC2N-2002-2.2-cln.swf.gz", "rt") as archive:
        trace.write_text("".join(itertools.islice(archive, 231)))  # its 31 header lines, then jobs
    policy = Path(__file__).resolve().parents[2] / "examples" / "policies" / "large-gangs-history.yaml"
    args = (str(trace), "--format", "swf", "--arrival-scale", "2.5", "--config", str(policy))
    read = {"kept": 0, "none kept": 0, "told again": 0}

    offer = node_offers.Offer

    def counted(way: str) -> type[node_offers.Offer]:
        class Counted(offer):
            __slots__ = ()

            def __init__(self, *fields: Any) -> None:
                read[way] += 1
                super().__init__(*fields)

        return Counted

    monkeypatch.setattr(held_plans, "again", lambda *_: None)  # every hold plans (``test_held_plans``)
    monkeypatch.setattr(node_offers, "Offer", counted("kept"))
    after = node_offers.after

    def told(
        now: float, offer: node_offers.Offer, members: int, facts: node_offers.After, **of: Any
    ) -> node_offers.Facts:
        read["told again"] += len(offer.later) >= members
        return after(now, offer, members, facts, **of)

    monkeypatch.setattr(node_offers, "after", told)
    kept = simulate(tmp_path / "kept", *args)
    monkeypatch.setattr(node_offers, "Offer", counted("none kept"))
    monkeypatch.setattr(node_offers, "kept", lambda session, like: {})
    monkeypatch.setattr(node_offers, "after", _afresh)
    none_kept = simulate(tmp_path / "none-kept", *args)
    for name in ("events.jsonl", "decisions.jsonl"):
        assert (kept / name).read_bytes() == (none_kept / name).read_bytes()
    assert read["none kept"] > 5 * read["kept"] > 0
    assert read["told again"] > 100


def _afresh(
    now: float, offer: node_offers.Offer, members: int, facts: node_offers.After, **of: Any
) -> node_offers.Facts:
    """``node_offers.after`` keeping nothing: the facts worked out at each call."""
    found, ready = facts(now, of["node"], members, of["task"], of["ends"])
    return (now, found[1]) if ready else found


def _decided_at(run: Path) -> list[tuple[Any, dict[str, Any]]]:
    """A run's decisions without their seq and id, each with its marker's time."""
    events, decisions = ((run / name).read_text().splitlines() for name in ("events.jsonl", "decisions.jsonl"))
    return at_marker_times(events, decisions)


@pytest.mark.usefixtures("shared_data")
def test_status_echoes_ask_for_no_cycle_when_no_plugin_reads_the_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HPC2N's first 300 jobs at 2x, default tiers: a period in which the cluster only wrote back
    the PodGroup statuses we decided gets no SCHEDULE marker. Its cycle decided nothing: with
    those markers (as a clock-reading policy keeps them), every decision is the same, at the same
    time, and so is every figure of the run; each stream replays (every cycle run) to its
    decisions."""
    trace = tmp_path / "hpc2n-300.swf"
    with gzip.open(DATA / "HPC2N-2002-2.2-cln.swf.gz", "rt") as archive:
        trace.write_text("".join(itertools.islice(archive, 331)))  # its 31 header lines, then jobs
    args = (str(trace), "--format", "swf", "--arrival-scale", "2")
    without = simulate(tmp_path / "without", *args)
    monkeypatch.setattr(registry, "reads_clock", lambda _: True)
    with_them = simulate(tmp_path / "with", *args)
    assert _decided_at(without) == _decided_at(with_them)
    metrics = [json.loads((run / "metrics.json").read_text()) for run in (without, with_them)]
    lines = [m["simulation"].pop("lines") for m in metrics]
    assert metrics[0] == metrics[1]
    assert lines[0] < lines[1] - 100  # the markers left out
    assert replayed(tmp_path, without) == (without / "decisions.jsonl").read_bytes()
    assert replayed(tmp_path, with_them) == (with_them / "decisions.jsonl").read_bytes()


@pytest.mark.usefixtures("shared_data")
def test_echoes_run_no_cycle_while_the_last_outcome_stands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HPC2N's first 300 jobs at 2x under the history policy, whose ``reservation`` reads the
    clock: most markers after which the cluster only wrote back our statuses run no cycle (what
    the last one read of its instant still stands, ``standstill``), and the run is the one where
    they all run, byte for byte; its stream replays, every cycle run, to its decisions."""
    trace = tmp_path / "hpc2n-300.swf"
    with gzip.open(DATA / "HPC2N-2002-2.2-cln.swf.gz", "rt") as archive:
        trace.write_text("".join(itertools.islice(archive, 331)))  # its 31 header lines, then jobs
    policy = Path(__file__).resolve().parents[2] / "examples" / "policies" / "large-gangs-history.yaml"
    args = (str(trace), "--format", "swf", "--arrival-scale", "2", "--config", str(policy))
    stands = Engine._stands
    answers: list[bool] = []

    def counted(engine: Engine, state: Any, instant: Any) -> bool:
        answers.append(stands(engine, state, instant))
        return answers[-1]

    monkeypatch.setattr(Engine, "_stands", counted)
    skipping = simulate(tmp_path / "skipping", *args)
    monkeypatch.setattr(Engine, "_stands", lambda *_: False)
    running = simulate(tmp_path / "running", *args)
    for name in ("events.jsonl", "decisions.jsonl", "metrics.json"):
        assert (skipping / name).read_bytes() == (running / name).read_bytes()
    assert sum(answers) > 0.9 * len(answers) > 100
    assert replayed(tmp_path, skipping, "--config", str(policy)) == (skipping / "decisions.jsonl").read_bytes()


@pytest.mark.usefixtures("shared_data")
def test_kept_waiting_reasons_place_the_same_and_replay(tmp_path: Path) -> None:
    """HPC2N's first 300 jobs at 2x, default tiers, with ``keepWaitingReasons``: the same binds
    and queue statuses at the same times and the same figures as without it, far fewer PodGroup
    statuses (a waiting gang's message is not written again while it cannot fit), and the stream
    replays, with the same configuration, to its decisions."""
    trace = tmp_path / "hpc2n-300.swf"
    with gzip.open(DATA / "HPC2N-2002-2.2-cln.swf.gz", "rt") as archive:
        trace.write_text("".join(itertools.islice(archive, 331)))  # its 31 header lines, then jobs
    config = tmp_path / "keep.yaml"
    config.write_text("keepWaitingReasons: true\n")
    args = (str(trace), "--format", "swf", "--arrival-scale", "2")
    tried = simulate(tmp_path / "tried", *args)
    kept = simulate(tmp_path / "kept", *args, "--config", str(config))

    def others(run: Path) -> list[tuple[Any, dict[str, Any]]]:
        return [(time, d) for time, d in _decided_at(run) if d["kind"] != "PodGroupStatus"]

    assert others(kept) == others(tried)
    metrics = [json.loads((run / "metrics.json").read_text()) for run in (tried, kept)]
    for m in metrics:
        m["simulation"].pop("lines")
        m["policies"]["schedstream"].pop("pending_reasons")
    statuses = [m["simulation"]["decisions"].pop("PodGroupStatus") for m in metrics]
    assert metrics[0] == metrics[1]
    assert statuses[1] < statuses[0] / 2
    assert replayed(tmp_path, kept, "--config", str(config)) == (kept / "decisions.jsonl").read_bytes()


def test_only_sla_and_reservation_read_the_clock() -> None:
    policies = Path(__file__).resolve().parents[2] / "examples" / "policies"
    reads = {path.stem: registry.reads_clock(load_config(path)) for path in sorted(policies.glob("*.yaml"))}
    assert reads == {
        "binpack": False, "large-gangs": True, "large-gangs-binpack": True, "large-gangs-history": True, "sla": True,
    }  # fmt: skip
    assert not registry.reads_clock(SchedulerConfig())


def test_an_unknown_estimates_mode_is_one_line(tmp_path: Path) -> None:
    args = ["simulate", str(SWF_SAMPLE), "--format", "swf", "--estimates", "guess", "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "Invalid value for '--estimates'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.usefixtures("shared_data")
def test_dlrm_slice_end_to_end(tmp_path: Path) -> None:
    # 300 instances created inside the trace window (file lines 7,282-7,581; the 7,280 before them
    # existed when it began), on nodes sized for them: 4 GPU nodes, 71 CPU nodes.
    lines = DLRM.read_text().splitlines()
    trace = tmp_path / "dlrm.csv"
    trace.write_text("\n".join([lines[0], *lines[7281:7581]]) + "\n")
    run = simulate(tmp_path, str(trace), "--format", "dlrm", "--period", "60")
    assert replayed(tmp_path, run) == (run / "decisions.jsonl").read_bytes()
    document = json.loads((run / "metrics.json").read_text())
    assert document["trace"] == {"jobs": 300, "tasks": 300, "nodes": 75}
    ours = document["policies"]["schedstream"]
    assert ours["started"] == 300
    assert ours["finished"] == 240  # 60 still ran when the trace ended
    events = (run / "events.jsonl").read_text()
    assert events.count('"kind":"Node","metadata":{"name":"dlrm-hn-') == 4


def test_kueue_workloads_through_the_command_line(tmp_path: Path) -> None:
    # The Kueue shape at 2%: its queues file, Workloads admitted, run and finished, replayed.
    shape = tmp_path / "shape"
    kueue_shape.write(shape, 0.02)
    run = simulate(
        tmp_path,
        *(str(shape / "jobs.jsonl"), "--nodes", str(shape / "nodes.jsonl"), "--queues", str(shape / "queues.yaml")),
        "--period",
        "0.1",
    )
    decisions = (run / "decisions.jsonl").read_bytes()
    assert b'"WorkloadStatus"' in decisions
    assert replayed(tmp_path, run) == decisions
    document = json.loads((run / "metrics.json").read_text())
    assert document["policies"]["schedstream"]["finished"] == document["trace"]["jobs"] == 300


def test_scheduler_kueue_renders_a_volcano_trace_as_workloads(tmp_path: Path) -> None:
    jobs, nodes = tmp_path / "jobs.jsonl", tmp_path / "nodes.jsonl"
    write_native(SMALL, jobs, nodes)
    run = simulate(tmp_path, str(jobs), "--nodes", str(nodes), "--scheduler", "kueue")
    events = (run / "events.jsonl").read_bytes()
    assert b'"kind":"PodGroup"' not in events
    assert b'"kind":"ClusterQueue"' in events
    assert replayed(tmp_path, run) == (run / "decisions.jsonl").read_bytes()


@pytest.mark.usefixtures("shared_data")
def test_openb_slice_end_to_end(tmp_path: Path) -> None:
    # The first 200 pods on 50 nodes (every 30th of the node list: GPU models and CPU nodes alike).
    pods, nodes = tmp_path / "pods.csv", tmp_path / "nodes.csv"
    pod_lines = OPENB_PODS.read_text().splitlines()
    pods.write_text("\n".join(pod_lines[:201]) + "\n")
    node_lines = OPENB_NODES.read_text().splitlines()
    nodes.write_text("\n".join([node_lines[0], *node_lines[1:][::30][:50]]) + "\n")
    run = simulate(tmp_path, str(pods), "--format", "openb", "--nodes", str(nodes))
    assert replayed(tmp_path, run) == (run / "decisions.jsonl").read_bytes()
    document = json.loads((run / "metrics.json").read_text())
    assert document["trace"] == {"jobs": 200, "tasks": 200, "nodes": 50}
    for policy in POLICIES:
        numbers = document["policies"][policy]
        assert numbers["jobs"] == 200
        assert numbers["started"] == 200  # every one of these pods fits some node
        assert set(numbers["utilisation"]) == {"cpu", "memory", "nvidia.com/gpu"}
        assert 0 < numbers["utilisation"]["nvidia.com/gpu"] < 1


def _chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    subprocess.run(["bash", "ops/install-deps.sh"], check=False, capture_output=True, timeout=900)
    found = shutil.which("chromium")
    if found:
        return found
    message = "chromium is not installed and could not be installed (Debian package chromium)"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: the report test must run)", pytrace=False)
    pytest.skip(message)


def test_report_renders_its_plots_in_headless_chromium(tmp_path: Path) -> None:
    jobs, nodes = tmp_path / "jobs.jsonl", tmp_path / "nodes.jsonl"
    write_native(SMALL, jobs, nodes)
    run = simulate(tmp_path, str(jobs), "--nodes", str(nodes))
    page = run / "report.html"
    assert "http" not in page.read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")  # no external asset
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    browser = [_chromium(), *flags, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    for chart in CHARTS:
        start = dom.index(f'<svg id="{chart}"')
        svg = dom[start : dom.index("</svg>", start)]
        assert svg.count('<polyline class="series"') == len(POLICIES), chart
    shares = dom[dom.index('<table id="queue-shares"') : dom.index("</table>", dom.index('id="queue-shares"'))]
    assert shares.count("<td>default</td>") == len(POLICIES) * 2  # cpu and memory, one queue, per policy
    shot = tmp_path / "report.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1000,2000", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.usefixtures("shared_data")
def test_easy_told_the_requested_times_beside_a_scheduler_told_none(tmp_path: Path) -> None:
    """`--baseline-estimates trace` on HPC2N's first 200 jobs at 2.5x: the baselines plan with
    the trace's requested times (EASY as sites run it) while the scheduler is told no estimates:
    its run is the one without the option, the baselines' that of `--estimates trace`."""
    trace = tmp_path / "hpc2n-200.swf"
    with gzip.open(DATA / "HPC2N-2002-2.2-cln.swf.gz", "rt") as archive:
        trace.write_text("".join(itertools.islice(archive, 231)))  # its 31 header lines, then jobs
    policy = str(Path(__file__).resolve().parents[2] / "examples" / "policies" / "large-gangs-history.yaml")
    common = [str(trace), "--format", "swf", "--arrival-scale", "2.5", "--config", policy]
    both = simulate(tmp_path / "both", *common, "--baseline-estimates", "trace")
    alone = simulate(tmp_path / "alone", *common)
    told = simulate(tmp_path / "told", *common, "--estimates", "trace")
    documents = {run: json.loads((run / "metrics.json").read_text()) for run in (both, alone, told)}
    assert (both / "decisions.jsonl").read_bytes() == (alone / "decisions.jsonl").read_bytes()
    assert documents[both]["policies"]["schedstream"] == documents[alone]["policies"]["schedstream"]
    for baseline in ("fcfs", "easy", "greedy"):
        assert documents[both]["policies"][baseline] == documents[told]["policies"][baseline]
    assert documents[both]["policies"]["easy"] != documents[alone]["policies"]["easy"]  # requests are not runs
    assert documents[both]["simulation"]["baseline_estimates"] == "trace"
    assert "baseline_estimates" not in documents[alone]["simulation"]
