"""Start-up against a database that is not there yet (issue 17 item 4): the worker retries with
backoff for SCHEDSTREAM_DB_WAIT seconds, then stops with one clear line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from services.store.startup import DatabaseUnreachable, upgrade_when_reachable

SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        dst.close()


class LateDoor:
    """Opens ``port`` only after ``delay`` seconds, then forwards it to the real server: the
    database "comes up" while the worker is already waiting for it."""

    def __init__(self, target: tuple[str, int], delay: float) -> None:
        self.port = _free_port()
        self.target = target
        self.delay = delay
        self.server: socket.socket | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        time.sleep(self.delay)
        self.server = socket.create_server(("127.0.0.1", self.port))
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


@pytest.fixture
def late_db(pg_url: str) -> Iterator[tuple[str, LateDoor]]:
    url = make_url(pg_url)
    door = LateDoor((url.host or "127.0.0.1", url.port or 5432), delay=3)
    yield url.set(host="127.0.0.1", port=door.port).render_as_string(hide_password=False), door
    door.close()


@pytest.mark.postgres
def test_the_store_waits_for_a_database_that_comes_up_late(late_db: tuple[str, LateDoor]) -> None:
    url, door = late_db
    started = time.monotonic()
    store = upgrade_when_reachable(url, wait=60)
    assert time.monotonic() - started >= door.delay
    assert store.count("events") == 0  # the schema is there
    store.close()


def test_the_store_gives_up_after_the_wait_with_one_line() -> None:
    url = f"postgresql+psycopg://nobody@127.0.0.1:{_free_port()}/nothing"
    with pytest.raises(DatabaseUnreachable) as caught:
        upgrade_when_reachable(url, wait=1.5)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("cannot reach the database at 127.0.0.1:") and "after 1.5 s" in message


def test_the_worker_without_its_database_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SCHEDSTREAM_DB_URL": f"postgresql+psycopg://nobody@127.0.0.1:{_free_port()}/nothing",
        "SCHEDSTREAM_DB_WAIT": "1",
        "SCHEDSTREAM_LOG_FORMAT": "json",
        "SCHEDSTREAM_DATA_DIR": str(tmp_path),
    }
    result = subprocess.run([SCHEDSTREAM, "worker"], check=False, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if not line.startswith("{")]  # JSON lines: the retries
    assert len(errors) == 1 and errors[0].startswith(
        "schedstream worker: error: cannot reach the database at 127.0.0.1:"
    ), result.stderr
    assert "Traceback" not in result.stderr
