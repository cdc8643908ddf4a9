"""The trace importers on the real files in ../shared/data (see its README for the counts):
row counts and resource totals, and the rendered openb stream accepted by parse_event and by
replay. Expected figures were computed from the CSV files with the csv module alone."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from domain.events import InvalidEvent, ScheduleMarker, WatchEvent, parse_event
from domain.scheduler.config import SchedulerConfig
from services.pipeline import Record
from services.traces.dlrm import read_dlrm
from services.traces.events import to_events
from services.traces.model import Trace
from services.traces.openb import GPU, GPU_MILLI, GPU_MODEL_LABEL, PHASE_LABEL, read_openb
from tests.shared_data import SHARED_DATA

DATA = SHARED_DATA
pytestmark = pytest.mark.usefixtures("shared_data")
PODS = DATA / "openb_pod_list_default.csv"
NODES = DATA / "openb_node_list_all_node.csv"
MIB = 2**20 * 1000  # milli-units
GIB = 2**30 * 1000


def head(path: Path, rows: int, tmp_path: Path) -> Path:
    """The header and the first ``rows`` rows of a CSV file."""
    sliced = tmp_path / path.name
    with path.open() as source:
        sliced.write_text("".join(next(source) for _ in range(rows + 1)))
    return sliced


@pytest.fixture(scope="module")
def openb_500(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    return read_openb(head(PODS, 500, tmp_path_factory.mktemp("openb")), NODES)


def test_first_500_openb_pods(openb_500: Trace) -> None:
    jobs = openb_500.jobs
    assert len(jobs) == 500
    assert all(job.tasks == 1 for job in jobs)
    total = openb_500.requested()
    assert total["cpu"] == 4_264_436  # sum of cpu_milli
    assert total["memory"] == 13_841_329 * MIB
    # 490 GPUs asked in all: 312 whole GPUs by 283 pods, and 178 pods sharing a GPU (77,360 milli).
    assert total[GPU] == 312 * 1000
    assert total[GPU_MILLI] == (312 * 1000 + 77_360) * 1000
    shared = [job for job in jobs if GPU_MILLI in job.requests and GPU not in job.requests]
    assert len(shared) == 178
    assert sum(GPU not in job.requests and GPU_MILLI not in job.requests for job in jobs) == 39  # CPU-only
    pending = [job for job in jobs if job.labels[PHASE_LABEL] == "Pending"]
    assert len(pending) == 35
    assert all(job.duration is None for job in pending)
    assert sum(job.duration or 0 for job in jobs) == 156_918_933  # deletion - scheduled, scheduled pods
    assert Counter(job.labels["alibaba.com/qos"] for job in jobs) == {
        "BE": 272,
        "LS": 215,
        "Burstable": 11,
        "Guaranteed": 2,
    }
    assert jobs[-1].submit == 10_212_039


def test_all_openb_nodes(openb_500: Trace) -> None:
    nodes = openb_500.nodes
    assert len(nodes) == 1523
    total = openb_500.allocatable()
    assert total[GPU] == 6212 * 1000
    assert total[GPU_MILLI] == 6212 * 1000 * 1000
    assert total["cpu"] == 125_514_000
    assert total["memory"] == 612_028_416 * MIB
    models = Counter(node.labels.get(GPU_MODEL_LABEL, "CPU") for node in nodes)
    assert models == {"G2": 549, "T4": 404, "CPU": 310, "P100": 134, "V100M16": 55, "G3": 39, "V100M32": 30, "A10": 2}


def test_whole_openb_trace_and_round_up_sharing() -> None:
    trace = read_openb(PODS, NODES, gpu_sharing="round-up")
    assert len(trace.jobs) == 8152
    assert Counter(job.labels[PHASE_LABEL] for job in trace.jobs)["Pending"] == 897
    # num_gpu 1/2/4/8 = 6989/16/15/44 pods; each of the 3,078 shared pods takes a whole GPU.
    assert trace.requested()[GPU] == (6989 + 2 * 16 + 4 * 15 + 8 * 44) * 1000
    assert GPU_MILLI not in trace.requested()
    assert GPU_MILLI not in trace.allocatable()


def test_gpuspec33_constraints_become_node_affinity() -> None:
    trace = read_openb(DATA / "aux" / "openb_pod_list_gpuspec33.csv")
    constrained = [job for job in trace.jobs if job.node_affinity]
    assert len(constrained) == 2388  # the data README: 33% of GPU pods
    assert sum(len(job.node_affinity[GPU_MODEL_LABEL]) > 1 for job in constrained) == 378
    assert trace.nodes == ()


def test_dlrm_trace() -> None:
    trace = read_dlrm(DATA / "disaggregated_DLRM_trace.csv")
    assert len(trace.jobs) == 23_871
    total = trace.requested()
    assert total["cpu"] == 1_252_594 * 1000
    assert total[GPU] == 7386 * 1000
    assert total["memory"] == 12_690_817 * GIB // 2  # 6,345,408.5 GiB
    assert total["alibaba.com/rdma"] == 496_680 * 1000
    assert Counter(job.labels["alibaba.com/role"] for job in trace.jobs) == {"CN": 16_485, "HN": 7386}
    assert sum(job.submit == 0 for job in trace.jobs) == 7280  # existed before the trace began
    assert sum(job.duration is None for job in trace.jobs) == 8878  # still running at its end
    assert len({job.labels["alibaba.com/app"] for job in trace.jobs}) == 156
    assert trace.jobs[-1].submit == 2_676_636
    assert trace.nodes == ()


def test_openb_stream_parses_without_rejects(openb_500: Trace) -> None:
    lines = to_events(openb_500, cluster="openb", period=60)
    counts: Counter[str] = Counter()
    for line in lines:
        try:
            event = parse_event(line)
        except InvalidEvent as exc:  # pragma: no cover - the assertion below reports it
            pytest.fail(f"rejected: {exc}: {line[:200]}")
        counts["SCHEDULE" if isinstance(event, ScheduleMarker) else event.obj.kind] += 1  # type: ignore[union-attr]
    # One marker per minute with arrivals: the first 500 creation_times fall in 455 minutes.
    assert counts == {"Node": 1523, "PodGroup": 500, "Pod": 500, "SCHEDULE": 455}
    assert all(isinstance(parse_event(line), WatchEvent) for line in lines[:1523])


def test_replay_accepts_a_rendered_openb_slice_and_binds_it(openb_500: Trace) -> None:
    from services.replay import replay_records  # noqa: PLC0415 - imports the whole scheduler

    trace = Trace(openb_500.jobs[:100], openb_500.nodes[300:500])
    lines = to_events(trace, cluster="openb", period=60)
    records = [Record(value=line.encode(), position=f"openb:{n}") for n, line in enumerate(lines, start=1)]
    out = io.BytesIO()
    summary = replay_records(records, out, config=SchedulerConfig())
    assert summary.rejects == []
    assert summary.events == len(lines)
    assert summary.decisions["Bind"] == 100
