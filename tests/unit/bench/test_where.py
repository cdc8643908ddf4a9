"""``bench.where``: the profile the speed table prints under a row short of its target."""

from __future__ import annotations

import pytest

from bench import where
from bench.speed import replay_run
from tests.streams import Shape, synthetic_stream


def test_a_replay_is_told_by_its_stages_and_they_add_up() -> None:
    lines = [line.encode() for line in synthetic_stream("c1", Shape(nodes=10, gangs=40))]
    (_, cycles), found = where.profiled(lambda: replay_run(lines))
    assert cycles
    stages = dict(found.stages)
    for stage in ("parse", "fold into the state", "snapshot", "open session", "actions", "close", "store"):
        assert stages[stage] > 0, stage
    assert "Kueue cycle" not in stages  # no Workload in the stream: its cycle never runs
    assert sum(stages.values()) == pytest.approx(1.0)
    assert list(stages)[-1] == "other"
    assert sum(share for _, share in found.modules) == pytest.approx(1.0, rel=1e-3)  # a built-in: its callers' shares
    assert all(not name.startswith("<") for name, _ in found.functions)
    assert len(found.lines()) == 3


def _looks_up(table: dict[int, int], times: int) -> int:
    return sum(table.get(n % 7, 0) for n in range(times))


def test_a_built_in_counts_for_the_module_that_calls_it() -> None:
    _, found = where.profiled(lambda: _looks_up({n: n for n in range(7)}, 200_000))
    modules = dict(found.modules)
    assert "python" not in modules
    assert modules["unit.bench.test_where"] > 0.9  # the loop and its dict.get calls
    assert "dict.get" in dict(found.functions)


@pytest.mark.parametrize(
    ("cprofile_name", "told"),
    [
        ("<method 'get' of 'dict' objects>", "dict.get"),
        ("<method 'executemany' of 'sqlite3.Cursor' objects>", "sqlite3.Cursor.executemany"),
        ("<built-in method builtins.len>", "len"),
        ("<built-in method msgspec._core.convert>", "msgspec._core.convert"),
    ],
)
def test_built_ins_are_named_shortly(cprofile_name: str, told: str) -> None:
    assert where._builtin(cprofile_name) == told


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("domain/scheduler/candidates.py", "scheduler.candidates"),
        ("domain/quantity.py", "domain.quantity"),
        ("services/store/store.py", "store.store"),
        ("/usr/lib/python3/site-packages/sqlalchemy/engine/base.py", "sqlalchemy"),
        (".venv/lib/python3.11/site-packages/numpy/_core/_methods.py", "numpy"),
        ("/usr/lib/python3.11/json/decoder.py", "python"),
    ],
)
def test_modules_are_named_from_the_repo_root(path: str, module: str) -> None:
    assert where._module(path) == module
