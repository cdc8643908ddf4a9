"""``schedstream explain``: read the history from event files or the store, explain, print."""

from __future__ import annotations

import click
import msgspec

from domain.scheduler.config import SchedulerConfig
from services.explain import lookup
from services.explain.history import Cut, History, NotFound, Target, from_records
from services.explain.render import render
from services.explain.report import explain
from services.record_files import read_records


def run_explain(
    kind: str,
    ref: str,
    *,
    db_url: str | None,
    events: tuple[str, ...],
    at: str | None,
    cluster: str | None,
    config: SchedulerConfig,
    as_json: bool,
) -> str:
    """The explanation as text (or JSON); user errors are click errors."""
    target = Target.parse(kind, ref)
    try:
        cut = Cut.parse(at)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--at") from None
    try:
        history: History
        if db_url:
            history = lookup.from_store(db_url, config, target, cut, cluster)
        else:
            history = from_records(read_records(events), config, target, cut, cluster)
    except NotFound as exc:
        raise click.ClickException(str(exc)) from None
    report = explain(history, target, config)
    return msgspec.json.encode(report).decode() if as_json else render(report)
