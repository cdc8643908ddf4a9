"""Kafka topics: make sure the service's topics exist (keyed by cluster, so one partition owns
one cluster's stream), with room for the largest Kubernetes object."""

from __future__ import annotations

import contextlib

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import (
    CorruptRecordException,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
    TopicAlreadyExistsError,
)

from services.kafka_security import PLAINTEXT, KafkaSecurity

# A Kubernetes object may be 1.5 MB (etcd's request limit); a message carries one object and its
# envelope. Producers, topics, the local broker and consumers all allow this much.
MESSAGE_LIMIT = 2 * 1024 * 1024
# Errors the broker (or the client, before sending) gives for one record itself, not for the
# connection: that record is set aside with its reason and the others still go.
RECORD_REFUSED = (MessageSizeTooLargeError, RecordTooLargeError, RecordListTooLargeError, CorruptRecordException)


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` refuses one record (Faust wraps aiokafka's errors in its own)."""
    return isinstance(exc, RECORD_REFUSED) or isinstance(exc.__cause__, RECORD_REFUSED)


async def ensure_topics(bootstrap: str, names: list[str], partitions: int, security: KafkaSecurity = PLAINTEXT) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **security.client_options())
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        config = {"max.message.bytes": str(MESSAGE_LIMIT)}
        missing = [NewTopic(name, partitions, 1, topic_configs=config) for name in names if name not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another worker was first
                await admin.create_topics(missing)
    finally:
        await admin.close()
