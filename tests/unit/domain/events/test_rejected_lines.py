"""domain.events.parse_event: lines that are not CONTRACT section 1 events are InvalidEvent, with their reason."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from domain.events import (
    InvalidEvent,
    parse_event,
)
from tests import builders as b
from tests.unit.domain.events.lines import line, minimal, watch

# --------------------------------------------------------------------------- rejected lines


@dataclass(frozen=True)
class BadCase:
    name: str
    line: str | bytes
    want_reason: str


BAD_CASES = [
    BadCase("a line that is not JSON", "this is not json", "not JSON"),
    BadCase("truncated JSON", '{"type": "ADDED", "object": {', "not JSON"),
    BadCase("a top-level array", line([{"type": "ADDED"}]), "invalid event: Expected `object`, got `array`"),
    BadCase("a missing type", line({"object": minimal()}), "invalid event: Object missing required field `type`"),
    BadCase("a type that is not a string", line({"type": 5}), "Expected `str`, got `int` - at `$.type`"),
    BadCase(
        "an unknown type ERROR (the API server's watch error)",
        line({"type": "ERROR", "object": {"kind": "Status", "code": 410}}),
        "unknown event type 'ERROR' (expected one of ADDED, MODIFIED, DELETED, BOOKMARK, SCHEDULE) - at `$.type`",
    ),
    BadCase("a SCHEDULE marker without time", line({"type": "SCHEDULE"}), "SCHEDULE marker lacks `time` - at `$.time`"),
    BadCase(
        "a SCHEDULE marker with a naive time",
        line({"type": "SCHEDULE", "time": "2026-01-01T00:00:00"}),
        "Expected `datetime` with a timezone component - at `$.time`",
    ),
    BadCase(
        "a SCHEDULE marker with a time that is not a time",
        line({"type": "SCHEDULE", "time": "soon"}),
        "- at `$.time`",
    ),
    BadCase("a watch event without object", line({"type": "ADDED"}), "watch event lacks `object` - at `$.object`"),
    BadCase(
        "a watch event whose object is an array",
        line({"type": "MODIFIED", "object": []}),
        "Expected `object | null`, got `array` - at `$.object`",
    ),
    BadCase(
        "an object without metadata",
        watch({"apiVersion": "v1", "kind": "Pod"}),
        "object lacks `metadata` - at `$.object.metadata`",
    ),
    BadCase(
        "metadata that is not a map",
        watch({"apiVersion": "v1", "kind": "Pod", "metadata": "p"}),
        "object lacks `metadata` - at `$.object.metadata`",
    ),
    BadCase(
        "an object without metadata.name",
        watch({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "ns"}}),
        "object lacks `metadata.name` - at `$.object.metadata.name`",
    ),
    BadCase(
        "an object with an empty name",
        watch({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ""}}),
        "object lacks `metadata.name` - at `$.object.metadata.name`",
    ),
    BadCase(
        "a DELETED object without a name",
        watch({"apiVersion": "v1", "kind": "Pod", "metadata": {"uid": "u"}}, "DELETED"),
        "object lacks `metadata.name` - at `$.object.metadata.name`",
    ),
    BadCase(
        "an object without kind",
        watch({"apiVersion": "v1", "metadata": {"name": "x"}}),
        "object lacks `kind` - at `$.object.kind`",
    ),
    BadCase(
        "an object without apiVersion",
        watch({"kind": "Pod", "metadata": {"name": "x"}}),
        "object lacks `apiVersion` - at `$.object.apiVersion`",
    ),
    BadCase(
        "a nodeName that is not a string",
        watch(minimal(spec={"nodeName": 7})),
        "invalid Pod: Expected `str`, got `int` - at `$.object.spec.nodeName`",
    ),
    BadCase(
        "a PodGroup minMember that is a string",
        watch(minimal("PodGroup", b.VOLCANO_PG, spec={"minMember": "4"})),
        "invalid PodGroup: Expected `int`, got `str` - at `$.object.spec.minMember`",
    ),
    BadCase(
        "an invalid quantity in a Node's allocatable",
        watch(minimal("Node", status={"allocatable": {"cpu": "two"}})),
        "invalid Node: invalid quantity 'two' - at `$.object.status.allocatable",
    ),
    BadCase(
        "a negative container request",
        watch(minimal(spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]})),
        "invalid Pod: negative quantity '-1' - at `$.object.spec.containers[0].resources.requests",
    ),
    BadCase(
        "a bool where a quantity belongs",
        watch(minimal(spec={"containers": [{"name": "c", "resources": {"limits": {"cpu": True}}}]})),
        "quantity must be a string or a number, not bool - at `$.object.spec.containers[0].resources.limits",
    ),
    BadCase(
        "an empty cluster",
        watch(minimal(), cluster=""),
        "invalid event: `cluster` is empty - at `$.cluster`",
    ),
    BadCase(
        "a cluster that is not a string",
        watch(minimal(), cluster=3),
        "invalid event: Expected `str`, got `int` - at `$.cluster`",
    ),
    BadCase(
        "labels that are a list instead of a map",
        watch({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": ["a"]}}),
        "invalid Node: Expected `object`, got `array` - at `$.object.metadata.labels`",
    ),
    BadCase(
        "a creationTimestamp that is not RFC 3339",
        watch({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "creationTimestamp": "yesterday"}}),
        "invalid Pod: Invalid RFC3339 encoded datetime - at `$.object.metadata.creationTimestamp`",
    ),
    BadCase(
        "a BOOKMARK whose resourceVersion is a number",
        watch({"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": 12}}, "BOOKMARK"),
        "at `$.object.metadata.resourceVersion`",
    ),
    BadCase(
        "a taint without key",
        watch(minimal("Node", spec={"taints": [{"effect": "NoSchedule"}]})),
        "invalid Node: Object missing required field `key` - at `$.object.spec.taints[0]`",
    ),
    BadCase(
        "a HyperNode without its required spec",
        watch(minimal("HyperNode", b.VOLCANO_TOPOLOGY)),
        "invalid HyperNode: Object missing required field `spec`",
    ),
    BadCase(
        "a ClusterQueue quota without nominalQuota",
        watch(
            minimal(
                "ClusterQueue",
                "kueue.x-k8s.io/v1beta2",
                spec={"resourceGroups": [{"flavors": [{"name": "f", "resources": [{"name": "cpu"}]}]}]},
            )
        ),
        "Object missing required field `nominalQuota` - at `$.object.spec.resourceGroups[0].flavors[0].resources[0]`",
    ),
    # Hostile input: each must be a reject, never an exception that stops the worker or the store.
    BadCase(
        "invalid UTF-8 inside a JSON string",
        b'{"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x\xff"}}}',
        "not JSON: 'utf-8' codec can't decode byte 0xff",
    ),
    BadCase("binary garbage with a NUL byte", b"\x00\x01\x02", "not JSON"),
    BadCase(
        "a NUL character in a name (PostgreSQL text cannot hold it)",
        watch({**minimal(), "metadata": {"name": "a\u0000b"}}),
        "`object.metadata.name` contains a NUL character - at `$.object.metadata.name`",
    ),
    BadCase(
        "a name longer than Kubernetes allows",
        watch({**minimal(), "metadata": {"name": "n" * 254}}),
        "`object.metadata.name` is longer than 253 characters",
    ),
    BadCase(
        "a namespace longer than a DNS label",
        watch({**minimal(), "metadata": {"name": "x", "namespace": "n" * 64}}),
        "`object.metadata.namespace` is longer than 63 characters",
    ),
    BadCase(
        "a cluster name too long",
        line({"type": "SCHEDULE", "cluster": "c" * 254, "time": "2026-01-01T00:00:00Z"}),
        "`cluster` is longer than 253 characters",
    ),
]


def test_a_message_without_a_value_is_rejected() -> None:
    with pytest.raises(InvalidEvent, match="empty message"):
        parse_event(None)


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.name)
def test_bad_lines_are_rejected_with_their_reason(case: BadCase) -> None:
    with pytest.raises(InvalidEvent) as excinfo:
        parse_event(case.line)
    assert case.want_reason in str(excinfo.value)


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.name)
def test_bad_lines_are_rejected_from_bytes_too(case: BadCase) -> None:
    raw = case.line.encode() if isinstance(case.line, str) else case.line
    with pytest.raises(InvalidEvent) as excinfo:
        parse_event(raw)
    assert case.want_reason in str(excinfo.value)
