"""Scenario tests: each folder ``<area>/<NNN-kebab-slug>/`` is one recorded stream and the decisions
the scheduler must make for it (README.md here says how to add one).

Every scenario goes through the real replay path (``services.replay.replay``: parsing, the
store, the engine, the decisions' JSON), twice. The two runs must agree byte for byte and mint
unique ids; the decisions, ids left out, must equal ``expected.jsonl`` line for line. With
``--update-expected`` the expected file is rewritten from the actual decisions instead.
"""

from __future__ import annotations

import io
import json
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domain.scheduler.config import ConfigError, SchedulerConfig, from_mapping
from services.replay import replay
from tests.timer_markers import check_idle_markers

HERE = Path(__file__).resolve().parent
FOLDER_NAME = re.compile(r"^(\d{3})-[a-z0-9]+(?:-[a-z0-9]+)*$")
AREA_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
SEED_NAME = re.compile(r"^S[1-5]$")
TOML_KEYS = frozenset({"description", "config", "seeds", "rejected_lines"})
UPDATE_HINT = "If the new decisions are right, run `pytest tests/scenarios --update-expected` and review the diff."

DecisionJson = dict[str, Any]


class ScenarioError(Exception):
    """A scenario folder is malformed: a missing file, an unknown key, a bad name."""


@dataclass(frozen=True)
class Scenario:
    path: Path
    description: str
    config: SchedulerConfig
    seeds: tuple[str, ...]
    rejected_lines: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def events(self) -> Path:
        return self.path / "events.jsonl"

    @property
    def expected(self) -> Path:
        return self.path / "expected.jsonl"


@dataclass(frozen=True)
class Run:
    decisions: list[DecisionJson]
    raw: bytes
    rejected_lines: tuple[int, ...]
    reject_reasons: tuple[str, ...]


def discover() -> list[Path]:
    """Every folder two levels below this one (``<area>/<slug>``), in name order."""
    return sorted(
        slug
        for area in HERE.iterdir()
        if area.is_dir() and not area.name.startswith((".", "_"))
        for slug in area.iterdir()
        if slug.is_dir() and not slug.name.startswith((".", "_"))
    )


