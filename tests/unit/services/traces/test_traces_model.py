"""services.traces.model and .native: validation of jobs and nodes, ordering, totals, and the
native JSON-lines format (round trip, errors with file and line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.traces.model import Job, Node, Trace, TraceError, decimal_quantity, milli_quantity
from services.traces.native import read_jobs, read_native, write_native

GIB = 2**30 * 1000  # milli-units


def sample_trace() -> Trace:
    return Trace(
        (
            Job(
                "train-7",
                3600,
                5400,
                tasks=4,
                min_member=3,
                requests={"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
                queue="research",
                priority=100,
                topology="ib-cluster",
                scheduler="volcano",
                labels={"team": "vision"},
            ),
            Job("notebook-3", 3610.5, None, requests={"cpu": "500m"}, node_affinity={"gpu-model": ("T4", "A10")}),
            Job("etl-1", 0, 0.25, requests={"cpu": "1"}, scheduler="kueue"),
            Job("a-first", 3600, 10),
        ),
        (
            Node("gpu-0", {"cpu": "96", "memory": "512Gi", "nvidia.com/gpu": "8"}, {"volcano.sh/ib-cluster": "ib-a"}),
            Node("cpu-0", {"cpu": "32"}),
        ),
    )


def test_jobs_are_sorted_by_submit_then_id_and_gang_defaults_to_all_tasks() -> None:
    trace = sample_trace()
    assert [job.id for job in trace.jobs] == ["etl-1", "a-first", "train-7", "notebook-3"]
    assert trace.jobs[0].gang == 1
    assert Job("x", 0, 1, tasks=5).min_member == 5


def test_totals_are_per_task_requests_times_tasks_in_milli_units() -> None:
    trace = sample_trace()
    assert trace.requested() == {"cpu": 4 * 8000 + 500 + 1000, "memory": 4 * 64 * GIB, "nvidia.com/gpu": 8000}
    assert trace.allocatable() == {"cpu": 128_000, "memory": 512 * GIB, "nvidia.com/gpu": 8000}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": "Bad_Name"}, "DNS subdomain"),
        ({"submit": -1}, "submit must be"),
        ({"duration": float("inf")}, "duration must be"),
        ({"tasks": 0}, "tasks must be >= 1"),
        ({"tasks": 2, "min_member": 3}, "min_member must be between 1 and tasks (2)"),
        ({"requests": {"cpu": "lots"}}, "invalid quantity 'lots'"),
        ({"requests": {"cpu": 2}}, "must be a quantity string"),
        ({"scheduler": "slurm"}, "scheduler must be one of volcano, kueue"),
        ({"topology": ""}, "topology is empty"),
        ({"node_affinity": {"zone": ()}}, "at least one value"),
    ],
)
def test_invalid_jobs_are_refused_with_the_reason(kwargs: dict, message: str) -> None:
    fields = {"id": "job-1", "submit": 0, "duration": 1, **kwargs}
    with pytest.raises(TraceError) as info:
        Job(**fields)
    assert message in str(info.value)


def test_duplicates_and_bad_nodes_are_refused() -> None:
    with pytest.raises(TraceError, match="duplicate job id 'a'"):
        Trace((Job("a", 0, 1), Job("a", 5, 1)))
    with pytest.raises(TraceError, match="duplicate node name 'n'"):
        Trace((), (Node("n"), Node("n")))
    with pytest.raises(TraceError, match="node n: memory: invalid quantity"):
        Node("n", {"memory": "12GB"})


def test_quantity_helpers() -> None:
    assert [milli_quantity(v) for v in (12000, 3152, 0)] == ["12", "3152m", "0"]
    assert [decimal_quantity(v, "Gi") for v in ("320.0", "937.5", "1e2", "0.0")] == ["320Gi", "937.5Gi", "100Gi", "0Gi"]
    with pytest.raises(TraceError, match="not a number"):
        decimal_quantity("x")


def test_native_round_trip_gives_the_same_trace(tmp_path: Path) -> None:
    trace = sample_trace()
    jobs, nodes = tmp_path / "jobs.jsonl", tmp_path / "nodes.jsonl"
    write_native(trace, jobs, nodes)
    assert read_native(jobs, nodes) == trace
    lines = jobs.read_text().splitlines()
    assert len(lines) == 4
    assert lines[0] == (
        '{"id":"etl-1","submit":0,"duration":0.25,"tasks":1,"min_member":1,"requests":{"cpu":"1"},'
        '"queue":"default","priority":0,"scheduler":"kueue"}'
    )
    assert len(nodes.read_text().splitlines()) == 2


def test_native_reader_fills_defaults_and_ignores_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "jobs.jsonl"
    path.write_text('\n{"id": "j", "submit": 5, "duration": null}\n\n')
    (job,) = read_jobs(path)
    assert job == Job("j", 5.0, None, tasks=1, requests={}, queue="default", priority=0, min_member=1)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "2: not JSON"),
        ("[1, 2]", "2: expected a JSON object"),
        ('{"id": "j", "submit": 1, "duration": 1, "gang": 2}', "2: unknown key(s) gang"),
        ('{"id": "j", "submit": 1}', "2: missing key(s) duration"),
        ('{"id": "j", "submit": "1", "duration": 1}', "2: Expected `float`, got `str` - at `$.submit`"),
        ('{"id": "j", "submit": 1, "duration": 1, "tasks": 2, "min_member": 0}', "2: job j: min_member must be"),
    ],
)
def test_native_errors_name_the_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "jobs.jsonl"
    path.write_text('{"id": "ok", "submit": 0, "duration": 1}\n' + line + "\n")
    with pytest.raises(TraceError) as info:
        read_jobs(path)
    assert str(info.value).startswith(f"{path}:{message}")


def test_native_reader_refuses_duplicate_ids_across_the_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.jsonl"
    path.write_text('{"id": "j", "submit": 0, "duration": 1}\n{"id": "j", "submit": 2, "duration": 1}\n')
    with pytest.raises(TraceError, match="duplicate job id 'j'"):
        read_native(path)
