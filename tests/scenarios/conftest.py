"""The scenario tests' command-line option: ``--update-expected`` rewrites every scenario's
expected.jsonl from the decisions the scheduler makes now (see README.md here)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-expected",
        action="store_true",
        default=False,
        help="rewrite tests/scenarios/*/*/expected.jsonl from the actual decisions; review the diff like code",
    )
