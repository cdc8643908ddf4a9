"""Run a real Kubernetes API server (etcd + kube-apiserver, optionally kwok) on 127.0.0.1.

The binaries are built from pinned Go modules under ``ops/kube/`` into ``ops/kube/.bin``
(``build``; a stamp of each module's go.mod/go.sum/sources skips a build that is current).
``LocalKube`` starts etcd and kube-apiserver in their own sessions with a token file, a
self-signed serving certificate and service-account keys, writes a kubeconfig, waits for
``/readyz``, installs the CRDs of ``ops/kube/crds`` and, with ``kwok=True``, starts kwok (fake
kubelets: nodes become Ready, bound pods Running).  From the shell::

    python -m ops.local_kube build                      # build the binaries only
    python -m ops.local_kube start --dir DIR [--kwok]   # prints SCHEDSTREAM_KUBECONFIG=DIR/kubeconfig
    python -m ops.local_kube status --dir DIR           # exit 0 and the kubeconfig path if running, else 1
    python -m ops.local_kube stop --dir DIR

``start`` detaches: the servers keep running after the command exits, until ``stop``.
If SCHEDSTREAM_KUBECONFIG is already set, ``start`` builds and starts nothing and echoes it.

Choices (docs/live-cluster.md says more): the ServiceAccount and TaintNodesByCondition admission
plugins are disabled (no controller-manager runs here to create each namespace's ``default``
ServiceAccount or to lift the not-ready taint of new nodes; kwok's pods mount nothing);
authorization is RBAC, with an admin token (system:masters) and a token of a user bound to
nothing (to test 403s); the watch cache is on, as in a real cluster, so a
watcher sees BOOKMARKs; ``compact()`` compacts etcd and ``restart_apiserver()`` restarts the
API server on the same etcd, after which its watch cache starts at the present and a watch
from any older resourceVersion gets ``410 Gone``, as after a control-plane upgrade.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType

# The process helpers of the local broker serve the API server as they are.
from ops.local_kafka import _free_ports, _group_alive, _locked, _tail, _write_json

ENV_KUBECONFIG = "SCHEDSTREAM_KUBECONFIG"
REPO_ROOT = Path(__file__).resolve().parents[1]
KUBE_DIR = REPO_ROOT / "ops" / "kube"
BIN_DIR = KUBE_DIR / ".bin"
CRD_DIR = KUBE_DIR / "crds"
KUBE_VERSION = "v1.33.13"
# binary -> (module folder under ops/kube, Go package, -ldflags)
BINARIES: dict[str, tuple[str, str, str]] = {
    "etcd": ("etcd", ".", ""),
    "kube-apiserver": (
        "apiserver",
        "k8s.io/kubernetes/cmd/kube-apiserver",
        f"-X k8s.io/component-base/version.gitVersion={KUBE_VERSION}",
    ),
    "kubectl": (
        "apiserver",
        "k8s.io/kubernetes/cmd/kubectl",
        f"-X k8s.io/component-base/version.gitVersion={KUBE_VERSION}",
    ),
    "kwok": ("kwok", "sigs.k8s.io/kwok/cmd/kwok", ""),
}
# A stopping API server waits for its open watches; its state is all in etcd, so we do not wait long.
APISERVER_STOP_SECONDS = 5.0
ADMIN_USER = "schedstream-admin"
NOBODY_USER = "schedstream-nobody"

log = logging.getLogger("ops.local_kube")


class LocalKubeError(RuntimeError):
    """The local API server could not be built, started or stopped."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What ``workdir/kube.json`` records about a launched control plane."""

    etcd_pid: int
    apiserver_pid: int
    kwok_pid: int | None
    etcd_url: str
    server: str
    kubeconfig: str


