"""services.traces.swf on tests/data/sample.swf (hand-written; the expected jobs are worked out
from its rows below) and on malformed files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from services.traces.model import Job, Node, TraceError, with_arrival_scale
from services.traces.swf import read_swf

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "sample.swf"


def labels(user: int, status: int) -> dict[str, str]:
    return {"swf/user": str(user), "swf/partition": "1", "swf/status": str(status)}


def test_sample_is_parsed_exactly() -> None:
    trace = read_swf(SAMPLE)
    # MaxProcs 16 / MaxNodes 4: 4 cores per node; the requested time is the runtime estimate.
    # Job 5 (run time -1) and job 8 (0 processors, none requested) never ran and are skipped.
    assert trace.jobs == (
        Job("swf-1", 0, 600, tasks=1, requests={"cpu": "1"}, queue="queue-0", labels=labels(3, 1), estimate=900),
        Job("swf-2", 10, 1200, tasks=1, requests={"cpu": "4"}, queue="queue-0", labels=labels(3, 1), estimate=1800),
        # 6 allocated processors (8 requested): 2 pods of 3 cores.
        Job("swf-3", 30, 3600, tasks=2, requests={"cpu": "3"}, queue="queue-1", labels=labels(4, 1), estimate=3600),
        Job("swf-4", 30, 300, tasks=4, requests={"cpu": "4"}, queue="queue-0", labels=labels(5, 0), estimate=600),
        # Allocated -1: the 2 requested processors; queue -1: default.
        Job("swf-6", 60.5, 90, tasks=1, requests={"cpu": "2"}, queue="default", labels=labels(6, 1), estimate=120),
        # 10 processors: 3 pods of ceil(10 / 3) = 4 cores, all of them required.
        Job(
            "swf-7",
            70,
            0,
            tasks=3,
            min_member=3,
            requests={"cpu": "4"},
            queue="queue-1",
            labels=labels(6, 1),
            estimate=60,
        ),
    )
    assert trace.nodes == tuple(Node(f"swf-node-000{i}", {"cpu": "4"}) for i in range(4))
    assert trace.requested() == {"cpu": (1 + 4 + 6 + 16 + 2 + 12) * 1000}


def test_procs_per_node_overrides_the_header() -> None:
    trace = read_swf(SAMPLE, procs_per_node=8)
    assert [(job.id, job.tasks, job.requests["cpu"]) for job in trace.jobs] == [
        ("swf-1", 1, "1"),
        ("swf-2", 1, "4"),
        ("swf-3", 1, "6"),
        ("swf-4", 2, "8"),
        ("swf-6", 1, "2"),
        ("swf-7", 2, "5"),
    ]
    assert len(trace.nodes) == 4
    assert trace.nodes[0].allocatable == {"cpu": "8"}


def test_without_a_header_nodes_are_unknown_and_jobs_use_one_core_per_pod(tmp_path: Path) -> None:
    path = tmp_path / "bare.swf"
    path.write_text("1 0 0 10 3 -1 -1 3 -1 -1 1 1 1 1 -1 -1 -1 -1\n")
    trace = read_swf(path)
    assert trace.nodes == ()
    assert (trace.jobs[0].tasks, trace.jobs[0].requests) == (3, {"cpu": "1"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 0 0 10 3\n", ":1: expected 18 fields, found 5"),
        ("1 0 0 ten 3 -1 -1 3 -1 -1 1 1 1 1 -1 -1 -1 -1\n", ":1: could not convert string to float"),
        ("; MaxNodes: many\n", ": header MaxNodes: does not start with an integer: 'many'"),
        ("; MaxNodes: 1.5\n", ": header MaxNodes: does not start with an integer: '1.5'"),
    ],
)
def test_malformed_files_are_refused_with_the_place(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.swf"
    path.write_text(text)
    with pytest.raises(TraceError, match="^" + str(path)) as info:
        read_swf(path)
    assert message in str(info.value)


def test_a_gzipped_file_reads_as_the_plain_one(tmp_path: Path) -> None:
    # The archive ships its logs as .swf.gz; the magic bytes decide, not the name.
    path = tmp_path / "sample.swf.gz"
    path.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    assert read_swf(path) == read_swf(SAMPLE)


def test_a_broken_gzip_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broken.swf.gz"
    path.write_bytes(gzip.compress(SAMPLE.read_bytes())[:40])
    with pytest.raises(TraceError, match="not a readable gzip file"):
        read_swf(path)


def test_header_values_with_a_note_count_their_leading_integer(tmp_path: Path) -> None:
    # As in the archive's SDSC-SP2 and LANL logs.
    path = tmp_path / "noted.swf"
    path.write_text(
        "; MaxNodes: 338 (batch partition; 512 total)\n; MaxProcs: 676 (2 per node)\n"
        "1 0 0 10 4 -1 -1 4 -1 -1 1 1 1 1 -1 -1 -1 -1\n"
    )
    trace = read_swf(path)
    assert len(trace.nodes) == 338
    assert trace.nodes[0].allocatable == {"cpu": "2"}
    assert (trace.jobs[0].tasks, trace.jobs[0].requests) == (2, {"cpu": "2"})


def test_arrival_scale_compresses_submits_toward_the_first() -> None:
    trace = read_swf(SAMPLE)
    faster = with_arrival_scale(trace, 2.0)
    assert [job.submit for job in faster.jobs] == [0, 5, 15, 15, 30.25, 35]
    assert [(job.id, job.duration, job.tasks) for job in faster.jobs] == [
        (job.id, job.duration, job.tasks) for job in trace.jobs
    ]
    assert with_arrival_scale(trace, 1.0) is trace
    with pytest.raises(TraceError, match="arrival scale"):
        with_arrival_scale(trace, 0.0)
