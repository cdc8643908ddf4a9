"""Session fixtures for the real components: a Kafka broker (ops/local_kafka.py), a
PostgreSQL server (ops/local_postgres.py) and a Kubernetes API server with kwok
(ops/local_kube.py), or yours from SCHEDSTREAM_KAFKA_BOOTSTRAP / SCHEDSTREAM_TEST_PG_URL /
SCHEDSTREAM_KUBECONFIG. Outside CI a component that cannot be started skips its tests with
the reason; with CI=true it fails the run."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from ops.local_kafka import LocalKafka
from ops.local_kube import ENV_KUBECONFIG, LocalKube
from ops.local_postgres import LocalPostgres
from tests.shared_data import SHARED_DATA

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".local" / "pytest"
IN_CI = os.environ.get("CI", "").lower() == "true"
_databases = itertools.count()


def _unavailable(what: str, exc: BaseException) -> None:
    message = f"{what} is not available: {exc}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: tests that need it must run)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    external = os.environ.get("SCHEDSTREAM_KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    workdir = WORK / "kafka"
    shutil.rmtree(workdir, ignore_errors=True)
    broker = LocalKafka(workdir)
    try:
        bootstrap = broker.start()
    except Exception as exc:  # any failure to start is reported the same way
        _unavailable("the Kafka broker", exc)
    try:
        yield bootstrap
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """URL of a PostgreSQL server on which the tests may create databases."""
    external = os.environ.get("SCHEDSTREAM_TEST_PG_URL")
    if external:
        yield external
        return
    # Under /tmp, not the checkout: the server runs as the postgres user, who may not be allowed
    # into the checkout's parents (root's home is 0700), and its socket path must stay short.
    workdir = Path(tempfile.mkdtemp(prefix="schedstream-pg-"))
    server = LocalPostgres(workdir)
    try:
        url = server.start()
    except Exception as exc:
        _unavailable("PostgreSQL", exc)
    try:
        yield url
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    """A fresh, empty database on the test server."""
    name = f"schedstream_t{os.getpid()}_{next(_databases)}"
    engine = create_engine(postgres_server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(postgres_server).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store test runs on the embedded SQLite default and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="session")
def local_kube() -> Iterator[LocalKube]:
    """etcd + kube-apiserver + kwok built and started here (tests that compact etcd need this one)."""
    if os.environ.get(ENV_KUBECONFIG):
        pytest.skip(f"{ENV_KUBECONFIG} names your cluster; this test needs the local API server's etcd")
    workdir = WORK / "kube"
    LocalKube(workdir).stop()  # one left running by an interrupted session, then its data
    shutil.rmtree(workdir, ignore_errors=True)
    server = LocalKube(workdir, kwok=True)
    try:
        server.start(timeout=300)
    except Exception as exc:
        _unavailable("the local Kubernetes API server", exc)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kubeconfig(request: pytest.FixtureRequest) -> Path:
    """A kubeconfig of a cluster the tests may write to: yours (SCHEDSTREAM_KUBECONFIG) or the local one."""
    external = os.environ.get(ENV_KUBECONFIG)
    if external:
        return Path(external)
    server: LocalKube = request.getfixturevalue("local_kube")
    return server.kubeconfig


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real traces and manifests (tests/shared_data.py says where they are looked for)."""
    if not SHARED_DATA.is_dir():
        _unavailable("the shared data folder", FileNotFoundError(str(SHARED_DATA)))
    return SHARED_DATA
