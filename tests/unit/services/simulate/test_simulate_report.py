"""report.html's axes (ticks in a time unit that suits the span) and its empty tables."""

from __future__ import annotations

import re

import pytest

from services.simulate import metrics, report
from services.simulate.outcome import JobRecord, Outcome
from services.traces.model import Job


@pytest.mark.parametrize(
    ("span", "want"),
    [(90, "s"), (600, "minutes"), (3 * 3600, "hours"), (40 * 3600, "hours"), (5 * 86400, "days")],
)
def test_a_time_axis_takes_the_largest_unit_its_span_holds_twice(span: float, want: str) -> None:
    assert report.time_unit(span)[1] == want


def test_ticks_are_round_and_cover_the_range() -> None:
    assert report.ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert report.ticks(0, 7.3) == [0, 2, 4, 6]
    assert report.ticks(3, 3) == [3]


def test_a_chart_of_days_has_several_day_ticks() -> None:
    day = 86400.0
    svg = report.chart("c", "t", {"p": [(0.0, 1.0), (10 * day, 3.0)]}, "simulated time", "jobs", x_time=True)
    assert "simulated time (days)" in svg
    assert re.findall(r'class="x-tick"[^>]*>([^<]*)<', svg) == ["0", "2", "4", "6", "8", "10"]
    assert len(re.findall(r'class="y-tick"', svg)) >= 4


def test_no_pending_reasons_reads_none() -> None:
    outcome = Outcome("p", {"cpu": 1000}, {"a": JobRecord(Job("a", 0, 10), start=0, end=10)})
    outcome.track(0, {"cpu": 1000}, 0)
    outcome.track(10, {}, 0)
    computed = {"p": metrics.compute(outcome)}
    page = report.render("run", computed, {"p": [0.0]})
    reasons = page[page.index('<table id="pending-reasons">') :]
    assert '<td colspan="3">none</td>' in reasons[: reasons.index("</table>")]
