"""Parked outbox rows: a row the broker refuses for itself (too large, say) moves here with the
error, so it never holds back the rows behind it.

Revision ID: 20261123_outbox_parked
Revises: 20261121_snapshots
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261123_outbox_parked"
down_revision = "20261121_snapshots"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outbox_parked",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("key", sa.String(253), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("outbox_parked")
