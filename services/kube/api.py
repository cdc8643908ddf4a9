"""The Kubernetes API as the applier uses it: plain-JSON reads and writes on API paths, over the
connection of services/kube/client.py (kubeconfig or in-cluster config).

The paths are the API's own (``/api/v1/namespaces/NS/pods/NAME/binding``), so one small class
serves core kinds, subresources and custom resources alike, and what is sent reads like the API
reference.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

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


def object_path(api_version: str, kind: str, namespace: str, name: str = "") -> str:
    """The REST path of an object (or of its collection when ``name`` is empty)."""
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    tail = f"/{name}" if name else ""
    return f"{prefix}{scope}/{PLURALS[kind]}{tail}"


class Rest:
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
            raise ApiException(status=response.status, reason=_message(data))
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


def _message(body: bytes) -> str:
    """One line from an error answer: the Status object's message, else the start of the body."""
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    text = message if isinstance(message, str) else body.decode(errors="replace")[:300]
    return " ".join(text.split())
