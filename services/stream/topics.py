"""Kafka topics: make sure the service's topics exist (keyed by cluster, so one partition owns
one cluster's stream)."""

from __future__ import annotations

import contextlib

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from services.kafka_security import PLAINTEXT, KafkaSecurity


async def ensure_topics(bootstrap: str, names: list[str], partitions: int, security: KafkaSecurity = PLAINTEXT) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **security.client_options())
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [NewTopic(name, partitions, 1) for name in names if name not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another worker was first
                await admin.create_topics(missing)
    finally:
        await admin.close()
