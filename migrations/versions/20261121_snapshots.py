"""Snapshots: one row per cluster with its latest domain snapshot, so a restart folds only the
events after it.

Revision ID: 20261121_snapshots
Revises: 20261121_initial
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "20261121_snapshots"
down_revision = "20261121_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "snapshots",
        sa.Column("cluster", sa.String(253), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("next_seq", sa.BigInteger, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("snapshots")
