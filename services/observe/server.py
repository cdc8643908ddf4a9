"""The worker's HTTP endpoints, on ``--metrics-addr`` (off unless given): ``/metrics``
(Prometheus text format), ``/healthz`` (the process and its event loop answer), ``/readyz``
(partitions assigned and their state restored: 503 until then and during a rebalance), and the
live status page at ``/``. Served by aiohttp on the worker's own event loop, so a handler
never sees the state half-way through a batch."""

from __future__ import annotations

from aiohttp import web
from mode import Service
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services import logging as log
from services.observe import page
from services.observe.observer import Observer


def parse_addr(addr: str) -> tuple[str, int]:
    """``HOST:PORT`` (``:PORT`` means every interface) -> (host, port); ValueError names the problem."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{addr!r} is not HOST:PORT (e.g. 127.0.0.1:9090)")
    return host.strip("[]") or "0.0.0.0", int(port)


def make_app(observer: Observer) -> web.Application:
    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(observer.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        if observer.ready:
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready: partitions not assigned or state not restored\n")

    async def status(_: web.Request) -> web.Response:
        return web.Response(text=page.render(observer), content_type="text/html")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/", status)
    return app


class ObserveService(Service):
    """The endpoints as a dependency of the Faust app: started and stopped with it."""

    def __init__(self, addr: str, observer: Observer) -> None:
        super().__init__()
        self.addr = addr
        self.observer = observer
        self.runner: web.AppRunner | None = None

    async def on_start(self) -> None:
        host, port = parse_addr(self.addr)
        self.runner = web.AppRunner(make_app(self.observer), access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, host, port).start()
        log.get("schedstream.worker").info("serving /metrics, /healthz, /readyz and the status page", addr=self.addr)

    async def on_stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
