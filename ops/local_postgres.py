"""Run a throwaway PostgreSQL server on 127.0.0.1 from the distribution's packages (Linux).

Everything lives in one work directory: the cluster in ``data/``, the unix socket in
``sock/``, the server log ``postgres.log`` and the state file ``postgres.json``
(``{port, url, pid}``).  The server listens on 127.0.0.1 only, on a free port, trusts every
local connection as the ``postgres`` role and runs with ``fsync=off``: it is for tests and
local runs, never for data of value.  From the shell::

    python -m ops.local_postgres start --dir DIR    # prints SCHEDSTREAM_DB_URL=postgresql+psycopg://...
    python -m ops.local_postgres status --dir DIR   # exit 0 and the URL if running, else 1
    python -m ops.local_postgres stop --dir DIR

``start`` detaches: the server keeps running after the command exits, until ``stop``.
If SCHEDSTREAM_TEST_PG_URL is set, ``start`` starts nothing and prints that URL instead.

PostgreSQL refuses to run as root, so as root ``initdb``/``pg_ctl`` (hence the server) run
as the ``postgres`` system user that Debian's package creates, and DIR is handed to it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import logging
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from types import TracebackType

import psycopg
from psycopg import sql
from sqlalchemy import URL

DATABASE = "schedstream"
SUPERUSER = "postgres"
HOST = "127.0.0.1"
ENV_DB_URL = "SCHEDSTREAM_DB_URL"
ENV_OVERRIDE = "SCHEDSTREAM_TEST_PG_URL"
# sockaddr_un.sun_path holds 108 bytes, the terminating NUL included.
MAX_SOCKET_PATH = 107
PORT_ATTEMPTS = 3

log = logging.getLogger("ops.local_postgres")


class LocalPostgresError(RuntimeError):
    """The local server could not be found, started or stopped."""


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``.

    ``pg_config --bindir`` first, then the highest ``/usr/lib/postgresql/<major>/bin``
    (Debian's layout, where neither tool is on PATH), then wherever ``initdb`` is on PATH.
    """
    candidates: list[Path] = []
    if pg_config := shutil.which("pg_config"):
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    versioned = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()]
    candidates += sorted(versioned, key=lambda p: int(p.parent.name), reverse=True)
    if initdb := shutil.which("initdb"):
        candidates.append(Path(initdb).parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise LocalPostgresError("PostgreSQL server binaries not found: apt-get install postgresql")


class LocalPostgres:
    """One throwaway server whose cluster, socket and log live in ``workdir``.

    The cluster's ``data/postmaster.pid`` tells whether, and on which port, the server runs,
    so every method works from any process (``stop`` from the CLI included).  The cluster is
    kept across stop/start, and so is the ``schedstream`` database.
    """

    def __init__(self, workdir: Path) -> None:
        # Resolved: pg_ctl passes a canonical -D to the server, which _runs_postmaster matches.
        self.workdir = workdir.resolve()
        self.datadir = self.workdir / "data"
        self.sockdir = self.workdir / "sock"
        self.logfile = self.workdir / "postgres.log"
        self.statefile = self.workdir / "postgres.json"
        self.start_seconds: float | None = None
        self.port: int | None = None  # kept for a restart by this object: clients reconnect to it

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the ``schedstream`` database of the running server."""
        return self._url(DATABASE)

    def is_running(self) -> bool:
        return self._postmaster() is not None

    def start(self, timeout: float = 60) -> str:
        """Start the server, initialising the cluster on first use, and return :attr:`url`.

        Returns the URL at once if the server of this work directory already runs.
        """
        began = time.monotonic()
        deadline = began + timeout
        socket_path = self.sockdir / ".s.PGSQL.65535"
        if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
            raise LocalPostgresError(f"work directory too deep for a unix socket path: {socket_path}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self._lock():
            if self.is_running():
                return self.url
            self._prepare_workdir()
            try:
                if not self._cluster_usable():
                    self._initdb(deadline)
                self._remove_stale_pidfile()
                self._start_server(deadline)
                self._ensure_database(DATABASE)
            except BaseException:
                self._stop()
                raise
        self.start_seconds = time.monotonic() - began
        log.info("PostgreSQL ready at %s after %.2f s (log: %s)", self.url, self.start_seconds, self.logfile)
        return self.url

    def create_database(self, name: str) -> str:
        """Create database ``name`` afresh, dropping any existing one, and return its URL."""
        with self._admin_connection() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self._url(name)

    def stop(self) -> None:
        """``pg_ctl stop -m fast``; then ``-m immediate``, then SIGKILL if it hangs.  No-op if down."""
        if not self.workdir.is_dir():
            return
        with self._lock():
            self._stop()

    def __enter__(self) -> LocalPostgres:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialises start and stop of this work directory across processes."""
        with open(self.workdir / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _stop(self) -> None:
        postmaster = self._postmaster()
        if postmaster is not None:
            pid = postmaster[0]
            for mode in ("fast", "immediate"):
                result = self._pg_ctl(["stop", "-m", mode, "-w", "-t", "30"], timeout=40, check=False)
                # pg_ctl returns once postmaster.pid is gone, a moment before the process exits.
                if _wait_gone(pid, 5):
                    break
                log.warning("pg_ctl stop -m %s left pid %d running: %s", mode, pid, result.stderr.strip())
            else:
                os.kill(pid, signal.SIGKILL)
                if not _wait_gone(pid, 10):
                    raise LocalPostgresError(f"PostgreSQL pid {pid} survived SIGKILL")
            log.info("PostgreSQL pid %d stopped", pid)
        self.statefile.unlink(missing_ok=True)

    @cached_property
    def _bindir(self) -> Path:
        return find_bindir()

    @cached_property
    def _account(self) -> pwd.struct_passwd | None:
        """Whom the tools run as: the ``postgres`` user if we are root, else None (ourselves)."""
        if os.geteuid() != 0:
            return None
        try:
            return pwd.getpwnam(SUPERUSER)
        except KeyError:
            raise LocalPostgresError(
                f"as root, the server runs as the {SUPERUSER} system user, which does not exist: "
                "apt-get install postgresql"
            ) from None

    def _url(self, database: str) -> str:
        postmaster = self._postmaster()
        if postmaster is None:
            raise LocalPostgresError(f"no PostgreSQL server is running from {self.workdir}")
        url = URL.create("postgresql+psycopg", username=SUPERUSER, host=HOST, port=postmaster[1], database=database)
        return url.render_as_string(hide_password=False)

    def _postmaster(self) -> tuple[int, int] | None:
        """(pid, port) from ``data/postmaster.pid`` if that process is our live server, else None."""
        try:
            lines = (self.datadir / "postmaster.pid").read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (OSError, ValueError, IndexError):
            return None
        return (pid, port) if _runs_postmaster(pid, self.datadir) else None

    def _run(self, argv: list[str], timeout: float, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL tool as the server's user, in the work directory, output captured."""
        # The caller's PG* variables (PGDATA, PGPORT, PGHOST, ...) must not steer the tools.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        account = self._account
        if account is not None:
            env |= {"HOME": account.pw_dir, "USER": SUPERUSER, "LOGNAME": SUPERUSER}
        try:
            result = subprocess.run(
                argv,
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                # The equivalent of `setpriv --reuid --regid --init-groups`, done by subprocess itself.
                user=None if account is None else account.pw_uid,
                group=None if account is None else account.pw_gid,
                extra_groups=None if account is None else os.getgrouplist(SUPERUSER, account.pw_gid),
            )
        except subprocess.TimeoutExpired:
            raise LocalPostgresError(f"{shlex.join(argv)} did not finish in time") from None
        if check and result.returncode != 0:
            raise LocalPostgresError(
                f"{shlex.join(argv)} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}"
            )
        return result

    def _pg_ctl(self, args: list[str], timeout: float, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self._run([str(self._bindir / "pg_ctl"), "-D", str(self.datadir), *args], timeout, check)

    def _prepare_workdir(self) -> None:
        self.sockdir.mkdir(exist_ok=True)
        account = self._account
        if account is None:
            return
        for path in (self.workdir, self.sockdir):
            os.chown(path, account.pw_uid, account.pw_gid)
        if self._run(["test", "-w", str(self.workdir)], timeout=10, check=False).returncode != 0:
            raise LocalPostgresError(
                f"user {SUPERUSER} cannot reach {self.workdir}: some parent directory is closed to it "
                "(pytest's /tmp/pytest-of-root is 0700, for one); use e.g. tempfile.mkdtemp()"
            )

    def _cluster_usable(self) -> bool:
        """Whether ``data/`` holds an initialised cluster of this PostgreSQL major version."""
        version_file = self.datadir / "PG_VERSION"
        if not version_file.is_file():
            return False
        version = self._run([str(self._bindir / "postgres"), "--version"], timeout=10).stdout
        found = re.search(r"\(PostgreSQL\) (\d+)", version)
        if found is not None and version_file.read_text().strip() == found.group(1):
            return True
        log.info("%s holds a cluster of another PostgreSQL version; re-initialising it", self.datadir)
        return False

    def _initdb(self, deadline: float) -> None:
        """initdb into ``data.new``, then rename it: ``data/`` is a finished cluster or absent."""
        staging = self.workdir / "data.new"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(self.datadir, ignore_errors=True)
        argv = [str(self._bindir / "initdb"), "-D", str(staging), "-A", "trust", "-U", SUPERUSER]
        self._run([*argv, "-E", "UTF8", "--no-locale", "--no-sync"], timeout=deadline - time.monotonic())
        staging.rename(self.datadir)

    def _remove_stale_pidfile(self) -> None:
        """Drop a ``postmaster.pid`` left by a killed server (the caller saw none running).

        The server itself only overlooks a stale one whose pid is gone; a killed postmaster
        that its parent has not reaped yet, or a recycled pid, would block the start.
        """
        pidfile = self.datadir / "postmaster.pid"
        if pidfile.exists():
            log.info("removing %s left by a server that is not running", pidfile)
            pidfile.unlink()

    def _start_server(self, deadline: float) -> None:
        """``pg_ctl start`` on a free port; on a new one if another process took it meanwhile."""
        for attempt in range(PORT_ATTEMPTS):
            settings = {
                "listen_addresses": HOST,
                "port": str(self.port if self.port and attempt == 0 else _free_port()),
                "unix_socket_directories": str(self.sockdir),
                "fsync": "off",
                "synchronous_commit": "off",
                "full_page_writes": "off",
            }
            # pg_ctl hands -o to /bin/sh, hence the quoting.
            options = " ".join(f"-c {shlex.quote(f'{k}={v}')}" for k, v in settings.items())
            remaining = deadline - time.monotonic()
            log_offset = self.logfile.stat().st_size if self.logfile.exists() else 0
            args = ["start", "-w", "-t", str(max(int(remaining), 1)), "-l", str(self.logfile), "-o", options]
            result = self._pg_ctl(args, timeout=remaining + 5, check=False)
            if result.returncode == 0:
                self._write_state()
                return
            with open(self.logfile, errors="replace") as server_log:
                server_log.seek(log_offset)
                failure = server_log.read()
            if "could not bind" not in failure:
                raise LocalPostgresError(f"pg_ctl start failed:\n{result.stdout}{result.stderr}{failure}")
            log.warning("port %s was taken before the server could bind it; retrying", settings["port"])
        raise LocalPostgresError(f"no free port found in {PORT_ATTEMPTS} attempts")

    def _write_state(self) -> None:
        postmaster = self._postmaster()
        if postmaster is None:
            raise LocalPostgresError(f"pg_ctl reported a start, but no server runs from {self.workdir}")
        self.port = postmaster[1]
        state = {"port": postmaster[1], "url": self.url, "pid": postmaster[0]}
        tmp = self.statefile.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, self.statefile)

    def _admin_connection(self) -> psycopg.Connection[tuple[object, ...]]:
        postmaster = self._postmaster()
        if postmaster is None:
            raise LocalPostgresError(f"no PostgreSQL server is running from {self.workdir}")
        return psycopg.connect(host=HOST, port=postmaster[1], user=SUPERUSER, dbname="postgres", autocommit=True)

    def _ensure_database(self, name: str) -> None:
        with self._admin_connection() as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _runs_postmaster(pid: int, datadir: Path) -> bool:
    """Whether ``pid`` is a live postmaster of ``datadir`` (guards a stale pid file's reused pid)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    target = os.fsencode(datadir)
    return any(a == b"-D" and b == target for a, b in itertools.pairwise(args))


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``pid`` to exit; True once it has."""
    deadline = time.monotonic() + timeout
    while _running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is no zombie (an init that is slow to reap must not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.local_postgres", description="Run a throwaway local PostgreSQL server."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help=f"start a detached server; print {ENV_DB_URL}=...")
    start.add_argument("--dir", type=Path, required=True, help="work directory (cluster, socket, log)")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds allowed for initdb and start")
    stop = commands.add_parser("stop", help="stop the server running from DIR")
    stop.add_argument("--dir", type=Path, required=True)
    status = commands.add_parser("status", help="exit 0 and print the URL if running, else 1")
    status.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args(argv)

    logging.basicConfig(stream=sys.stderr, format="local_postgres: %(message)s")
    log.setLevel(logging.INFO)
    server = LocalPostgres(args.dir)
    try:
        if args.command == "start":
            url = os.environ.get(ENV_OVERRIDE)
            if url:
                log.info("%s is set; using that server, starting none", ENV_OVERRIDE)
            else:
                url = server.start(args.timeout)
            print(f"{ENV_DB_URL}={url}", flush=True)
        elif args.command == "stop":
            server.stop()
        elif server.is_running():
            print(server.url, flush=True)
        else:
            log.info("no PostgreSQL server running from %s", args.dir)
            return 1
    except LocalPostgresError as err:
        log.error("error: %s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
