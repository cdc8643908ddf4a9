"""The live status page: one self-contained HTML document (no script, no external asset) that
reloads itself every few seconds: readiness and lag per partition, then per cluster a line when
its cycles keep raising, its queues (allocated / deserved / capability), its ClusterQueues
(usage / nominal quota), the gangs and workloads still waiting with their reasons, the room
gangs past their waiting bound held in the last cycle, and the worker's most recent decisions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from html import escape

from domain import quantity
from domain.decisions import Decision
from domain.objects.meta import timestamp
from services.observe.observer import Observer
from services.observe.view import ClusterView, view_of

REFRESH_SECONDS = 5

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 1.5em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #e8eef7; }
.ready { color: #fff; background: #2a7d2a; padding: 0.2em 0.6em; }
.not-ready { color: #fff; background: #b03030; padding: 0.2em 0.6em; }
.none { color: #777; font-style: italic; }
.failing { color: #fff; background: #b03030; padding: 0.4em 0.6em; }
"""


def _amounts(values: Mapping[str, int]) -> str:
    shown = [f"{name}: {quantity.format_milli(name, amount)}" for name, amount in sorted(values.items())]
    return ", ".join(shown) or "-"


def _moment(moment: datetime | None) -> str:
    """A moment in ISO 8601 (UTC); "-" for none."""
    return "-" if moment is None else timestamp(moment)


def _table(table_id: str, headers: Iterable[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    if not rows:
        return f'<p class="none" id="{table_id}">none</p>'
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><tr>{head}</tr>{body}</table>'


def _cluster(view: ClusterView) -> str:
    queues = [
        [q.name, q.state, _amounts(q.allocated), _amounts(q.deserved), _amounts(q.capability),
         "-" if q.share is None else f"{q.share:.2f}"]
        for q in view.queues
    ]  # fmt: skip
    cluster_queues = [
        [cq.name, cq.cohort or "-", f"{flavor}/{resource}",
         quantity.format_milli(resource, cq.usage.get((flavor, resource), 0)),
         quantity.format_milli(resource, nominal), str(cq.pending["active"] + cq.pending["inadmissible"])]
        for cq in view.cluster_queues
        for (flavor, resource), nominal in cq.nominal.items()
    ]  # fmt: skip
    waiting = [
        [row.kind, row.key, row.queue, row.phase, row.reason or "-", row.message or "-", str(row.since_seq)]
        for row in view.waiting
    ]
    held = [[row.gang, str(row.nodes), _amounts(row.held), _moment(row.starts_by)] for row in view.held]
    name = escape(view.cluster)
    failing = ""
    if view.failing is not None:
        last = _moment(datetime.fromtimestamp(view.failing.last, UTC))
        failing = (
            f'<p class="failing" id="failing-{name}">{view.failing.count} scheduling cycles in a row raised'
            f" (the last at {last}) and were skipped: the DLQ's rejects say why.</p>"
        )
    return (
        f"<h2>Cluster {name} <small>({view.next_seq} events)</small></h2>"
        + failing
        + "<h3>Queues</h3>"
        + _table(f"queues-{name}", ["queue", "state", "allocated", "deserved", "capability", "share"], queues)
        + "<h3>ClusterQueues</h3>"
        + _table(
            f"cluster-queues-{name}",
            ["cluster queue", "cohort", "flavor/resource", "usage", "nominal quota", "pending"],
            cluster_queues,
        )
        + "<h3>Waiting gangs and workloads</h3>"
        + _table(f"waiting-{name}", ["kind", "object", "queue", "phase", "reason", "message", "since seq"], waiting)
        + "<h3>Room held for gangs past their waiting bound (last cycle)</h3>"
        + _table(f"held-{name}", ["gang", "nodes", "held", "starts by"], held)
    )


def _decision(decision: Decision) -> list[str]:
    target = decision.target
    key = f"{target.namespace}/{target.name}" if target.namespace else target.name
    detail = decision.fields.get("node") or decision.fields.get("phase") or decision.fields.get("state") or ""
    return [decision.cluster, str(decision.seq), decision.kind.value, f"{target.kind} {key}", decision.reason, detail]


def render(observer: Observer) -> str:
    ready = '<span class="ready">ready</span>' if observer.ready else '<span class="not-ready">not ready</span>'
    lags = [[str(p), str(lag)] for p, lag in sorted(observer.lags.items())]
    recent = [_decision(d) for d in reversed(observer.recent)]
    states = sorted(observer.states(), key=lambda s: s.name)
    clusters = "".join(_cluster(view_of(state, observer.failing(state.name))) for state in states)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">'
        f"<title>schedstream worker</title><style>{_STYLE}</style></head><body>"
        f"<h1>schedstream worker {ready}</h1>"
        + "<h2>Lag per partition</h2>"
        + _table("lag", ["partition", "messages behind"], lags)
        + (clusters or '<p class="none">no cluster yet</p>')
        + "<h2>Recent decisions</h2>"
        + _table("recent", ["cluster", "seq", "kind", "target", "reason", "detail"], recent)
        + "</body></html>"
    )
