"""Inbound facts: one line of CONTRACT section 1 parsed into a typed event, or rejected.

A line is a Kubernetes watch event (ADDED, MODIFIED, DELETED, BOOKMARK) carrying a whole
object, or a SCHEDULE marker carrying the scheduler's clock. Parsing checks the envelope,
then converts the object into its kind's typed struct; any problem raises ``InvalidEvent``
whose message says what is wrong and where (a JSON path such as ``$.object.spec.nodeName``).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

import msgspec

from domain import kinds
from domain.kinds import KubeObject
from domain.quantity import InvalidQuantity, Quantity, parse_milli

DEFAULT_CLUSTER = "default"
# Kubernetes' own limits (DNS subdomain names, DNS labels for namespaces); uids are UUIDs.
NAME_LIMIT = 253
NAMESPACE_LIMIT = 63
UID_LIMIT = 64
KIND_LIMIT = 63
API_VERSION_LIMIT = 128
NESTED_TOO_DEEPLY = "invalid event: JSON nested too deeply"


class EventType(StrEnum):
    """The ``type`` of a line; the first four are the API server's watch event types."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    SCHEDULE = "SCHEDULE"


class InvalidEvent(ValueError):
    """A line that cannot be accepted; the message is the reason written to the rejects sink."""


# The events are frozen msgspec structs rather than frozen dataclasses: one is made for every
# line, and a frozen dataclass's __init__ (a setattr per field) costs several times more.
class WatchEvent(msgspec.Struct, frozen=True):
    """ADDED, MODIFIED or DELETED of a known kind, with the whole object."""

    cluster: str
    type: EventType
    obj: KubeObject


class Bookmark(msgspec.Struct, frozen=True):
    """A watch BOOKMARK: only advances progress."""

    cluster: str
    resource_version: str


class ScheduleMarker(msgspec.Struct, frozen=True):
    """A SCHEDULE marker: a scheduling cycle runs here, ``time`` is the scheduler clock."""

    cluster: str
    time: datetime


class UnknownKind(msgspec.Struct, frozen=True):
    """A well-formed watch event of a kind (or API version) we do not schedule: counted, skipped."""

    cluster: str
    type: EventType
    api_version: str
    kind: str


Inbound = WatchEvent | Bookmark | ScheduleMarker | UnknownKind


class _Envelope(msgspec.Struct, frozen=True):
    type: str
    object: dict[str, Any] | None = None
    cluster: str = DEFAULT_CLUSTER
    time: Annotated[datetime, msgspec.Meta(tz=True)] | None = None


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_EVENT_TYPES = {t.value: t for t in EventType}  # a dict lookup: EventType(...) costs ten times more


def _quantity_hook(tp: type, obj: Any) -> Any:
    if tp is Quantity:
        try:
            return parse_milli(obj)
        except InvalidQuantity as exc:
            raise ValueError(str(exc)) from None
    raise NotImplementedError


def _at_object(error: msgspec.ValidationError) -> str:
    return str(error).replace("`$", "`$.object", 1)


def _decode_envelope(line: bytes | str | None) -> _Envelope:
    if line is None:
        raise InvalidEvent("empty message (a Kafka tombstone): not an event")
    try:
        return _ENVELOPE.decode(line)
    except msgspec.ValidationError as exc:
        raise InvalidEvent(f"invalid event: {exc}") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise InvalidEvent(f"not JSON: {exc}") from None
    except RecursionError:  # JSON nested ~1,000 deep: no Kubernetes object is
        raise InvalidEvent(NESTED_TOO_DEEPLY) from None


def _check_identifier(value: str, field: str, limit: int) -> None:
    """Names the API server would never emit are refused here, before any store sees them."""
    if len(value) > limit:
        raise InvalidEvent(f"`{field}` is longer than {limit} characters - at `$.{field}`")
    if "\x00" in value:
        raise InvalidEvent(f"`{field}` contains a NUL character - at `$.{field}`")


def parse_event(line: bytes | str | None) -> Inbound:
    """Parse one line (or Kafka message value) into an inbound event, or raise InvalidEvent."""
    return _parse(_decode_envelope(line))


def parse_watch(cluster: str, event_type: str, obj: dict[str, Any]) -> Inbound:
    """What ``parse_event`` gives for the line of a watch event whose object is ``obj``, JSON's
    own types as its decoder makes them (a simulated cluster's event: it writes the line and
    needs no decoding of it)."""
    return _parse(_Envelope(event_type, obj, cluster))


def _parse(envelope: _Envelope) -> Inbound:
    if not envelope.cluster:
        raise InvalidEvent("invalid event: `cluster` is empty - at `$.cluster`")
    _check_identifier(envelope.cluster, "cluster", NAME_LIMIT)
    event_type = _EVENT_TYPES.get(envelope.type)
    if event_type is None:
        allowed = ", ".join(t.value for t in EventType)
        raise InvalidEvent(f"unknown event type {envelope.type!r} (expected one of {allowed}) - at `$.type`")
    if event_type is EventType.SCHEDULE:
        if envelope.time is None:
            raise InvalidEvent("SCHEDULE marker lacks `time` - at `$.time`")
        return ScheduleMarker(envelope.cluster, envelope.time)
    return _parse_watch(envelope, event_type)


def _parse_watch(envelope: _Envelope, event_type: EventType) -> Inbound:
    obj = envelope.object
    if obj is None:
        raise InvalidEvent("watch event lacks `object` - at `$.object`")
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise InvalidEvent("object lacks `metadata` - at `$.object.metadata`")
    if event_type is EventType.BOOKMARK:
        version = metadata.get("resourceVersion", "")
        if not isinstance(version, str):
            raise InvalidEvent("Expected `str` - at `$.object.metadata.resourceVersion`")
        return Bookmark(envelope.cluster, version)
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        raise InvalidEvent("object lacks `metadata.name` - at `$.object.metadata.name`")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    for field, value in (("apiVersion", api_version), ("kind", kind)):
        if not isinstance(value, str) or not value:
            raise InvalidEvent(f"object lacks `{field}` - at `$.object.{field}`")
    assert isinstance(api_version, str) and isinstance(kind, str)
    _check_identifier(api_version, "object.apiVersion", API_VERSION_LIMIT)
    _check_identifier(kind, "object.kind", KIND_LIMIT)
    object_type = kinds.lookup(api_version, kind)
    if object_type is None:
        return UnknownKind(envelope.cluster, event_type, api_version, kind)
    try:
        typed = msgspec.convert(obj, object_type, dec_hook=_quantity_hook)
    except msgspec.ValidationError as exc:
        raise InvalidEvent(f"invalid {kind}: {_at_object(exc)}") from None
    except RecursionError:  # nested deep inside the object, met while converting it
        raise InvalidEvent(NESTED_TOO_DEEPLY) from None
    meta = typed.metadata
    _check_identifier(meta.name, "object.metadata.name", NAME_LIMIT)
    _check_identifier(meta.namespace, "object.metadata.namespace", NAMESPACE_LIMIT)
    _check_identifier(meta.uid, "object.metadata.uid", UID_LIMIT)
    return WatchEvent(envelope.cluster, event_type, typed)


def peek_cluster(line: bytes | str | None) -> tuple[str, bool] | None:
    """(cluster, is_marker) of a line without validating the object; None if not an envelope."""
    try:
        envelope = _decode_envelope(line)
    except InvalidEvent:
        return None
    return envelope.cluster, envelope.type == EventType.SCHEDULE
