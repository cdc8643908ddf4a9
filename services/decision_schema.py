"""Writes the JSON Schema of a decision line (``domain.decisions.schema``) for consumers of the
decisions topic: ``python -m services.decision_schema`` rewrites docs/decisions.schema.json;
tests/unit/domain/test_decision_types.py fails when the file is stale."""

from __future__ import annotations

import json
from pathlib import Path

from domain.decisions import schema

PATH = Path(__file__).resolve().parent.parent / "docs" / "decisions.schema.json"


def text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    PATH.write_text(text())
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
