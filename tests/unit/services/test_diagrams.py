"""services.diagrams and ``schedstream machines``: the lifecycle tables rendered as text,
Mermaid and Graphviz, each edge and row of the table present."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from domain.lifecycle.catalog import MACHINES
from domain.lifecycle.node import NODE
from domain.lifecycle.table import Lifecycle
from services import diagrams
from services.cli import main

LIFECYCLES = [m.lifecycle for m in MACHINES.values()]


def test_the_node_machine_as_a_table() -> None:
    lines = diagrams.table(NODE).splitlines()
    assert lines[:4] == [
        "Node (initial: Ready)",
        "in phase       fact                   moves to",
        "-------------  ---------------------  -------------",
        "Ready          ObservedReady          Ready",
    ]
    assert len(lines) == 3 + len(NODE.rows)


def test_the_node_machine_in_mermaid() -> None:
    assert diagrams.mermaid(NODE).splitlines()[:5] == [
        "stateDiagram-v2",
        "    %% Node",
        "    [*] --> Ready",
        "    Ready --> Ready : ObservedReady",
        "    Ready --> Unschedulable : ObservedUnschedulable",
    ]
    assert diagrams.mermaid(NODE).splitlines()[-1] == "    Deleted --> [*]"


@pytest.mark.parametrize("lc", LIFECYCLES, ids=lambda lc: lc.kind)
def test_every_row_is_drawn_once_per_edge(lc: Lifecycle[Any, Any]) -> None:
    mermaid, dot = diagrams.mermaid(lc), diagrams.dot(lc)
    for row in lc.rows:
        same_edge = [r.trigger.value for r in lc.rows if (r.source, r.target) == (row.source, row.target)]
        assert f"    {row.source} --> {row.target} : {', '.join(same_edge)}" in mermaid.splitlines()
        label = "\\n".join(same_edge)
        assert f'    "{row.source}" -> "{row.target}" [label="{label}"];' in dot.splitlines()
    assert dot.startswith(f'digraph "{lc.kind}" {{') and dot.endswith("}")
    assert f'"__start" -> "{lc.initial}";' in dot


def test_the_command_prints_every_machine_by_default() -> None:
    result = CliRunner().invoke(main, ["machines"])
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if "(initial:" in line] == [
        f"{lc.kind} (initial: {lc.initial})" for lc in LIFECYCLES
    ]


def test_the_command_draws_chosen_kinds() -> None:
    result = CliRunner().invoke(main, ["machines", "--format", "mermaid", "--kind", "Node", "--kind", "Queue"])
    assert result.exit_code == 0, result.output
    assert result.output == diagrams.mermaid(NODE) + "\n\n" + diagrams.mermaid(MACHINES["Queue"].lifecycle) + "\n"


def test_the_command_names_an_unknown_kind() -> None:
    result = CliRunner().invoke(main, ["machines", "--kind", "Deployment"])
    assert result.exit_code == 2
    assert "no machine for Deployment" in result.output
