"""One line per interval for aiokafka's repeated errors: a broker outage makes its client log
the same connection error thousands of times a second. The first of a kind passes, the repeats
within ``INTERVAL`` are counted, and the next one after it passes with that count."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import aiokafka  # noqa: F401 - imported for its loggers, which must exist to be filtered

INTERVAL = 10.0
PREFIX = "aiokafka"


class RepeatLimiter(logging.Filter):
    """Passes a WARNING-or-worse record of a given (logger, message template) at most once per
    ``interval``; the one that passes after a quiet spell says how many were held back."""

    def __init__(self, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self.seen: dict[tuple[str, str], tuple[float, int]] = {}  # key -> (when passed, held back since)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, str(record.msg))
        now = self.clock()
        passed, held = self.seen.get(key, (float("-inf"), 0))
        if now - passed < self.interval:
            self.seen[key] = (passed, held + 1)
            return False
        self.seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} (and {held} more like it in the last {now - passed:.0f} s)"
        return True


def install(interval: float = INTERVAL) -> RepeatLimiter:
    """Put one limiter on aiokafka's loggers (records are filtered where they are made)."""
    limiter = RepeatLimiter(interval)
    names = [name for name in logging.root.manager.loggerDict if name.split(".")[0] == PREFIX]
    for name in sorted({PREFIX, *names}):
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, RepeatLimiter)]:
            logger.removeFilter(old)
        logger.addFilter(limiter)
    return limiter
