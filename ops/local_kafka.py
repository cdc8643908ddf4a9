"""Run a real single-node Apache Kafka broker (KRaft, broker+controller) on 127.0.0.1.

The broker's jars come from Maven Central through ``ops/kafka/pom.xml`` (``fetch_jars``);
``LocalKafka`` formats a work directory, launches the JVM in its own session and waits
until the broker answers a metadata request.  From the shell::

    python -m ops.local_kafka start --dir DIR    # prints SCHEDSTREAM_KAFKA_BOOTSTRAP=127.0.0.1:PORT
    python -m ops.local_kafka status --dir DIR   # exit 0 and the bootstrap if running, else 1
    python -m ops.local_kafka stop --dir DIR
    python -m ops.local_kafka fetch              # resolve the jars only

``start`` detaches: the broker keeps running after the command exits, until ``stop``.
If SCHEDSTREAM_KAFKA_BOOTSTRAP is already set, ``start`` starts nothing and echoes it.

``LocalKafka(dir, sasl_users={"alice": "secret"})`` adds a SASL_PLAINTEXT listener
(``sasl_bootstrap``) that accepts those users with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
(the SCRAM credentials are written when the data directory is formatted); the PLAINTEXT
listener stays as it is, and without ``sasl_users`` nothing changes.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

ENV_BOOTSTRAP = "SCHEDSTREAM_KAFKA_BOOTSTRAP"
REPO_ROOT = Path(__file__).resolve().parents[1]
# log4j2's own shutdown hook races Kafka's: without this the log stops mid-shutdown on SIGTERM.
BROKER_JVM_OPTS = ("-Xmx512m", "-Dlog4j2.shutdownHookEnabled=false")

log = logging.getLogger("ops.local_kafka")


class LocalKafkaError(RuntimeError):
    """The local broker could not be fetched, started or stopped."""


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """What ``workdir/broker.json`` records about a launched broker."""

    pid: int
    bootstrap: str
    started_at: str


def fetch_jars(repo_root: Path | None = None) -> Path:
    """Resolve the broker's jars into ``ops/kafka/.jars`` unless they match the pom already.

    The sha256 of the pom that produced the jars is kept in ``.jars/.pom.sha256``; a missing
    stamp (first run, interrupted fetch) or a changed pom clears the folder and runs mvn.
    """
    kafka_dir = (repo_root or REPO_ROOT).resolve() / "ops" / "kafka"
    pom = kafka_dir / "pom.xml"
    jars = kafka_dir / ".jars"
    stamp = jars / ".pom.sha256"
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    jars.mkdir(parents=True, exist_ok=True)
    with _locked(jars / ".lock"):
        fresh = stamp.is_file() and stamp.read_text().strip() == digest
        if fresh and any(jars.glob("*.jar")):
            return jars
        mvn = _require("mvn", "install Apache Maven (e.g. apt-get install maven)")
        _java()
        stamp.unlink(missing_ok=True)
        for old in jars.glob("*.jar"):
            old.unlink()
        log.info("resolving Kafka jars from Maven Central into %s", jars)
        result = subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={jars}",
                "-DincludeScope=runtime",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise LocalKafkaError(f"mvn failed (exit {result.returncode}):\n{result.stdout[-4000:]}")
        stamp.write_text(digest + "\n")
    return jars


class LocalKafka:
    """A single-node KRaft broker whose config, data and logs live in ``workdir``."""

    def __init__(self, workdir: Path, *, sasl_users: Mapping[str, str] | None = None) -> None:
        self.workdir = workdir.resolve()
        self.start_seconds: float | None = None
        self.sasl_users = dict(sasl_users or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self._bootstrap: str | None = None
        self._ports: tuple[int, ...] | None = None  # kept for a restart by this object: clients reconnect
        self._sasl_bootstrap: str | None = None

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:PORT`` of the broker this object started."""
        if self._bootstrap is None:
            raise LocalKafkaError(f"no broker started from {self.workdir} by this object")
        return self._bootstrap

    @property
    def sasl_bootstrap(self) -> str:
        """``127.0.0.1:PORT`` of the SASL_PLAINTEXT listener (only with ``sasl_users``)."""
        if self._sasl_bootstrap is None:
            raise LocalKafkaError(f"no broker with a SASL listener started from {self.workdir} by this object")
        return self._sasl_bootstrap

    @property
    def _props(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def _record(self) -> Path:
        return self.workdir / "broker.json"

    @property
    def _server_log(self) -> Path:
        return self.workdir / "logs" / "server.log"

    def status(self) -> BrokerInfo | None:
        """The broker recorded in ``broker.json`` if its JVM is still running, else None."""
        try:
            info = BrokerInfo(**json.loads(self._record.read_text()))
        except FileNotFoundError:
            return None
        return info if _runs_broker(info.pid, self._props) else None

    def start(self, timeout: float = 60, *, replace: bool = False) -> str:
        """Launch the broker and return its bootstrap once it answers a metadata request.

        Refuses if ``broker.json`` names a live broker of this workdir, unless ``replace``
        (then that broker is stopped first).  ``workdir/data`` is formatted on the first start
        and kept afterwards.  ``start_seconds`` is set to the time the start took.
        """
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        with _locked(self.workdir / ".lock"):
            bootstrap = self._start(began + timeout, replace)
        self.start_seconds = time.monotonic() - began
        log.info(
            "Kafka broker at %s ready after %.1f s (logs: %s)", bootstrap, self.start_seconds, self.workdir / "logs"
        )
        return bootstrap

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM the broker's process group, SIGKILL it after ``timeout`` s; no-op if none runs.

        Works from any process: without a broker started by this object it uses ``broker.json``.
        """
        if self.workdir.is_dir():
            with _locked(self.workdir / ".lock"):
                self._stop(timeout)
        else:
            log.info("no Kafka broker running from %s", self.workdir)

    def __enter__(self) -> LocalKafka:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _start(self, deadline: float, replace: bool) -> str:
        running = self.status()
        if running is not None:
            if not replace:
                raise LocalKafkaError(
                    f"a broker from {self.workdir} is already running (pid {running.pid}, "
                    f"{running.bootstrap}); stop it first: python -m ops.local_kafka stop "
                    f"--dir {self.workdir}"
                )
            self._stop(30)
        java = _java()
        jars = fetch_jars()
        logs = self.workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        port, controller_port, *sasl_port = self._ports or _free_ports(3 if self.sasl_users else 2)
        self._ports = (port, controller_port, *sasl_port)
        bootstrap = f"127.0.0.1:{port}"
        properties = _server_properties(port, controller_port, self.workdir / "data")
        if sasl_port:
            properties = _with_sasl(properties, sasl_port[0], self.sasl_users)
        self._props.write_text(properties)
        jvm = [
            java,
            f"-Dkafka.logs.dir={logs}",
            f"-Dlog4j2.configurationFile={jars.parent / 'log4j2.properties'}",
            "-cp",
            f"{jars}/*",
        ]
        if not (self.workdir / "data" / "meta.properties").is_file():
            self._format(jvm)
        with open(logs / "stdout.log", "wb") as out:
            self._proc = subprocess.Popen(
                [*jvm, *BROKER_JVM_OPTS, "kafka.Kafka", str(self._props)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        _write_json(self._record, asdict(BrokerInfo(self._proc.pid, bootstrap, started_at)))
        try:
            self._wait_ready(port, deadline)
        except BaseException:
            self._halt(self._proc.pid, signal.SIGKILL, time.monotonic() + 10)
            raise
        self._bootstrap = bootstrap
        self._sasl_bootstrap = f"127.0.0.1:{sasl_port[0]}" if sasl_port else None
        return bootstrap

    def _stop(self, timeout: float) -> None:
        if self._proc is not None:
            pid = self._proc.pid
        else:
            running = self.status()
            if running is None:
                self._record.unlink(missing_ok=True)
                log.info("no Kafka broker running from %s", self.workdir)
                return
            pid = running.pid
        began = time.monotonic()
        if self._halt(pid, signal.SIGTERM, began + timeout):
            log.info("Kafka broker pid %d stopped after %.1f s", pid, time.monotonic() - began)
            return
        log.warning(
            "Kafka broker pid %d ignored SIGTERM for %.0f s; killing it:\n%s", pid, timeout, _tail(self._server_log)
        )
        if not self._halt(pid, signal.SIGKILL, time.monotonic() + 10):
            raise LocalKafkaError(f"Kafka broker pid {pid} survived SIGKILL")

    def _format(self, jvm: list[str]) -> None:
        formatted = subprocess.run(
            [
                *jvm,
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                _cluster_id(),
                "--config",
                str(self._props),
                *(
                    arg
                    for user, password in sorted(self.sasl_users.items())
                    for mechanism in SCRAM
                    for arg in ("--add-scram", f"{mechanism}=[name={user},password={password}]")
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        if formatted.returncode != 0:
            raise LocalKafkaError(f"formatting {self.workdir / 'data'} failed:\n{formatted.stdout}")

    def _wait_ready(self, port: int, deadline: float) -> None:
        assert self._proc is not None
        while True:
            code = self._proc.poll()
            if code is not None:
                raise LocalKafkaError(f"Kafka broker exited with code {code} while starting:\n{self._failure_logs()}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LocalKafkaError(
                    f"Kafka broker did not answer on 127.0.0.1:{port} in time:\n{self._failure_logs()}"
                )
            if _accepts(port) and _answers_metadata(f"127.0.0.1:{port}", min(remaining, 5.0)):
                return
            time.sleep(0.1)

    def _halt(self, pid: int, sig: signal.Signals, deadline: float) -> bool:
        """Signal the process group of ``pid``; True once it is gone (then forget the broker)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        while _group_alive(pid, self._proc):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        self._proc = None
        self._bootstrap = None
        self._record.unlink(missing_ok=True)
        return True

    def _failure_logs(self) -> str:
        stdout = _tail(self.workdir / "logs" / "stdout.log")
        server = _tail(self._server_log)
        return f"--- {self._server_log} ---\n{server}" + (f"\n--- stdout.log ---\n{stdout}" if stdout else "")


def _server_properties(port: int, controller_port: int, data: Path) -> str:
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={data}",
            "num.partitions=1",
            "auto.create.topics.enable=true",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            # Room for a 1.5 MB Kubernetes object (services/stream/topics.py: MESSAGE_LIMIT).
            "message.max.bytes=2097152",
            "replica.fetch.max.bytes=4194304",
            "",
        ]
    )


SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _with_sasl(properties: str, port: int, users: Mapping[str, str]) -> str:
    """``properties`` with a SASL_PLAINTEXT listener on ``port`` for ``users`` (PLAIN and SCRAM)."""
    suffixes = {
        "listeners": f",SASL_PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f",SASL_PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": ",SASL_PLAINTEXT:SASL_PLAINTEXT",
    }
    out = [line + suffixes.get(line.partition("=")[0], "") for line in properties.splitlines()]
    plain_users = " ".join(f'user_{user}="{password}"' for user, password in sorted(users.items()))
    prefix = "listener.name.sasl_plaintext"
    out += [
        "sasl.enabled.mechanisms=PLAIN," + ",".join(SCRAM),
        f"{prefix}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f"{plain_users};",
        *(
            f"{prefix}.{m.lower()}.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
            for m in SCRAM
        ),
    ]
    return "\n".join([*out, ""])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path``: one start, stop or fetch at a time per folder."""
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _require(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise LocalKafkaError(f"`{tool}` not found on PATH: {hint}")
    return path


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return _require("java", "install a Java 17+ runtime (e.g. apt-get install openjdk-17-jre-headless)")


def _free_ports(count: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def _cluster_id() -> str:
    """A random 22-character base64url id, like Kafka's ``Uuid.randomUuid``: no leading '-'."""
    while True:
        cluster_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _write_json(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def _tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log, without the "\tkey = value" lines of Kafka's config dumps."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    kept = [line for line in text.splitlines() if not (line.startswith("\t") and " = " in line)]
    return "\n".join(kept[-lines:])


def _runs_broker(pid: int, props: Path) -> bool:
    """Whether ``pid`` is a live JVM running ``kafka.Kafka`` on ``props`` (guards pid reuse)."""
    args = subprocess.run(
        ["ps", "-ww", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=False
    ).stdout
    return f"kafka.Kafka {props}" in args


def _group_alive(pgid: int, child: subprocess.Popen[bytes] | None) -> bool:
    if child is not None:
        child.poll()  # reap our own child, or the exited JVM lingers as a zombie in the group
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _answers_metadata(bootstrap: str, timeout: float) -> bool:
    """One metadata request (list topics), run on a fresh loop in a thread: callers may be async."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _list_topics(bootstrap, timeout)).result()


async def _list_topics(bootstrap: str, timeout: float) -> bool:
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="schedstream-local-kafka", request_timeout_ms=int(timeout * 1000)
    )
    try:
        await asyncio.wait_for(_start_and_list(admin), timeout)
    except (KafkaError, OSError, TimeoutError):
        return False
    finally:
        await admin.close()
    return True


async def _start_and_list(admin: AIOKafkaAdminClient) -> None:
    await admin.start()
    await admin.list_topics()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.local_kafka", description="Run a local single-node Kafka broker."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help=f"start a detached broker; print {ENV_BOOTSTRAP}=...")
    start.add_argument("--dir", type=Path, required=True, help="work directory (config, data, logs)")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness")
    start.add_argument("--replace", action="store_true", help="stop a broker already running from DIR")
    stop = commands.add_parser("stop", help="stop the broker started from DIR")
    stop.add_argument("--dir", type=Path, required=True)
    stop.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL")
    status = commands.add_parser("status", help="exit 0 and print the bootstrap if running, else 1")
    status.add_argument("--dir", type=Path, required=True)
    commands.add_parser("fetch", help="resolve the broker jars from Maven Central")
    args = parser.parse_args(argv)

    logging.basicConfig(stream=sys.stderr, format="local_kafka: %(message)s")
    log.setLevel(logging.INFO)
    try:
        if args.command == "start":
            bootstrap = os.environ.get(ENV_BOOTSTRAP)
            if bootstrap:
                log.info("%s is set; using that broker, starting none", ENV_BOOTSTRAP)
            else:
                bootstrap = LocalKafka(args.dir).start(args.timeout, replace=args.replace)
            print(f"{ENV_BOOTSTRAP}={bootstrap}", flush=True)
        elif args.command == "stop":
            LocalKafka(args.dir).stop(args.timeout)
        elif args.command == "status":
            info = LocalKafka(args.dir).status()
            if info is None:
                log.info("no Kafka broker running from %s", args.dir)
                return 1
            print(info.bootstrap, flush=True)
        else:
            print(fetch_jars(), flush=True)
    except LocalKafkaError as err:
        log.error("error: %s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
