"""The database schema as SQLAlchemy Core tables (the first Alembic revision spells the same
columns out on its own, so editing this file never rewrites history)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text, UniqueConstraint

metadata = MetaData()
# 64-bit ids that never run out on PostgreSQL; SQLite autoincrements only an INTEGER primary key.
ID = BigInteger().with_variant(Integer, "sqlite")

events = Table(
    "events",
    metadata,
    Column("cluster", String(253), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("type", String(16), nullable=False),
    Column("api_version", String(128), nullable=False, default=""),
    Column("kind", String(64), nullable=False, default=""),
    Column("namespace", String(253), nullable=False, default=""),
    Column("name", String(253), nullable=False, default=""),
    Column("uid", String(64), nullable=False, default=""),
    Column("payload", Text, nullable=False),
    Column("topic", String(249)),
    Column("partition", Integer),
    Column("offset", BigInteger),
    UniqueConstraint("topic", "partition", "offset", name="uq_events_source"),
    Index("ix_events_object", "cluster", "kind", "namespace", "name", "seq"),  # explain: an object's events
    Index("ix_events_type", "cluster", "type", "seq"),  # explain: a cluster's SCHEDULE markers
)

decisions = Table(
    "decisions",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("cluster", String(253), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("target_kind", String(64), nullable=False),
    Column("namespace", String(253), nullable=False),
    Column("name", String(253), nullable=False),
    Column("uid", String(64), nullable=False),
    Column("payload", Text, nullable=False),
    Index("ix_decisions_cluster_seq", "cluster", "seq", "ordinal", unique=True),
    Index(
        "ix_decisions_object", "cluster", "target_kind", "namespace", "name", "seq"
    ),  # explain: an object's decisions
)

object_status = Table(
    "object_status",
    metadata,
    Column("cluster", String(253), primary_key=True),
    Column("kind", String(64), primary_key=True),
    Column("namespace", String(253), primary_key=True),
    Column("name", String(253), primary_key=True),
    Column("uid", String(64), nullable=False),
    Column("decision_id", String(32), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("payload", Text, nullable=False),
)

rejects = Table(
    "rejects",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("position", String(512), nullable=False),
    Column("reason", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("topic", String(249)),
    Column("partition", Integer),
    Column("offset", BigInteger),
    UniqueConstraint("topic", "partition", "offset", name="uq_rejects_source"),
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("topic", String(249), nullable=False),
    Column("key", String(253), nullable=False),
    Column("payload", Text, nullable=False),
)

# Outbox rows the broker refused for themselves (the relay moved them here with the error).
outbox_parked = Table(
    "outbox_parked",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=False),
    Column("topic", String(249), nullable=False),
    Column("key", String(253), nullable=False),
    Column("payload", Text, nullable=False),
    Column("error", Text, nullable=False),
)

consumer_progress = Table(
    "consumer_progress",
    metadata,
    Column("consumer", String(249), primary_key=True),
    Column("topic", String(249), primary_key=True),
    Column("partition", Integer, primary_key=True, autoincrement=False),
    Column("offset", BigInteger, nullable=False),
)

clusters = Table(
    "clusters",
    metadata,
    Column("cluster", String(253), primary_key=True),
    Column("next_seq", BigInteger, nullable=False),
    Column("clock", String(16), nullable=False),
    Column("partition", Integer),
)

snapshots = Table(
    "snapshots",
    metadata,
    Column("cluster", String(253), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("next_seq", BigInteger, nullable=False),
    Column("payload", Text, nullable=False),
)
