"""Progress of long runs (``simulate``, ``replay``): a bar on standard error when it is a
terminal, nothing otherwise (logs, pipes and CI stay clean). Drawn by ``rich``, which refreshes
from its own thread, so reporting costs the run a call per step and no drawing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

Report = Callable[[int, str], None]
"""report(done, note): ``done`` units of the total so far, and a short note (e.g. simulated time)."""


def silent(done: int, note: str) -> None:
    """The report of a run nobody watches."""


@contextmanager
def bar(description: str, total: int, *, console: Console | None = None) -> Iterator[Report]:
    """A ``Report`` that draws a bar of ``total`` units while the block runs, on a terminal."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield silent
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(description, total=total, note="")

        def report(done: int, note: str) -> None:
            progress.update(task, completed=done, note=note)

        yield report
