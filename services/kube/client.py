"""The connection to a Kubernetes API server: kubeconfig or in-cluster config, raw JSON reads.

kubernetes_asyncio does the configuration (kubeconfig files and contexts, exec and token
auth, the in-cluster service-account token and CA) and the HTTP session; we read the API's
JSON ourselves, unparsed into models, because the watch lines must carry the objects exactly
as the server sent them.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from kubernetes_asyncio import client, config
from kubernetes_asyncio.config.config_exception import ConfigException


class KubeError(RuntimeError):
    """The cluster cannot be used: no config, unreachable, or a permission is missing (one line)."""


class Unreachable(KubeError):
    """The server did not answer (down, restarting, network): a running watcher retries."""


class Gone(Exception):
    """410 Gone: the resourceVersion asked for is compacted away; the caller must relist."""


class Kube:
    """An authenticated API client: ``get`` for JSON documents, ``stream`` for watch lines."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api

    @property
    def server(self) -> str:
        return str(self._api.configuration.host)

    @property
    def api_client(self) -> client.ApiClient:
        """The configured client, for writers (services/kube/api.py)."""
        return self._api

    async def read(self, path: str, query: dict[str, str] | None = None, *, missing_ok: bool = False) -> bytes | None:
        """The JSON body at ``path``; None when it is 404 and ``missing_ok``."""
        response = await self._request(path, query or {}, timeout=aiohttp.ClientTimeout(total=120))
        async with response:
            if missing_ok and response.status == 404:
                return None
            await _check(response, path)
            return bytes(await response.read())

    @asynccontextmanager
    async def stream(
        self, path: str, query: dict[str, str], read_timeout: float
    ) -> AsyncIterator[aiohttp.StreamReader]:
        """The body of a watch request; 410 raises ``Gone``, other errors ``KubeError``."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=read_timeout)
        response = await self._request(path, query, timeout=timeout)
        async with response:
            await _check(response, path)
            yield response.content

    async def _request(self, path: str, query: dict[str, str], *, timeout: aiohttp.ClientTimeout) -> Any:
        try:
            return await self._api.call_api(
                path,
                "GET",
                query_params=list(query.items()),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        except (aiohttp.ClientError, OSError) as exc:
            raise Unreachable(f"cannot reach the Kubernetes API server at {self.server}: {exc}") from None


async def _check(response: aiohttp.ClientResponse, path: str) -> None:
    if 200 <= response.status < 300:
        return
    body = await response.read()
    try:
        message = msgspec.json.decode(body).get("message", "")
    except (msgspec.DecodeError, AttributeError):
        message = body[:200].decode(errors="replace")
    if response.status == 410:
        raise Gone(message)
    if response.status in (401, 403):
        verb = "watch" if "watch=1" in str(response.url) else "list"
        raise KubeError(
            f"permission denied ({response.status}) to {verb} {path}: {message}; "
            "schedstream watch needs RBAC verbs get, list and watch on it (docs/live-cluster.md)"
        )
    if response.status >= 500 or response.status == 429:
        raise Unreachable(f"GET {path} failed with HTTP {response.status}: {message}")
    raise KubeError(f"GET {path} failed with HTTP {response.status}: {message}")


@asynccontextmanager
async def connect(kubeconfig: Path | None, context: str | None = None) -> AsyncIterator[Kube]:
    """A client from ``kubeconfig`` (or $KUBECONFIG / ~/.kube/config), or in-cluster inside a pod."""
    configuration = client.Configuration()
    try:
        if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
            config.load_incluster_config(client_configuration=configuration)
        else:
            await config.load_kube_config(
                config_file=str(kubeconfig) if kubeconfig else None,
                context=context,
                client_configuration=configuration,
            )
    except (ConfigException, OSError) as exc:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise KubeError(f"no usable Kubernetes configuration ({where}): {exc}") from None
    async with client.ApiClient(configuration) as api:
        yield Kube(api)
