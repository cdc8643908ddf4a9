"""report.html: one self-contained page (inline SVG and CSS, no script, no external asset) with
the headline table, the utilisation timeline per resource, the queue length timeline and the
wait-time CDF, each plot with one line per policy, then each queue's share against its deserved
share and the pending reasons, per policy."""

from __future__ import annotations

import html
import math
from typing import Any

from services.simulate.metrics import percentiles, table

WIDTH, HEIGHT, MARGIN = 640, 260, 48
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
CDF_LEVELS = 200
Series = dict[str, list[tuple[float, float]]]


TICKS = 5  # about this many labelled ticks per axis
TIME_UNITS = ((86400.0, "days"), (3600.0, "hours"), (60.0, "minutes"), (1.0, "s"))


def _number(value: float) -> str:
    return f"{value:.3g}"


def time_unit(span: float) -> tuple[float, str]:
    """The unit to label a time axis spanning ``span`` seconds: the largest of days, hours and
    minutes that the span holds at least twice, else seconds."""
    return next(((size, name) for size, name in TIME_UNITS if span >= 2 * size), TIME_UNITS[-1])


def ticks(lo: float, hi: float, count: int = TICKS) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) from ``lo`` to ``hi``, about ``count`` of them."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def chart(chart_id: str, title: str, series: Series, x_label: str, y_label: str, *, x_time: bool = False) -> str:
    """A line chart as an <svg> element: one <polyline class="series"> per non-empty series,
    ticks on both axes; with ``x_time`` the x values are seconds, labelled in the unit that
    suits their span (``x_label`` gets the unit)."""
    points = [point for values in series.values() for point in values]
    x_lo = min((x for x, _ in points), default=0.0)
    x_hi = max((x for x, _ in points), default=1.0)
    y_hi = max((y for _, y in points), default=1.0) or 1.0
    x_span = (x_hi - x_lo) or 1.0
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN
    unit, unit_name = time_unit(x_span) if x_time else (1.0, "")

    def at(x: float, y: float) -> str:
        return f"{MARGIN + (x - x_lo) / x_span * plot_w:.1f},{HEIGHT - MARGIN - y / y_hi * plot_h:.1f}"

    label = f"{x_label} ({unit_name})" if x_time else x_label
    parts = [
        f'<svg id="{chart_id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}"'
        f' viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" class="title">{html.escape(title)}</text>',
        f'<line class="axis" x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}"/>',
        f'<line class="axis" x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{HEIGHT - MARGIN}"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle">{html.escape(label)}</text>',
        f'<text x="12" y="{HEIGHT / 2}" transform="rotate(-90 12 {HEIGHT / 2})" text-anchor="middle">'
        f"{html.escape(y_label)}</text>",
    ]
    for value in ticks(x_lo / unit, (x_lo + x_span) / unit):
        x = MARGIN + (value * unit - x_lo) / x_span * plot_w
        parts.append(
            f'<line class="tick" x1="{x:.1f}" y1="{HEIGHT - MARGIN}" x2="{x:.1f}" y2="{HEIGHT - MARGIN + 4}"/>'
        )
        parts.append(f'<text class="x-tick" x="{x:.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle">'
                     f"{_number(value)}</text>")  # fmt: skip
    for value in ticks(0.0, y_hi):
        y = HEIGHT - MARGIN - value / y_hi * plot_h
        parts.append(f'<line class="tick" x1="{MARGIN - 4}" y1="{y:.1f}" x2="{MARGIN}" y2="{y:.1f}"/>')
        parts.append(f'<text class="y-tick" x="{MARGIN - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(value)}</text>')
    for index, (name, values) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        if values:
            line = " ".join(at(x, y) for x, y in values)
            parts.append(
                f'<polyline class="series" data-policy="{html.escape(name)}" fill="none" stroke="{colour}"'
                f' stroke-width="1.5" points="{line}"/>'
            )
        legend_y = MARGIN + 14 * index
        parts.append(
            f'<text class="legend" x="{WIDTH - MARGIN - 4}" y="{legend_y}" text-anchor="end" fill="{colour}">'
            f"{html.escape(name)}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.1%}"


def _ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}"


def _steps(samples: list[list[float]], scale: float = 1.0) -> list[tuple[float, float]]:
    """The samples from the run's first instant on (x = 0 there), y times ``scale``."""
    origin = samples[0][0] if samples else 0.0
    return [(x - origin, y * scale) for x, y in samples]


def _cdf(waits: list[float]) -> list[tuple[float, float]]:
    if not waits:
        return []
    steps = range(CDF_LEVELS + 1)
    found = percentiles(waits, [100 * step / CDF_LEVELS for step in steps])
    return [(value, step / CDF_LEVELS) for value, step in zip(found, steps, strict=True)]


def render(title: str, metrics: dict[str, dict[str, Any]], waits: dict[str, list[float]]) -> str:
    """The page for ``metrics`` (policy -> metrics.compute) and each policy's job waits."""
    first = next(iter(metrics.values()))
    charts = [
        chart(
            f"utilisation-{resource.replace('/', '-').replace('.', '-')}",
            f"Allocated {resource} (share of capacity)",
            {policy: _steps(m["utilisation_timeline"][resource], 100.0) for policy, m in metrics.items()},
            "simulated time since the first submit",
            "%",
            x_time=True,
        )
        for resource in first["utilisation_timeline"]
    ]
    charts.append(
        chart(
            "queue-length",
            "Waiting jobs",
            {policy: _steps(m["waiting_timeline"]) for policy, m in metrics.items()},
            "simulated time since the first submit",
            "jobs",
            x_time=True,
        )
    )
    charts.append(
        chart(
            "wait-cdf",
            "Wait time CDF",
            {policy: _cdf(values) for policy, values in waits.items()},
            "wait",
            "share of started jobs",
            x_time=True,
        )
    )
    shares = "".join(
        f"<tr><td>{html.escape(policy)}</td><td>{html.escape(queue)}</td><td>{html.escape(resource)}</td>"
        f"<td>{_percent(owed)}</td><td>{_percent(numbers['allocated'][resource])}</td>"
        f"<td>{_ratio(numbers['ratio'][resource])}</td></tr>"
        for policy, m in metrics.items()
        for queue, numbers in m["queues"].items()
        for resource, owed in numbers["deserved"].items()
    )
    reasons = (
        "".join(
            f"<tr><td>{html.escape(policy)}</td><td>{html.escape(reason)}</td><td>{count}</td></tr>"
            for policy, m in metrics.items()
            for reason, count in m["pending_reasons"].items()
        )
        or '<tr><td colspan="3">none</td></tr>'
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
svg.chart {{ display: block; margin: 1em 0; background: #fafafa; }}
svg text {{ font-size: 11px; }} svg text.title {{ font-size: 13px; font-weight: bold; }}
line.axis, line.tick {{ stroke: #444; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 2px 8px; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<pre id="summary">{html.escape(table(metrics))}</pre>
{"".join(charts)}
<h2>Queue shares</h2>
<p>Time-weighted share of the capacity each queue's running pods held, against its deserved share.</p>
<table id="queue-shares"><tr><th>policy</th><th>queue</th><th>resource</th><th>deserved</th><th>allocated</th>
<th>allocated / deserved</th></tr>{shares}</table>
<h2>Pending reasons</h2>
<table id="pending-reasons"><tr><th>policy</th><th>reason</th><th>statuses</th></tr>{reasons}</table>
</body></html>
"""
