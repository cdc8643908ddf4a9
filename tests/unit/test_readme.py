"""The README's lifecycle diagrams are the Mermaid rendering of the tables as they are now."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.lifecycle.catalog import MACHINES
from services.diagrams import mermaid

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("kind", sorted(MACHINES))
def test_the_readme_shows_the_current_diagram_of(kind: str) -> None:
    assert f"```mermaid\n{mermaid(MACHINES[kind].lifecycle)}\n```" in README.read_text()
