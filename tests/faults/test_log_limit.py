"""A broker outage makes aiokafka log one connection error thousands of times: one line per
interval passes, with the count of those held back."""

from __future__ import annotations

import logging

from services.stream.log_limit import RepeatLimiter, install


def _record(msg: str, level: int = logging.ERROR, name: str = "aiokafka.conn") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, None, None)


def test_repeats_within_the_interval_are_held_back_and_counted_on_the_next_line() -> None:
    now = [0.0]
    limiter = RepeatLimiter(interval=10, clock=lambda: now[0])
    passed = []
    for step in range(1000):  # 1,000 errors in 20 s
        now[0] = step * 0.02
        record = _record("Unable to connect to node with id %s")
        if limiter.filter(record):
            passed.append(record.msg)
    assert len(passed) == 2
    assert passed[0] == "Unable to connect to node with id %s"
    assert passed[1].startswith("Unable to connect to node with id %s (and 499 more like it in the last 10 s)")


def test_other_messages_and_lower_levels_are_not_held_back() -> None:
    limiter = RepeatLimiter(interval=10, clock=lambda: 0.0)
    assert limiter.filter(_record("a"))
    assert limiter.filter(_record("b"))
    assert not limiter.filter(_record("a"))
    assert all(limiter.filter(_record("a", logging.INFO)) for _ in range(3))


def test_install_puts_one_limiter_on_every_aiokafka_logger() -> None:
    install()
    limiter = install()
    for name in ("aiokafka", "aiokafka.conn", "aiokafka.consumer.group_coordinator"):
        limiters = [f for f in logging.getLogger(name).filters if isinstance(f, RepeatLimiter)]
        assert limiters == [limiter]
