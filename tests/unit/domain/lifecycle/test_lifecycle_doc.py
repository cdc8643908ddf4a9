"""The lifecycle diagrams in docs/lifecycle.md are the Mermaid rendering of the tables as they are now."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.lifecycle.catalog import MACHINES
from services.diagrams import mermaid

LIFECYCLE_DOC = Path(__file__).resolve().parents[4] / "docs" / "lifecycle.md"


@pytest.mark.parametrize("kind", sorted(MACHINES))
def test_the_lifecycle_doc_shows_the_current_diagram_of(kind: str) -> None:
    assert f"```mermaid\n{mermaid(MACHINES[kind].lifecycle)}\n```" in LIFECYCLE_DOC.read_text()
