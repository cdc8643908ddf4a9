"""The short fault suite (tests/faults/suite.py) in `make test`: a ~20k-event stream, 5 kills and
every other fault once, on a broker and a PostgreSQL server of its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults import suite

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.mark.kafka
@pytest.mark.postgres
@pytest.mark.faults
@pytest.mark.timeout(2400)
def test_the_short_fault_suite_ends_with_every_decision_stored_and_published_as_replay_makes_them(
    tmp_path: Path,
) -> None:
    seed = int(os.environ.get("SCHEDSTREAM_FAULTS_SEED", "17"))
    lines: list[str] = []
    try:
        outcomes = suite.run_suite(
            tmp_path, suite.SHORT, suite.short_scenarios(suite.SHORT), seed, lines.append, require_servers=not IN_CI
        )
    except suite.ServersUnavailable as exc:
        pytest.skip(f"the fault suite needs Kafka and PostgreSQL: {exc}")
    report = "\n".join(lines)
    print(report)
    assert all(o.ok for o in outcomes), report
    kinds = {fault.split(" ")[0] for o in outcomes for fault in o.faults}
    assert kinds == set(suite.FAULTS), report
