"""Explain's object index: an object's events and decisions found by (cluster, kind, namespace,
name), and a cluster's SCHEDULE markers by type, without scanning the cluster's whole stream.

Revision ID: 20261123_explain_object_index
Revises: 20261123_outbox_parked
"""

from __future__ import annotations

from alembic import op

revision = "20261123_explain_object_index"
down_revision = "20261123_outbox_parked"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_events_object", "events", ["cluster", "kind", "namespace", "name", "seq"])
    op.create_index("ix_events_type", "events", ["cluster", "type", "seq"])
    op.create_index("ix_decisions_object", "decisions", ["cluster", "target_kind", "namespace", "name", "seq"])


def downgrade() -> None:
    op.drop_index("ix_decisions_object", table_name="decisions")
    op.drop_index("ix_events_type", table_name="events")
    op.drop_index("ix_events_object", table_name="events")
