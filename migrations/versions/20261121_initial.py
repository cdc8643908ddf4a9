"""Initial schema: event store, decisions, object status, rejects, outbox, consumer progress,
clusters.

Revision ID: 20261121_initial
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261121_initial"
down_revision = None
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("cluster", sa.String(253), primary_key=True),
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("api_version", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("namespace", sa.String(253), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("topic", sa.String(249)),
        sa.Column("partition", sa.Integer),
        sa.Column("offset", sa.BigInteger),
        sa.UniqueConstraint("topic", "partition", "offset", name="uq_events_source"),
    )
    op.create_table(
        "decisions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("cluster", sa.String(253), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("target_kind", sa.String(64), nullable=False),
        sa.Column("namespace", sa.String(253), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.create_index("ix_decisions_cluster_seq", "decisions", ["cluster", "seq", "ordinal"], unique=True)
    op.create_table(
        "object_status",
        sa.Column("cluster", sa.String(253), primary_key=True),
        sa.Column("kind", sa.String(64), primary_key=True),
        sa.Column("namespace", sa.String(253), primary_key=True),
        sa.Column("name", sa.String(253), primary_key=True),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("decision_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.create_table(
        "rejects",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("position", sa.String(512), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("topic", sa.String(249)),
        sa.Column("partition", sa.Integer),
        sa.Column("offset", sa.BigInteger),
        sa.UniqueConstraint("topic", "partition", "offset", name="uq_rejects_source"),
    )
    op.create_table(
        "outbox",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("key", sa.String(253), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.create_table(
        "consumer_progress",
        sa.Column("consumer", sa.String(249), primary_key=True),
        sa.Column("topic", sa.String(249), primary_key=True),
        sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("offset", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "clusters",
        sa.Column("cluster", sa.String(253), primary_key=True),
        sa.Column("next_seq", sa.BigInteger, nullable=False),
        sa.Column("clock", sa.String(16), nullable=False),
        sa.Column("partition", sa.Integer),
    )


def downgrade() -> None:
    for table in ("clusters", "consumer_progress", "outbox", "rejects", "object_status", "decisions", "events"):
        op.drop_table(table)
