"""Diagrams of the lifecycle machines: each kind's transition table as text, Mermaid or
Graphviz, rendered from the tables in ``domain.lifecycle`` (the ``schedstream machines``
command). Rows with the same source and target share one edge, labelled with their facts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.lifecycle.table import Lifecycle

Machine = Lifecycle[Any, Any]


def _edges(lifecycle: Machine) -> list[tuple[str, str, list[str]]]:
    """(source, target, triggers) in table order of each edge's first row."""
    edges: dict[tuple[str, str], list[str]] = {}
    for row in lifecycle.rows:
        edges.setdefault((row.source.value, row.target.value), []).append(row.trigger.value)
    return [(source, target, triggers) for (source, target), triggers in edges.items()]


def table(lifecycle: Machine) -> str:
    """The rows as an aligned text table, one line per row, under the kind's name."""
    rows = [("in phase", "fact", "moves to")]
    rows += [(r.source.value, r.trigger.value, r.target.value) for r in lifecycle.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{lifecycle.kind} (initial: {lifecycle.initial.value})"]
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def mermaid(lifecycle: Machine) -> str:
    """A Mermaid ``stateDiagram-v2``: initial and terminal phases are joined to ``[*]``."""
    lines = ["stateDiagram-v2", f"    %% {lifecycle.kind}", f"    [*] --> {lifecycle.initial.value}"]
    lines += [f"    {source} --> {target} : {', '.join(triggers)}" for source, target, triggers in _edges(lifecycle)]
    lines += [f"    {phase.value} --> [*]" for phase in lifecycle.phases if lifecycle.is_terminal(phase)]
    return "\n".join(lines)


def dot(lifecycle: Machine) -> str:
    """A Graphviz digraph; terminal phases are double circles."""
    lines = [
        f'digraph "{lifecycle.kind}" {{',
        "    rankdir=LR;",
        "    node [shape=box, style=rounded];",
        '    "__start" [shape=point, label=""];',
    ]
    lines += [
        f'    "{phase.value}" [shape=doublecircle];' for phase in lifecycle.phases if lifecycle.is_terminal(phase)
    ]
    lines.append(f'    "__start" -> "{lifecycle.initial.value}";')
    for source, target, triggers in _edges(lifecycle):
        label = "\\n".join(triggers)
        lines.append(f'    "{source}" -> "{target}" [label="{label}"];')
    lines.append("}")
    return "\n".join(lines)


FORMATS: dict[str, Callable[[Machine], str]] = {"table": table, "mermaid": mermaid, "dot": dot}