def build(names: tuple[str, ...] = tuple(BINARIES), *, timings: dict[str, float] | None = None) -> Path:
    """Build the named binaries into ``ops/kube/.bin`` unless their stamps say they are current.

    A stamp (``.bin/NAME.sha256``) is the sha256 of the module's go.mod, go.sum and Go files and
    the build flags; a missing or different stamp rebuilds.  ``timings`` gets the wall seconds of
    every build that ran.
    """
    go = _require("go", "install Go >= 1.24 (apt-get install golang-go, or go.dev/dl)")
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    with _locked(BIN_DIR / ".lock"):
        for name in names:
            module, package, ldflags = BINARIES[name]
            moddir = KUBE_DIR / module
            digest = _module_digest(moddir, package, ldflags)
            binary, stamp = BIN_DIR / name, BIN_DIR / f"{name}.sha256"
            if binary.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
                continue
            stamp.unlink(missing_ok=True)
            log.info("building %s from %s (minutes the first time; cached afterwards)", name, moddir)
            began = time.monotonic()
            command = [go, "build", "-o", str(binary)]
            if ldflags:
                command += ["-ldflags", ldflags]
            result = subprocess.run(
                [*command, package],
                cwd=moddir,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise LocalKubeError(f"go build of {name} failed (exit {result.returncode}):\n{result.stdout[-4000:]}")
            stamp.write_text(digest + "\n")
            seconds = time.monotonic() - began
            log.info("built %s in %.1f s", name, seconds)
            if timings is not None:
                timings[name] = seconds
    return BIN_DIR


def _module_digest(moddir: Path, package: str, ldflags: str) -> str:
    digest = hashlib.sha256(f"{package}\n{ldflags}\n".encode())
    for path in sorted([moddir / "go.mod", moddir / "go.sum", *moddir.glob("*.go")]):
        digest.update(path.name.encode() + b"\n" + path.read_bytes())
    return digest.hexdigest()


class LocalKube:
    """etcd + kube-apiserver (+ kwok) whose certificates, data, logs and kubeconfig live in ``workdir``."""

    def __init__(self, workdir: Path, *, kwok: bool = False, crds: bool = True) -> None:
        self.workdir = workdir.resolve()
        self.kwok = kwok
        self.crds = crds
        self.start_seconds: float | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._info: ServerInfo | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def kubectl_path(self) -> Path:
        return BIN_DIR / "kubectl"

    @property
    def nobody_kubeconfig(self) -> Path:
        """A kubeconfig of a user with no RBAC binding: every request but discovery gets 403."""
        return self.workdir / "kubeconfig-nobody"

    @property
    def server(self) -> str:
        return self._require_info().server

    @property
    def _record(self) -> Path:
        return self.workdir / "kube.json"

    @property
    def _logs(self) -> Path:
        return self.workdir / "logs"

    def status(self) -> ServerInfo | None:
        """The control plane recorded in ``kube.json`` if its API server still runs, else None."""
        try:
            info = ServerInfo(**json.loads(self._record.read_text()))
        except FileNotFoundError:
            return None
        return info if _runs(info.apiserver_pid, "kube-apiserver", self.workdir) else None

    def start(self, timeout: float = 120, *, replace: bool = False) -> Path:
        """Build if needed, launch, wait for ``/readyz``, install the CRDs; return the kubeconfig path."""
        build(("etcd", "kube-apiserver", "kubectl", *(("kwok",) if self.kwok else ())))
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        with _locked(self.workdir / ".lock"):
            self._start(began + timeout, replace)
        self.start_seconds = time.monotonic() - began
        log.info("kube-apiserver at %s ready after %.1f s (logs: %s)", self.server, self.start_seconds, self._logs)
        return self.kubeconfig

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM kwok, the API server and etcd (in that order), SIGKILL after ``timeout`` s."""
        if not self.workdir.is_dir():
            log.info("no API server running from %s", self.workdir)
            return
        with _locked(self.workdir / ".lock"):
            info = self._info or self.status()
            if info is None:
                self._record.unlink(missing_ok=True)
                log.info("no API server running from %s", self.workdir)
                return
            for name, pid in (("kwok", info.kwok_pid), ("kube-apiserver", info.apiserver_pid), ("etcd", info.etcd_pid)):
                if pid is not None:
                    self._halt(name, pid, min(timeout, APISERVER_STOP_SECONDS) if name == "kube-apiserver" else timeout)
            self._record.unlink(missing_ok=True)
            self._info = None

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        """Run the built kubectl against this server; its stdout (raises with stderr on failure)."""
        result = subprocess.run(
            [str(self.kubectl_path), "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and result.returncode != 0:
            raise LocalKubeError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def compact(self) -> int:
        """Compact etcd at its current revision (physically); return that revision.

        Every resourceVersion below it is gone from etcd: a watch that reaches etcd from one
        of them gets ``410 Gone`` (the watch cache answers from memory until ``restart_apiserver``).
        """
        etcd = self._require_info().etcd_url
        revision = int(_etcd_post(etcd, "/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"])
        _etcd_post(etcd, "/v3/kv/compaction", {"revision": revision, "physical": True})
        log.info("etcd compacted at revision %d", revision)
        return revision

    def restart_apiserver(self, timeout: float = 120) -> None:
        """Stop and start the API server alone (same etcd, port and kubeconfig).

        Its watch cache then starts at the present: a watch from an older resourceVersion gets
        ``410 Gone`` and a client must relist.
        """
        with _locked(self.workdir / ".lock"):
            info = self._require_info()
            self._halt("kube-apiserver", info.apiserver_pid, APISERVER_STOP_SECONDS)
            port = int(info.server.rsplit(":", 1)[1])
            pid = self._launch_apiserver(port, info.etcd_url)
            self._info = ServerInfo(**{**asdict(info), "apiserver_pid": pid})
            _write_json(self._record, asdict(self._info))
            self._wait_ready(time.monotonic() + timeout)

    def __enter__(self) -> LocalKube:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _require_info(self) -> ServerInfo:
        if self._info is None:
            raise LocalKubeError(f"no API server started from {self.workdir} by this object")
        return self._info

    def _start(self, deadline: float, replace: bool) -> None:
        running = self.status()
        if running is not None:
            if not replace:
                raise LocalKubeError(
                    f"an API server from {self.workdir} is already running (pid {running.apiserver_pid}, "
                    f"{running.server}); stop it first: python -m ops.local_kube stop --dir {self.workdir}"
                )
            for name, pid in (("kwok", running.kwok_pid), ("kube-apiserver", running.apiserver_pid)):
                if pid is not None:
                    self._halt(name, pid, 30)
            self._halt("etcd", running.etcd_pid, 30)
        self._logs.mkdir(parents=True, exist_ok=True)
        self._write_credentials()
        client, peer, secure = _free_ports(3)
        etcd_url = f"http://127.0.0.1:{client}"
        etcd_pid = self._launch(
            "etcd",
            [
                "--name=local",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=local=http://127.0.0.1:{peer}",
                # A throwaway test server on a disk shared by many builds: fsync costs seconds.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        started = {"etcd": etcd_pid}
        try:
            self._wait_etcd(etcd_url, deadline)
            started["kube-apiserver"] = self._launch_apiserver(secure, etcd_url)
            self._info = ServerInfo(
                etcd_pid=etcd_pid,
                apiserver_pid=started["kube-apiserver"],
                kwok_pid=None,
                etcd_url=etcd_url,
                server=f"https://127.0.0.1:{secure}",
                kubeconfig=str(self.kubeconfig),
            )
            _write_json(self._record, asdict(self._info))
            self._write_kubeconfigs(self._info.server)
            self._wait_ready(deadline)
            if self.crds:
                self._install_crds()
            if self.kwok:
                started["kwok"] = self._launch(
                    "kwok",
                    [
                        f"--kubeconfig={self.kubeconfig}",
                        "--manage-all-nodes=true",
                        # Room for the pod IPs of 10,000 pods (the default is a /24).
                        "--cidr=10.128.0.0/9",
                        "--node-ip=127.0.0.1",
                    ],
                )
                self._info = ServerInfo(**{**asdict(self._info), "kwok_pid": started["kwok"]})
                _write_json(self._record, asdict(self._info))
        except BaseException:
            for name in ("kwok", "kube-apiserver", "etcd"):
                if name in started:
                    self._halt(name, started[name], 10)
            self._record.unlink(missing_ok=True)
            self._info = None
            raise

    def _launch_apiserver(self, port: int, etcd_url: str) -> int:
        creds = self.workdir / "pki"
        return self._launch(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={creds}",
                f"--tls-cert-file={creds / 'serving.crt'}",
                f"--tls-private-key-file={creds / 'serving.key'}",
                f"--token-auth-file={creds / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={creds / 'sa.key'}",
                f"--service-account-signing-key-file={creds / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.0.0.0/24",
                # No controller-manager runs here: none creates each namespace's `default`
                # ServiceAccount, and none lifts the not-ready taint that TaintNodesByCondition
                # puts on every new node (kwok makes the nodes Ready, but not untainted).
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--allow-privileged=true",
                "--profiling=false",
                f"--audit-log-path={self._logs / 'audit.log'}",
                f"--audit-policy-file={self.workdir / 'audit-policy.yaml'}",
                "--audit-log-maxsize=100",
                "--v=1",
            ],
        )

    def _launch(self, name: str, args: list[str]) -> int:
        with open(self._logs / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(
                [str(BIN_DIR / name), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.workdir,
            )
        self._procs[name] = proc
        return proc.pid

    def _write_credentials(self) -> None:
        """Tokens, a self-signed serving certificate (localhost, 127.0.0.1), the service-account key."""
        pki = self.workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        openssl = _require("openssl", "install OpenSSL (apt-get install openssl)")
        if not (pki / "serving.crt").is_file():
            names = "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
            request = f"req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=schedstream-local -addext {names}"
            _run([openssl, *request.split(), "-keyout", str(pki / "serving.key"), "-out", str(pki / "serving.crt")])
        if not (pki / "sa.key").is_file():
            _run([openssl, "genrsa", "-out", str(pki / "sa.key"), "2048"])
        tokens = pki / "tokens.csv"
        if not tokens.is_file():
            tokens.write_text(
                f"{secrets.token_hex(24)},{ADMIN_USER},1,system:masters\n{secrets.token_hex(24)},{NOBODY_USER},2\n"
            )
            tokens.chmod(0o600)
        (self.workdir / "audit-policy.yaml").write_text(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
            "  - level: Metadata\n    verbs: [create, update, patch, delete]\n  - level: None\n"
        )

    def _write_kubeconfigs(self, server: str) -> None:
        pki = self.workdir / "pki"
        ca = base64.b64encode((pki / "serving.crt").read_bytes()).decode()
        admin, nobody = (line.split(",")[0] for line in (pki / "tokens.csv").read_text().splitlines())
        for path, user, token in ((self.kubeconfig, ADMIN_USER, admin), (self.nobody_kubeconfig, NOBODY_USER, nobody)):
            config = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority-data": ca}}],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
                "current-context": "local",
            }
            _write_json(path, config)
            path.chmod(0o600)

    def _wait_etcd(self, etcd_url: str, deadline: float) -> None:
        while True:
            self._check_alive("etcd")
            with contextlib.suppress(OSError, ValueError):
                if json.loads(urllib.request.urlopen(f"{etcd_url}/health", timeout=2).read()).get("health") == "true":
                    return
            if time.monotonic() > deadline:
                raise LocalKubeError(f"etcd did not become healthy in time:\n{_tail(self._logs / 'etcd.log')}")
            time.sleep(0.1)

    def _wait_ready(self, deadline: float) -> None:
        server = self._require_info().server
        context = ssl.create_default_context(cafile=str(self.workdir / "pki" / "serving.crt"))
        while True:
            self._check_alive("kube-apiserver")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{server}/readyz", timeout=2, context=context) as answer,
            ):
                if answer.status == 200:
                    return
            if time.monotonic() > deadline:
                raise LocalKubeError(
                    f"kube-apiserver did not answer /readyz in time:\n{_tail(self._logs / 'kube-apiserver.log')}"
                )
            time.sleep(0.2)

    def _check_alive(self, name: str) -> None:
        proc = self._procs.get(name)
        if proc is not None and proc.poll() is not None:
            raise LocalKubeError(
                f"{name} exited with code {proc.returncode} while starting:\n{_tail(self._logs / f'{name}.log')}"
            )

    def _install_crds(self) -> None:
        self.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")

    def _halt(self, name: str, pid: int, timeout: float) -> None:
        """SIGTERM the process group of ``pid``, SIGKILL it after ``timeout`` s."""
        if not _runs(pid, name, self.workdir):
            self._procs.pop(name, None)
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, sig)
            deadline = time.monotonic() + wait
            while _group_alive(pid, self._procs.get(name)):
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.1)
            else:
                self._procs.pop(name, None)
                return
            log.info("%s pid %d still runs %.0f s after %s", name, pid, wait, sig.name)
        raise LocalKubeError(f"{name} pid {pid} survived SIGKILL")


def _etcd_post(etcd_url: str, path: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        f"{etcd_url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())
    except urllib.error.URLError as err:
        raise LocalKubeError(f"etcd {path} failed: {err}") from err


def _require(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise LocalKubeError(f"`{tool}` not found on PATH: {hint}")
    return path


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LocalKubeError(f"{command[0]} failed: {result.stderr.strip()}")


def _runs(pid: int, name: str, workdir: Path) -> bool:
    """Whether ``pid`` runs binary ``name`` of ``workdir`` (guards against pid reuse)."""
    args = subprocess.run(
        ["ps", "-ww", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=False
    ).stdout
    return args.startswith(str(BIN_DIR / name)) and str(workdir) in args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.local_kube", description="Run a local etcd + kube-apiserver (+ kwok)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help=f"start a detached API server; print {ENV_KUBECONFIG}=...")
    start.add_argument("--dir", type=Path, required=True, help="work directory (certificates, data, logs)")
    start.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for /readyz")
    start.add_argument("--replace", action="store_true", help="stop a server already running from DIR")
    start.add_argument("--kwok", action="store_true", help="also start kwok (fake kubelets)")
    start.add_argument("--no-crds", action="store_true", help="do not install the CRDs of ops/kube/crds")
    stop = commands.add_parser("stop", help="stop the servers started from DIR")
    stop.add_argument("--dir", type=Path, required=True)
    stop.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL")
    status = commands.add_parser("status", help="exit 0 and print the kubeconfig path if running, else 1")
    status.add_argument("--dir", type=Path, required=True)
    build_cmd = commands.add_parser("build", help="build the binaries into ops/kube/.bin")
    build_cmd.add_argument("names", nargs="*", help=f"binaries among {', '.join(BINARIES)} (default: all)")
    args = parser.parse_args(argv)

    logging.basicConfig(stream=sys.stderr, format="local_kube: %(message)s")
    log.setLevel(logging.INFO)
    try:
        if args.command == "start":
            kubeconfig = os.environ.get(ENV_KUBECONFIG)
            if kubeconfig:
                log.info("%s is set; using that cluster, starting none", ENV_KUBECONFIG)
            else:
                server = LocalKube(args.dir, kwok=args.kwok, crds=not args.no_crds)
                kubeconfig = str(server.start(args.timeout, replace=args.replace))
            print(f"{ENV_KUBECONFIG}={kubeconfig}", flush=True)
        elif args.command == "stop":
            LocalKube(args.dir).stop(args.timeout)
        elif args.command == "status":
            info = LocalKube(args.dir).status()
            if info is None:
                log.info("no API server running from %s", args.dir)
                return 1
            print(info.kubeconfig, flush=True)
        else:
            unknown = sorted(set(args.names) - set(BINARIES))
            if unknown:
                parser.error(f"unknown binaries: {', '.join(unknown)}")
            timings: dict[str, float] = {}
            print(build(tuple(args.names) or tuple(BINARIES), timings=timings), flush=True)
            for name, seconds in timings.items():
                print(f"{name}: built in {seconds:.1f} s", flush=True)
    except LocalKubeError as err:
        log.error("error: %s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
