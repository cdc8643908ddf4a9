"""Object metadata shared by every kind, and the key that names an object in a cluster.

Objects are frozen msgspec structs that mirror the upstream API field names (camelCase on
the wire, snake_case here); fields we do not use are ignored, fields we use are typed, so a
wrong type is a validation error with its JSON path.
"""

from __future__ import annotations

from datetime import datetime
from typing import NewType

from msgspec import Struct

ObjectKey = NewType("ObjectKey", str)
"""``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""


def timestamp(at: datetime) -> str:
    """``at`` as the API server writes a time (RFC 3339, UTC as ``Z``)."""
    return at.isoformat().replace("+00:00", "Z")


class OwnerReference(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []


class TemplateMeta(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    """Metadata of a pod template: like ObjectMeta but nothing is required."""

    name: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class Condition(Struct, rename="camel", frozen=True, kw_only=True, gc=False):
    type: str
    status: str = "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


def key_of(meta: ObjectMeta) -> ObjectKey:
    return ObjectKey(f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name)
