"""The applier's ledger: the id of every decision it has acted on, and how that ended.

It lives in its own database (``--ledger``, by default ``SCHEDSTREAM_DATA_DIR/apply.db``), not in
the worker's store: the applier may run on another machine than the worker, and a ledger of
effects is the applier's own fact. Its one table is created on first use (no migration history
to keep: dropping the file only costs re-reading the decisions, which the effects make harmless).

Order of a decision's life: effect on the cluster, then its id here, then the Kafka offset. A
crash between the effect and the row re-applies the decision, which reads the cluster and finds
nothing to do; a row without a committed offset makes the repeated message a no-op.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Column, DateTime, MetaData, String, Table, Text, create_engine, func, insert, select
from sqlalchemy.engine import make_url

from services.kube.effects import Result

metadata = MetaData()
applied = Table(
    "applied_decisions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("cluster", String(253), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("target", String(600), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("detail", Text, nullable=False),
    Column("applied_at", DateTime(timezone=True), nullable=False),
)


def target_key(target: Mapping[str, str]) -> str:
    return f"{target['kind']}/{target.get('namespace', '')}/{target['name']}".replace("//", "/")


class Ledger:
    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_engine(url)
        metadata.create_all(self.engine)

    def has(self, decision_id: str) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(select(applied.c.id).where(applied.c.id == decision_id)).first() is not None

    def record(self, decision: Mapping[str, Any], result: Result) -> None:
        row = {
            "id": decision["id"],
            "cluster": decision.get("cluster", "default"),
            "kind": decision["kind"],
            "target": target_key(decision["target"]),
            "outcome": result.outcome.value,
            "detail": result.detail,
            "applied_at": datetime.now(UTC),
        }
        with self.engine.begin() as conn:
            conn.execute(insert(applied).values(**row))

    def outcomes(self) -> dict[str, int]:
        """How many decisions ended each way, over the ledger's whole life."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(applied.c.outcome, func.count()).group_by(applied.c.outcome))
            return {outcome: count for outcome, count in rows}

    def close(self) -> None:
        self.engine.dispose()
