"""Alembic environment: runs migrations on the connection handed in by ``services.store``
(``config.attributes["connection"]``) or on ``sqlalchemy.url``. Imports nothing from the
project: each revision spells out its own columns."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

config = context.config


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_from_config(config.get_section(config.config_ini_section) or {}, poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, render_as_batch=conn.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()


run()
