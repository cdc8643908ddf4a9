"""Every bad input of issue 14 items 8 and 9, as a user meets it: the real ``schedstream``
process, one line on standard error naming the problem, exit status 2 (usage) or 1 (I/O), no
traceback, and an existing ``--out`` file left exactly as it was."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from services.output import atomic_directory, atomic_output

ROOT = Path(__file__).resolve().parents[2]
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")
EXAMPLE = str(ROOT / "examples" / "volcano-gang.jsonl")
KEEP = b"the earlier decisions\n"


_HELD: list[socket.socket] = []  # bound and never listening: a connection is refused, and no server
# started later in the run (a test's PostgreSQL or broker) can be given the port


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _HELD.append(s)
    return int(s.getsockname()[1])


@dataclass(frozen=True)
class Case:
    name: str
    args: list[str]  # {out}, {tmp} and {binary} are filled in
    want_exit: int
    want_in_stderr: str
    env: dict[str, str] = field(default_factory=dict)


UNREACHABLE_PG = f"postgresql://nobody@127.0.0.1:{_closed_port()}/schedstream"
UNREACHABLE_KAFKA = f"127.0.0.1:{_closed_port()}"
CASES = [
    Case("replay with an unparsable --db", ["replay", EXAMPLE, "--out", "{out}", "--db", "nonsense"], 2, "--db"),
    Case("replay with an unknown database kind", ["replay", EXAMPLE, "--out", "{out}", "--db", "foo://x"], 2, "foo"),
    Case(
        "replay with an unreachable PostgreSQL",
        ["replay", EXAMPLE, "--out", "{out}", "--db", UNREACHABLE_PG],
        1,
        "cannot use the database postgresql://nobody@127.0.0.1",
    ),
    Case(
        "replay with a SQLite file in a missing folder",
        ["replay", EXAMPLE, "--out", "{out}", "--db", "sqlite:///{tmp}/missing/x.db"],
        1,
        "unable to open database file",
    ),
    Case(
        "replay into a store that already holds events",
        ["replay", EXAMPLE, "--out", "{out}", "--db", "sqlite:///{tmp}/used.db"],
        2,
        "already holds events",
    ),
    Case("replay of a missing events file", ["replay", "{tmp}/nope.jsonl", "--out", "{out}"], 1, "nope.jsonl"),
    Case("replay into a missing folder", ["replay", EXAMPLE, "--out", "{tmp}/missing/out.jsonl"], 1, "missing"),
    Case("replay without events", ["replay", "--out", "{out}"], 2, "Missing argument"),
    Case(
        "replay with a malformed SCHEDSTREAM_PARTITIONS",
        ["replay", EXAMPLE, "--out", "{out}"],
        2,
        "SCHEDSTREAM_PARTITIONS='four' is not an integer",
        {"SCHEDSTREAM_PARTITIONS": "four"},
    ),
    Case(
        "worker with a malformed SCHEDSTREAM_BATCH_WITHIN",
        ["worker"],
        2,
        "SCHEDSTREAM_BATCH_WITHIN='soon' is not a number",
        {"SCHEDSTREAM_BATCH_WITHIN": "soon"},
    ),
    Case("worker with an unparsable --db", ["worker", "--db", "nonsense"], 2, "--db"),
    # No retries (SCHEDSTREAM_DB_WAIT=0): each retry logs a line of its own (tests/faults/test_startup.py).
    Case(
        "worker with an unreachable PostgreSQL",
        ["worker", "--db", UNREACHABLE_PG],
        1,
        "cannot reach the database",
        env={"SCHEDSTREAM_DB_WAIT": "0"},
    ),
    Case(
        "db upgrade with an unreachable PostgreSQL", ["db", "upgrade", "--db", UNREACHABLE_PG], 1, "Connection refused"
    ),
    Case(
        "explain with an unreachable PostgreSQL",
        ["explain", "pod", "team-a/x", "--db", UNREACHABLE_PG],
        1,
        "cannot use the database",
    ),
    Case("explain of an unknown kind", ["explain", "deployment", "team-a/x", "--events", EXAMPLE], 2, "deployment"),
    Case("explain without a source", ["explain", "pod", "team-a/x"], 2, "--db or --events"),
    Case("diff of a missing file", ["diff", "{tmp}/a.jsonl", EXAMPLE], 2, "a.jsonl"),
    Case(
        "simulate of a binary trace",
        ["simulate", "{binary}", "--out", "{tmp}/run"],
        1,
        "is not a text trace",
    ),
    Case(
        "produce with an unreachable Kafka",
        ["produce", EXAMPLE],
        1,
        "cannot reach Kafka at 127.0.0.1",
        {"SCHEDSTREAM_KAFKA_BOOTSTRAP": UNREACHABLE_KAFKA},
    ),
    Case(
        "worker with an unreachable Kafka",
        ["worker", "--db", "sqlite:///{tmp}/worker.db"],
        1,
        "cannot reach Kafka at 127.0.0.1",
        {"SCHEDSTREAM_KAFKA_BOOTSTRAP": UNREACHABLE_KAFKA},
    ),
    Case(
        "produce with a malformed SCHEDSTREAM_PARTITIONS",
        ["produce", EXAMPLE],
        2,
        "SCHEDSTREAM_PARTITIONS",
        {"SCHEDSTREAM_PARTITIONS": "four"},
    ),
]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEDSTREAM_")} | env
    return subprocess.run([SCHEDSTREAM, *args], env=full_env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_user_error_is_one_line_and_leaves_out_untouched(case: Case, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(KEEP)
    binary = tmp_path / "trace.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    if "used.db" in " ".join(case.args):
        assert (
            _run(
                ["replay", EXAMPLE, "--out", str(tmp_path / "first.jsonl"), "--db", f"sqlite:///{tmp_path}/used.db"], {}
            ).returncode
            == 0
        )
    args = [a.format(out=out, tmp=tmp_path, binary=binary) for a in case.args]
    result = _run(args, case.env)
    lines = result.stderr.splitlines()
    assert result.returncode == case.want_exit, result.stderr
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert case.want_in_stderr in lines[0]
    assert out.read_bytes() == KEEP
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left behind


def test_version_on_the_group_and_every_command() -> None:
    for args in (["--version"], ["replay", "--version"], ["explain", "--version"], ["db", "upgrade", "--version"]):
        result = _run(args, {})
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("schedstream, version "), args


def test_out_dash_writes_the_decisions_to_stdout(tmp_path: Path) -> None:
    in_file = _run(["replay", EXAMPLE, "--out", str(tmp_path / "d.jsonl")], {})
    to_stdout = _run(["replay", EXAMPLE, "--out", "-"], {})
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout == (tmp_path / "d.jsonl").read_text()
    assert not (tmp_path / "-").exists()
    assert in_file.stdout == ""


def test_a_crash_while_writing_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(KEEP)
    with pytest.raises(RuntimeError), atomic_output(str(out)) as handle:
        handle.write(b"half a decision")
        raise RuntimeError("crash")
    assert out.read_bytes() == KEEP
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_a_finished_write_replaces_the_file_with_its_permissions(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(KEEP)
    out.chmod(0o640)
    with atomic_output(str(out)) as handle:
        handle.write(b"new\n")
    assert out.read_bytes() == b"new\n"
    assert out.stat().st_mode & 0o777 == 0o640


def test_a_run_directory_is_replaced_file_by_file_only_when_the_run_ends(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text("old")
    (run / "notes.txt").write_text("mine")
    with pytest.raises(RuntimeError), atomic_directory(run) as work:
        (work / "metrics.json").write_text("half")
        raise RuntimeError("crash")
    assert (run / "metrics.json").read_text() == "old"
    with atomic_directory(run) as work:
        (work / "metrics.json").write_text("new")
    assert {p.name: p.read_text() for p in run.iterdir()} == {"metrics.json": "new", "notes.txt": "mine"}
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_no_command_prints_the_help_not_an_error() -> None:
    result = _run([], {})
    assert result.returncode == 2
    assert result.stderr.startswith("Usage: schedstream [OPTIONS] COMMAND [ARGS]...")
    assert "explain" in result.stderr
