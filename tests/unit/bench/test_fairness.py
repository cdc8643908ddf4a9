"""``bench.fairness``: issue 16's targets read from each scale's ``metrics.json``, and judged over the scales."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import fairness

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample.swf"


def _policy(slowdown: float, small_mean: float, large_max: float, censored: int = 0) -> dict[str, Any]:
    return {
        "bounded_slowdown": {"mean": slowdown},
        "censored": {"count": censored},
        "by_size": {
            "1": {"wait": {"mean": small_mean, "max": 10.0 * small_mean}},
            "2-8": {"wait": {"mean": 1.0, "max": 1.0}},
            "33+": {"wait": {"mean": 1.0, "max": large_max}},
        },
    }


def _metrics(ours: dict[str, Any], easy: dict[str, Any], greedy: dict[str, Any]) -> dict[str, Any]:
    return {"policies": {"schedstream": ours, "fcfs": _policy(1e6, 1e6, 1e6), "easy": easy, "greedy": greedy}}


def test_a_row_reads_the_smallest_and_largest_classes_beside_the_baselines() -> None:
    metrics = _metrics(_policy(120.0, 30.0, 900.0), _policy(100.0, 80.0, 600.0), _policy(150.0, 20.0, 5000.0))
    found = fairness.row(1.5, metrics, cpu=12.5)
    assert found.over_easy == pytest.approx(1.2)
    assert found.over_greedy == pytest.approx(0.8)
    assert found.tail == pytest.approx(1.5)  # 900 over EASY's 600, the last class
    assert found.small == pytest.approx(1.5)  # 30 over greedy's 20, the first class
    assert (found.censored, found.cpu) == (0, 12.5)


def test_the_table_counts_the_scales_at_which_each_target_holds() -> None:
    easy, greedy = _policy(100.0, 80.0, 600.0), _policy(150.0, 20.0, 5000.0)
    rows = [
        fairness.row(1.49, _metrics(_policy(105.0, 20.0, 1000.0), easy, greedy), cpu=1.0),
        fairness.row(1.5, _metrics(_policy(130.0, 30.0, 1500.0, censored=1), easy, greedy), cpu=2.0),
    ]
    lines = fairness.table(rows)
    assert lines[0].split()[:2] == ["scale", "slowdown"]
    mean = next(line for line in lines if line.lstrip().startswith("mean")).split()
    worst = next(line for line in lines if line.lstrip().startswith("worst")).split()
    assert mean[1:6] == ["1.18", "0.78", "2.08", "1.25", "1"]  # /EASY, /greedy, tail, small, censored
    assert worst[1:6] == ["1.30", "0.87", "2.50", "1.50", "1"]
    assert "slowdown within 1.1x EASY's: met at 1 of 2 scales" in lines
    assert "slowdown below greedy's: met at 2 of 2 scales" in lines
    assert "largest class's longest wait at most 2x EASY's: met at 1 of 2 scales" in lines
    assert "smallest class's mean wait at most 1.2x greedy's: met at 1 of 2 scales" in lines
    assert "none censored: met at 1 of 2 scales" in lines


def test_a_class_no_job_waited_in_counts_as_even() -> None:
    assert fairness._ratio(0.0, 0.0) == 1.0
    assert fairness._ratio(5.0, 0.0) == float("inf")


def test_each_scale_runs_simulate_and_its_row_is_its_metrics(tmp_path: Path) -> None:
    """Two scales of the sample SWF trace, one at a time; the first scale's row is what a
    ``simulate`` run at that scale writes to its ``metrics.json``."""
    rows = list(fairness.runs(SAMPLE, [1.0, 2.0], ["--format", "swf"], workers=1))
    assert sorted(r.scale for r in rows) == [1.0, 2.0]
    assert all(r.cpu > 0 for r in rows)
    out = tmp_path / "run"
    fairness.subprocess.run(fairness._command(SAMPLE, 1.0, ["--format", "swf"], out), check=True, cwd=fairness.ROOT)
    first = next(r for r in rows if r.scale == 1.0)
    assert fairness.row(1.0, json.loads((out / "metrics.json").read_text()), cpu=first.cpu) == first


def test_a_failed_run_stops_with_its_last_line() -> None:
    with pytest.raises(SystemExit, match=r"simulate at 1.0x failed: .*no-such-format"):
        list(fairness.runs(SAMPLE, [1.0], ["--format", "no-such-format"], workers=1))
