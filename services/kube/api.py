"""The Kubernetes API as the applier and shadow mode use it: a connection from a kubeconfig or the
pod's in-cluster service account, and plain-JSON requests on API paths.

The paths are the API's own (``/api/v1/namespaces/NS/pods/NAME/binding``), so one small class
serves core kinds, subresources and custom resources alike, and what is sent reads like the API
reference. ``kubernetes_asyncio`` does the TLS, the authentication and the kubeconfig parsing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config.config_exception import ConfigException

# apiVersion -> (path prefix, plural) for the kinds decisions name; core v1 lives under /api.
PLURALS = {
    "Pod": "pods",
    "PodGroup": "podgroups",
    "Queue": "queues",
    "Job": "jobs",
    "Workload": "workloads",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "Event": "events",
}


class KubeError(RuntimeError):
    """The server could not be reached or configured (a user error, reported in one line)."""


def object_path(api_version: str, kind: str, namespace: str, name: str = "") -> str:
    """The REST path of an object (or of its collection when ``name`` is empty)."""
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    tail = f"/{name}" if name else ""
    return f"{prefix}{scope}/{PLURALS[kind]}{tail}"


async def connect(kubeconfig: Path | None) -> client.ApiClient:
    """An API client from ``kubeconfig``, or from the in-cluster service account when it is None."""
    configuration = client.Configuration()
    try:
        if kubeconfig is not None:
            await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        else:
            config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError) as exc:
        where = kubeconfig or "the in-cluster service account (pass --kubeconfig outside a pod)"
        raise KubeError(f"cannot configure the Kubernetes client from {where}: {exc}") from None
    return client.ApiClient(configuration)


class Kube:
    """JSON requests on API paths; a non-2xx answer raises ``ApiException`` with its status."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> dict[str, Any]:
        response = await self.api_client.call_api(
            path,
            method,
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        data = await response.read()
        if not 200 <= response.status <= 299:
            raise ApiException(status=response.status, reason=data.decode(errors="replace")[:500])
        return json.loads(data) if data else {}

    async def get(self, path: str) -> dict[str, Any] | None:
        """The object at ``path``, or None when the server says 404."""
        try:
            return await self.request("GET", path)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.request("POST", path, body)

    async def put(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.request("PUT", path, body)

    async def close(self) -> None:
        await self.api_client.close()
