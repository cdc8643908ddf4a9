"""The watcher's durable progress: per resource, the resourceVersion to resume from and the
objects known to exist (uid -> identity), as of the last line Kafka acknowledged.

It lives in one JSON file (default ``$SCHEDSTREAM_DATA_DIR/watch-CLUSTER.json``), replaced
atomically (write, fsync, rename).  Only acknowledged lines move it, so after a crash the
watcher resumes at or before the last line that reached Kafka: lines after it may be written
twice (at-least-once), none is skipped.  The identities let a relist after ``410 Gone`` say
DELETED for objects that vanished while the watcher was away.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

FORMAT = 1


class Identity(msgspec.Struct, array_like=True, frozen=True):
    """What a DELETED line needs of an object the watcher no longer sees."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str

    def as_object(self) -> dict[str, object]:
        metadata: dict[str, str] = {"name": self.name, "uid": self.uid, "resourceVersion": self.resource_version}
        if self.namespace:
            metadata["namespace"] = self.namespace
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata}


class ResourceState(msgspec.Struct):
    resource_version: str | None = None
    objects: dict[str, Identity] = msgspec.field(default_factory=dict)


class _File(msgspec.Struct):
    format: int
    cluster: str
    resources: dict[str, ResourceState]


class StateError(RuntimeError):
    """The state file cannot be read or belongs to another cluster."""


@dataclass(slots=True)
class WatchState:
    path: Path
    cluster: str
    resources: dict[str, ResourceState] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, cluster: str) -> WatchState:
        try:
            data = msgspec.json.decode(path.read_bytes(), type=_File)
        except FileNotFoundError:
            return cls(path, cluster)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise StateError(f"{path} is not a watch state file: {exc}") from None
        if data.format != FORMAT or data.cluster != cluster:
            raise StateError(
                f"{path} holds the progress of cluster {data.cluster!r} (format {data.format}), "
                f"not {cluster!r}; pass another --state"
            )
        return cls(path, cluster, data.resources)

    def resource(self, key: str) -> ResourceState:
        return self.resources.setdefault(key, ResourceState())

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as out:
            out.write(msgspec.json.encode(_File(FORMAT, self.cluster, self.resources)))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