def load(path: Path) -> Scenario:
    name = f"{path.parent.name}/{path.name}"
    if not AREA_NAME.match(path.parent.name) or not FOLDER_NAME.match(path.name):
        raise ScenarioError(f"{name}: folders are named <area>/<NNN-kebab-slug>, e.g. gang/001-gang-fits")
    for required in ("scenario.toml", "events.jsonl"):
        if not (path / required).is_file():
            raise ScenarioError(f"{name}: {required} is missing")
    try:
        with (path / "scenario.toml").open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{name}: scenario.toml is not valid TOML ({exc})") from exc
    unknown = sorted(set(data) - TOML_KEYS)
    if unknown:
        raise ScenarioError(f"{name}: unknown key(s) {unknown} in scenario.toml; allowed: {sorted(TOML_KEYS)}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ScenarioError(f"{name}: scenario.toml needs a `description` (one or two sentences)")
    try:
        config = from_mapping(data.get("config"))
    except ConfigError as exc:
        raise ScenarioError(f"{name}: `config` in scenario.toml: {exc}") from exc
    seeds = data.get("seeds", [])
    if not isinstance(seeds, list) or not all(isinstance(s, str) and SEED_NAME.match(s) for s in seeds):
        raise ScenarioError(f'{name}: `seeds` must be a list like ["S1"] (rules of SEEDS.md)')
    rejected = data.get("rejected_lines", [])
    if not isinstance(rejected, list) or not all(isinstance(n, int) and n > 0 for n in rejected):
        raise ScenarioError(f"{name}: `rejected_lines` must be a list of 1-based line numbers of events.jsonl")
    check_uids(path / "events.jsonl")
    return Scenario(path, " ".join(description.split()), config, tuple(seeds), tuple(sorted(rejected)))


def check_uids(events: Path) -> None:
    """A uid names one object for good: two kinds or names under one uid is a mistake in the scenario."""
    owners: dict[str, tuple[str, str, str]] = {}
    for number, line in enumerate(events.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            obj = json.loads(line).get("object") or {}
            meta = obj.get("metadata") or {}
            uid = meta.get("uid")
            identity = (str(obj.get("kind")), str(meta.get("namespace", "")), str(meta.get("name")))
        except (json.JSONDecodeError, AttributeError):
            continue  # a line meant to be rejected
        if isinstance(uid, str) and uid:
            first = owners.setdefault(uid, identity)
            if first != identity:
                raise ScenarioError(f"{events}:{number}: uid {uid!r} already names {'/'.join(first)}")


def run(scenario: Scenario) -> Run:
    """Replay the scenario's events exactly as ``schedstream replay`` does."""
    out = io.BytesIO()
    summary = replay([str(scenario.events)], out, config=scenario.config)
    raw = out.getvalue()
    decisions = [json.loads(line) for line in raw.splitlines() if line.strip()]
    lines = tuple(int(r.position.rsplit(":", 1)[1]) for r in summary.rejects)
    reasons = tuple(f"line {n}: {r.reason}" for n, r in zip(lines, summary.rejects, strict=True))
    return Run(decisions, raw, lines, reasons)


def without_id(decision: DecisionJson) -> DecisionJson:
    return {key: value for key, value in decision.items() if key != "id"}


def read_expected(path: Path) -> list[tuple[int, DecisionJson]]:
    """(line number, decision) for every non-blank line of expected.jsonl."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                decision = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScenarioError(f"{path}:{number}: not JSON ({exc})") from exc
            out.append((number, without_id(decision)))
    return out


def write_expected(path: Path, decisions: list[DecisionJson]) -> None:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in decisions), encoding="utf-8")


_MISSING: Any = object()


def _show(value: object) -> str:
    return "(missing)" if value is _MISSING else json.dumps(value, ensure_ascii=False)


def describe_difference(expected: list[tuple[int, DecisionJson]], got: list[DecisionJson]) -> str | None:
    """A readable account of the first decision that differs, or None when the lists are equal."""
    wanted = [decision for _, decision in expected]
    if wanted == got:
        return None
    index = next((i for i, (w, g) in enumerate(zip(wanted, got, strict=False)) if w != g), min(len(wanted), len(got)))
    want = wanted[index] if index < len(wanted) else _MISSING
    have = got[index] if index < len(got) else _MISSING
    where = f"expected.jsonl line {expected[index][0]}" if index < len(expected) else "past the end of expected.jsonl"
    lines = [
        f"expected {len(wanted)} decisions, got {len(got)}; the first difference is decision #{index} ({where}):",
        f"  expected: {_show(want)}",
        f"  got:      {_show(have)}",
    ]
    if want is not _MISSING and have is not _MISSING:
        lines.extend(
            f"    {path}: expected {_show(w)}, got {_show(g)}" for path, w, g in _field_differences(want, have)
        )
    return "\n".join(lines)


def _field_differences(want: object, have: object, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, expected, got) for every leaf that differs, e.g. ``conditions[0].message``."""
    if isinstance(want, dict) and isinstance(have, dict):
        out = []
        for key in sorted(set(want) | set(have)):
            sub = f"{path}.{key}" if path else key
            out.extend(_field_differences(want.get(key, _MISSING), have.get(key, _MISSING), sub))
        return out
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
        return [
            d for i, (w, g) in enumerate(zip(want, have, strict=True)) for d in _field_differences(w, g, f"{path}[{i}]")
        ]
    if want == have:
        return []
    return [(path, want, have)]


def check_ids(first: Run, second: Run) -> str | None:
    """Ids are unique within a run and the same in a second run of the same events."""
    if first.raw != second.raw:
        diff = describe_difference(list(enumerate(first.decisions, start=1)), second.decisions)
        return f"two replays of the same events differ (ids included):\n{diff or 'byte-level difference only'}"
    ids = Counter(d.get("id") for d in first.decisions)
    repeated = {key: count for key, count in ids.items() if count > 1 or not isinstance(key, str) or not key}
    if repeated:
        return f"decision ids are missing or not unique: {repeated}"
    return None


def test_scenario_layout() -> None:
    """At least one scenario exists, and within an area no two scenarios share a number."""
    found = discover()
    assert found, f"no scenario folders under {HERE}"
    numbers = Counter((p.parent.name, FOLDER_NAME.match(p.name).group(1)) for p in found if FOLDER_NAME.match(p.name))
    clashes = sorted(f"{area}/{number}" for (area, number), count in numbers.items() if count > 1)
    assert not clashes, f"scenario numbers used twice: {clashes}"


def _load_or_fail(path: Path) -> Scenario:
    error = ""
    try:
        return load(path)
    except ScenarioError as exc:
        error = str(exc)
    pytest.fail(error, pytrace=False)


def _read_expected_or_fail(scenario: Scenario, header: str) -> list[tuple[int, DecisionJson]]:
    error = ""
    try:
        return read_expected(scenario.expected)
    except ScenarioError as exc:
        error = str(exc)
    pytest.fail(f"{header}\n{error}", pytrace=False)


@pytest.mark.parametrize("path", discover(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_scenario(path: Path, request: pytest.FixtureRequest) -> None:
    scenario = _load_or_fail(path)
    first, second = run(scenario), run(scenario)
    seeds = f" [{', '.join(scenario.seeds)}]" if scenario.seeds else ""
    header = f"{scenario.name}{seeds}: {scenario.description}"
    if first.rejected_lines != scenario.rejected_lines:
        pytest.fail(
            f"{header}\nrejected lines of events.jsonl: expected {list(scenario.rejected_lines)}, "
            f"got {list(first.rejected_lines)}\n  " + "\n  ".join(first.reject_reasons),
            pytrace=False,
        )
    problem = check_ids(first, second)
    if problem:
        pytest.fail(f"{header}\n{problem}", pytrace=False)
    got = [without_id(d) for d in first.decisions]
    if request.config.getoption("update_expected", default=False):
        write_expected(scenario.expected, got)
    if not scenario.expected.is_file():
        pytest.fail(f"{header}\nexpected.jsonl is missing. {UPDATE_HINT}", pytrace=False)
    expected = _read_expected_or_fail(scenario, header)
    difference = describe_difference(expected, got)
    if difference:
        pytest.fail(f"{header}\n{difference}\n{UPDATE_HINT}", pytrace=False)


@pytest.mark.parametrize("path", discover(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_timer_marker_called_idle_decides_nothing(path: Path) -> None:
    """Where the worker's timer writes no marker (``Engine.idle``), one would have decided
    nothing: markers added to the scenario's stream where a timer could have written them
    decide nothing wherever the engine calls them idle, and the stream played without those
    decides the same (``tests/timer_markers.py``)."""
    scenario = _load_or_fail(path)
    check_idle_markers(scenario.events.read_text(encoding="utf-8").splitlines(), scenario.config)
