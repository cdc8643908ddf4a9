"""Store: the SQLAlchemy-backed event store, decision log and outbox.

One ``write_batch`` is one transaction: the batch's events, decisions, rejects, their outbox
rows, the objects' current status, the per-cluster seq counter and the consumer's progress
commit together or not at all, so a crash at any point either keeps a whole batch or none of
it, and the consumer's offsets in the database say exactly what was processed.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, bindparam, create_engine, delete, event, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import StaticPool

import migrations
from services.store import tables
from services.store.batch import Batch

# From this many rows on, an upsert on PostgreSQL goes through COPY and a staging table; below it
# the extra statements cost more than executemany saves.
COPY_UPSERT_ROWS = 64
# The outbox rows read at a time, oldest first.
OUTBOX_PAGE = 1000
# Built once: the outbox is read and emptied after every batch.
_PENDING_OUTBOX = (
    select(tables.outbox.c.id, tables.outbox.c.topic, tables.outbox.c.key, tables.outbox.c.payload)
    .order_by(tables.outbox.c.id)
    .limit(bindparam("limit"))
)
_DELETE_OUTBOX = delete(tables.outbox).where(tables.outbox.c.id.in_(bindparam("ids", expanding=True)))
# The staging tables made in a database session (``Connection.info``), so each is made once.
STAGING = "schedstream staging tables"


def create_db_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        engine = create_engine(url, connect_args={"check_same_thread": False}, poolclass=StaticPool)
    elif parsed.get_backend_name() == "sqlite":  # a file: no server to have gone away, no ping
        engine = create_engine(url)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")  # a commit survives power loss before Kafka is acked
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.close()

    return engine


class Store:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_db_engine(url)

    def upgrade(self) -> None:
        """Bring the schema to the newest Alembic revision (a no-op when it is current)."""
        cfg = Config()
        cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
        with self.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def close(self) -> None:
        self.engine.dispose()

    # -- writes ---------------------------------------------------------------------------

    def write_batch(self, batch: Batch) -> None:
        info: dict[Any, Any] = {}
        try:
            with self.engine.begin() as conn:
                info = conn.info
                self._write(conn, batch)
        except BaseException:
            info.pop(STAGING, None)  # a rolled-back transaction takes the staging tables it made with it
            raise

    def _write(self, conn: Connection, batch: Batch) -> None:
        for table, rows in (
            (tables.events, batch.events),
            (tables.decisions, batch.decisions),
            (tables.rejects, batch.rejects),
            (tables.outbox, batch.outbox),
        ):
            if rows:
                self._insert(conn, table, rows)
        self._upsert(
            conn, tables.object_status, list(batch.statuses.values()), ("cluster", "kind", "namespace", "name")
        )
        self._upsert(conn, tables.clusters, list(batch.clusters.values()), ("cluster",))
        self._upsert(conn, tables.snapshots, list(batch.snapshots.values()), ("cluster",))
        progress = [{"consumer": c, "topic": t, "partition": p, "offset": o} for (c, t, p), o in batch.progress.items()]
        self._upsert(conn, tables.consumer_progress, progress, ("consumer", "topic", "partition"))

    @staticmethod
    def _insert(conn: Connection, table: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append rows: COPY on PostgreSQL (3-4x the rows per second of executemany there, which
        psycopg runs without insertmanyvalues); on SQLite the driver's executemany of the rows'
        values, read as COPY reads them (SQLAlchemy's would bind each row's dict again)."""
        if conn.dialect.name == "postgresql":
            Store._copy(conn, table.name, table, rows)
            return
        names, values = _row_values(table, rows)
        quote = conn.dialect.identifier_preparer.quote
        columns = ", ".join(quote(name) for name in names)
        marks = ", ".join("?" * len(names))  # sqlite3's paramstyle; the driver's executemany, no per-row binding here
        conn.exec_driver_sql(f"INSERT INTO {quote(table.name)} ({columns}) VALUES ({marks})", list(values))

    @staticmethod
    def _upsert(conn: Connection, table: Any, rows: Sequence[Mapping[str, Any]], keys: tuple[str, ...]) -> None:
        """Insert or update by ``keys``. On PostgreSQL, many rows are COPYed into a temporary twin of
        the table (emptied at commit), then merged with one INSERT ... SELECT ... ON CONFLICT."""
        if not rows:
            return
        postgres = conn.dialect.name == "postgresql"
        if postgres and len(rows) >= COPY_UPSERT_ROWS:
            quote = conn.dialect.identifier_preparer.quote
            staging = quote(f"staging_{table.name}")
            made = conn.info.setdefault(STAGING, set())  # kept with the database session, as they are
            if staging not in made:
                conn.exec_driver_sql(
                    f"CREATE TEMP TABLE IF NOT EXISTS {staging} (LIKE {quote(table.name)}) ON COMMIT DELETE ROWS"
                )
                made.add(staging)
            names = Store._copy(conn, f"staging_{table.name}", table, rows)
            columns = ", ".join(quote(name) for name in names)
            updates = ", ".join(f"{quote(n)} = EXCLUDED.{quote(n)}" for n in names if n not in keys)
            conn.exec_driver_sql(
                f"INSERT INTO {quote(table.name)} ({columns}) SELECT {columns} FROM {staging} "
                f"ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO UPDATE SET {updates}"
            )
            return
        conn.execute(_upsert_statement(conn.dialect.name, table, keys), list(rows))

    @staticmethod
    def _copy(conn: Connection, target: str, table: Any, rows: Sequence[Mapping[str, Any]]) -> list[str]:
        """COPY rows of ``table``'s shape into ``target`` on the transaction's own connection (a
        column a row leaves out gets its default); a database error is raised as SQLAlchemy raises
        it (IntegrityError for a duplicate key). Returns the columns written."""
        names, values = _row_values(table, rows)
        quote = conn.dialect.identifier_preparer.quote
        statement = f"COPY {quote(target)} ({', '.join(quote(name) for name in names)}) FROM STDIN"
        dbapi = conn.dialect.loaded_dbapi
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            with cursor.copy(statement) as copy:
                for value in values:
                    copy.write_row(value)
        except dbapi.Error as exc:
            raise DBAPIError.instance(statement, None, exc, dbapi.Error, dialect=conn.dialect) from exc
        return names

    def delete_outbox(self, ids: Sequence[int]) -> None:
        with self.engine.begin() as conn:
            conn.execute(_DELETE_OUTBOX, {"ids": list(ids)})

    def park_outbox(self, row_id: int, error: str) -> None:
        """Move one outbox row the broker refused for itself to ``outbox_parked``, with the error."""
        o, parked = tables.outbox, tables.outbox_parked
        with self.engine.begin() as conn:
            row = conn.execute(select(o.c.id, o.c.topic, o.c.key, o.c.payload).where(o.c.id == row_id)).one_or_none()
            if row is None:
                return
            conn.execute(parked.insert(), [{**row._asdict(), "error": error}])
            conn.execute(delete(o).where(o.c.id == row_id))

    # -- reads ----------------------------------------------------------------------------

    def progress(self, consumer: str) -> dict[tuple[str, int], int]:
        p = tables.consumer_progress
        with self.engine.connect() as conn:
            rows = conn.execute(select(p.c.topic, p.c.partition, p.c.offset).where(p.c.consumer == consumer))
            return {(topic, partition): offset for topic, partition, offset in rows}

    def clusters(self) -> dict[str, tuple[int, str, int | None]]:
        """cluster -> (next seq, clock owner, events partition)."""
        c = tables.clusters
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.c.cluster, c.c.next_seq, c.c.clock, c.c.partition))
            return {name: (next_seq, clock, partition) for name, next_seq, clock, partition in rows}

    def snapshots(self) -> dict[str, tuple[int, int, str]]:
        """cluster -> (format version, next seq, payload) of its latest snapshot."""
        t = tables.snapshots
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.cluster, t.c.version, t.c.next_seq, t.c.payload))
            return {cluster: (version, next_seq, payload) for cluster, version, next_seq, payload in rows}

    def iter_events(self, cluster: str, page: int = 5000, start: int = 0) -> Iterator[tuple[int, str]]:
        """(seq, payload) of a cluster's stored events from seq ``start`` on, in seq order, read in pages."""
        e = tables.events
        after = start - 1
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(e.c.seq, e.c.payload)
                    .where(e.c.cluster == cluster, e.c.seq > after)
                    .order_by(e.c.seq)
                    .limit(page)
                ).all()
            if not rows:
                return
            yield from ((seq, payload) for seq, payload in rows)
            after = rows[-1][0]

    def pending_outbox(self, limit: int = OUTBOX_PAGE) -> list[tuple[int, str, str, str]]:
        with self.engine.connect() as conn:
            rows = conn.execute(_PENDING_OUTBOX, {"limit": limit})
            return [(i, topic, key, payload) for i, topic, key, payload in rows]

    def decisions(self, cluster: str | None = None) -> list[str]:
        """Decision payloads in (cluster, seq, ordinal) order."""
        d = tables.decisions
        query = select(d.c.payload).order_by(d.c.cluster, d.c.seq, d.c.ordinal)
        if cluster is not None:
            query = query.where(d.c.cluster == cluster)
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def rejects(self) -> list[tuple[str, str]]:
        r = tables.rejects
        with self.engine.connect() as conn:
            return [(p, reason) for p, reason in conn.execute(select(r.c.position, r.c.reason).order_by(r.c.id))]

    def count(self, table_name: str) -> int:
        table = tables.metadata.tables[table_name]
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


