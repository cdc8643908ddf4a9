"""Logging: structlog, configured once. Human-readable on a terminal, JSON lines otherwise;
call sites bind cluster, seq, partition and offset so every line says where it came from.

Ours are written by structlog itself; the standard library's root logger goes through the same
structlog processors, so the records of Faust, mode and aiokafka come out in the same format as
ours (JSON off a terminal, never with colour or cursor escape codes), on standard error.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import TextIO

import structlog

FORMATS = ("auto", "console", "json")
LEVELS = ("debug", "info", "warning", "error", "critical")
LIBRARIES = ("faust", "mode", "aiokafka", "kafka", "alembic")  # their own logs stay at WARNING unless we debug


class LogConfigError(ValueError):
    """An invalid SCHEDSTREAM_LOG_FORMAT or SCHEDSTREAM_LOG_LEVEL."""


def configure(level: str = "info", fmt: str = "auto") -> None:
    """``fmt``: "console", "json", or "auto" (console when stderr is a terminal)."""
    if fmt not in FORMATS:
        raise LogConfigError(f"SCHEDSTREAM_LOG_FORMAT={fmt!r} is not one of {', '.join(FORMATS)}")
    if level.lower() not in LEVELS:
        raise LogConfigError(f"SCHEDSTREAM_LOG_LEVEL={level!r} is not one of {', '.join(LEVELS)}")
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        if use_console
        else structlog.processors.JSONRenderer()
    )
    render = [*([] if use_console else [structlog.processors.format_exc_info]), renderer]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *render],
        )
    )
    numeric = logging.getLevelNamesMapping()[level.upper()]
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for library in LIBRARIES:
        logging.getLogger(library).setLevel(numeric if numeric <= logging.DEBUG else logging.WARNING)
    # Our own lines skip the standard library (a LogRecord, its handler and formatter cost about as
    # much again as the line: the worker logs every decision) and are written whole, one at a time.
    structlog.configure(
        processors=[*shared, *render],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=functools.partial(_Writer, sys.stderr),  # standard error as it is now
        cache_logger_on_first_use=True,
    )


def get(name: str) -> structlog.typing.FilteringBoundLogger:
    return structlog.get_logger(name)


class _Writer(structlog.WriteLogger):
    """structlog's line writer, with the name ``add_logger_name`` reads."""

    def __init__(self, file: TextIO, name: str = "") -> None:
        super().__init__(file)
        self.name = name
