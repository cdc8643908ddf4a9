"""Settings of the service, from environment variables (every one is listed in the README)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.kafka_security import PLAINTEXT, KafkaSecurity

DEFAULT_DB_URL = "sqlite:///schedstream.db"
# The numeric settings, checked before use so that a malformed one is named, not a traceback:
# name -> (type, whether 0 is allowed; negatives never are).
NUMBERS: dict[str, tuple[type[int] | type[float], bool]] = {
    "SCHEDSTREAM_PARTITIONS": (int, False),
    "SCHEDSTREAM_SCHEDULE_PERIOD": (float, True),  # 0: no timer
    "SCHEDSTREAM_BATCH_SIZE": (int, False),
    "SCHEDSTREAM_BATCH_WITHIN": (float, True),
    "SCHEDSTREAM_BATCH_BUDGET": (float, True),  # 0: no budget
    "SCHEDSTREAM_SESSION_TIMEOUT": (float, False),
    "SCHEDSTREAM_SNAPSHOT_EVERY": (int, True),  # 0: never
}
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use."""


@dataclass(frozen=True, slots=True)
class Settings:
    kafka_bootstrap: str = "127.0.0.1:9092"
    db_url: str = DEFAULT_DB_URL
    db_wait: float = 60.0  # seconds the worker retries a database that is not up yet
    events_topic: str = "cluster-events"
    decisions_topic: str = "scheduler-decisions"
    partitions: int = 4
    app_id: str = "schedstream"
    schedule_period: float = 1.0
    batch_size: int = 500
    batch_within: float = 0.01  # a batch waits at most this long to fill: the latency floor (docs/performance.md)
    # A batch ends once its events took this long to process: the decisions of its first events
    # wait for its commit, so this bounds their latency under load (docs/performance.md).
    batch_budget: float = 0.05
    session_timeout: float = 10.0
    snapshot_every: int = 10_000
    data_dir: Path = Path(".schedstream")
    log_format: str = "auto"
    log_level: str = "info"
    kafka_security: KafkaSecurity = PLAINTEXT  # SASL / SSL (services/kafka_security.py)
    metrics_addr: str = ""  # HOST:PORT of the worker's /metrics, health and status page; off when empty

    @property
    def dlq_topic(self) -> str:
        return f"{self.events_topic}.dlq"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env
        _check_numbers(e)
        d = cls()
        return cls(
            kafka_bootstrap=e.get("SCHEDSTREAM_KAFKA_BOOTSTRAP", d.kafka_bootstrap),
            db_url=e.get("SCHEDSTREAM_DB_URL", d.db_url),
            db_wait=float(e.get("SCHEDSTREAM_DB_WAIT", d.db_wait)),
            events_topic=e.get("SCHEDSTREAM_EVENTS_TOPIC", d.events_topic),
            decisions_topic=e.get("SCHEDSTREAM_DECISIONS_TOPIC", d.decisions_topic),
            partitions=int(e.get("SCHEDSTREAM_PARTITIONS", d.partitions)),
            app_id=e.get("SCHEDSTREAM_APP_ID", d.app_id),
            schedule_period=float(e.get("SCHEDSTREAM_SCHEDULE_PERIOD", d.schedule_period)),
            batch_size=int(e.get("SCHEDSTREAM_BATCH_SIZE", d.batch_size)),
            batch_within=float(e.get("SCHEDSTREAM_BATCH_WITHIN", d.batch_within)),
            batch_budget=float(e.get("SCHEDSTREAM_BATCH_BUDGET", d.batch_budget)),
            session_timeout=float(e.get("SCHEDSTREAM_SESSION_TIMEOUT", d.session_timeout)),
            snapshot_every=int(e.get("SCHEDSTREAM_SNAPSHOT_EVERY", d.snapshot_every)),
            data_dir=Path(e.get("SCHEDSTREAM_DATA_DIR", str(d.data_dir))),
            log_format=e.get("SCHEDSTREAM_LOG_FORMAT", d.log_format),
            log_level=e.get("SCHEDSTREAM_LOG_LEVEL", d.log_level),
            kafka_security=KafkaSecurity.from_env(e),
            metrics_addr=e.get("SCHEDSTREAM_METRICS_ADDR", d.metrics_addr),
        )


def _check_numbers(env: Mapping[str, str]) -> None:
    for name, (number, zero) in NUMBERS.items():
        value = env.get(name)
        if value is None:
            continue
        kind = "an integer" if number is int else "a number"
        try:
            parsed = number(value)
        except ValueError:
            raise SettingsError(f"{name}={value!r} is not {kind}") from None
        if math.isnan(parsed) or parsed < 0 or (parsed == 0 and not zero):
            least = "0 or more" if zero else "more than 0"
            raise SettingsError(f"{name}={value!r}: must be {kind} {least}")
    level = env.get("SCHEDSTREAM_LOG_LEVEL")
    if level is not None and level.lower() not in LOG_LEVELS:
        raise SettingsError(f"SCHEDSTREAM_LOG_LEVEL={level!r} is not one of {', '.join(LOG_LEVELS)}")