@functools.cache
def _upsert_statement(dialect: str, table: Any, keys: tuple[str, ...]) -> Any:
    """INSERT ... ON CONFLICT (keys) DO UPDATE of every other column, built once per table: building
    it (its ``excluded`` columns) cost more than running it for a batch's few rows."""
    stmt = (postgresql if dialect == "postgresql" else sqlite).insert(table)
    updates = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys}
    return stmt.on_conflict_do_update(index_elements=list(keys), set_=updates)


def _row_values(table: Any, rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], Iterator[Sequence[Any]]]:
    """The columns to write of ``table`` for ``rows`` and each row's values in their order: the
    first row's columns, then those only a default fills (a column a row leaves out gets its
    default). A row with the first row's keys (every row a batch makes) is read with one
    ``itemgetter`` call; another, column by column."""
    first = rows[0].keys()
    given = [c.name for c in table.columns if c.name in first]
    filled = [c for c in table.columns if c.name not in first and c.default is not None]
    names = given + [c.name for c in filled]
    defaults = {c.name: c.default.arg for c in filled if c.default.is_scalar}
    tail = tuple(defaults.get(c.name) for c in filled)
    get = operator.itemgetter(*given) if len(given) > 1 else lambda row: tuple(row[name] for name in given)
    values = (
        get(row) + tail if row.keys() == first else tuple(row.get(name, defaults.get(name)) for name in names)
        for row in rows
    )
    return names, values
