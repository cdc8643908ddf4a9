"""Progress bars: drawn on a terminal, silent otherwise; simulate and replay report to them."""

from __future__ import annotations

import io

from rich.console import Console

from domain.scheduler.config import SchedulerConfig
from services.pipeline import Record
from services.progress import bar, silent
from services.replay import replay_records
from services.simulate.loop import run_closed_loop
from tests.sim_traces import SMALL


def test_not_a_terminal_draws_nothing() -> None:
    out = io.StringIO()
    with bar("replay", 10, console=Console(file=out)) as report:
        report(10, "done")
    assert report is silent
    assert out.getvalue() == ""


def test_a_terminal_gets_the_bar_to_its_total() -> None:
    out = io.StringIO()
    with bar("simulate", 5, console=Console(file=out, force_terminal=True, width=100)) as report:
        report(5, "simulated 283.0 s")
    assert "simulate" in out.getvalue()
    assert "5/5" in out.getvalue()
    assert "simulated 283.0 s" in out.getvalue()


def test_simulate_and_replay_report_their_progress() -> None:
    heard: list[tuple[int, str]] = []
    events = io.BytesIO()
    run_closed_loop(SMALL, SMALL.nodes, SchedulerConfig(), events, io.BytesIO(), progress=lambda *a: heard.append(a))
    assert heard[0] == (2, "simulated 1.0 s")  # a and b arrived at 0, the first marker at 1
    assert heard[-1][0] == len(SMALL.jobs)
    heard.clear()
    records = [Record(value=line, position=str(i)) for i, line in enumerate(events.getvalue().splitlines())]
    replay_records(records, io.BytesIO(), config=SchedulerConfig(), progress=lambda *a: heard.append(a))
    assert heard == [(len(records), "")]
