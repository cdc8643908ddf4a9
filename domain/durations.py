"""Durations: the Go duration strings (``"300ms"``, ``"1m30s"``, ``"168h"``) that Kueue's and
Volcano's configurations and objects carry, read by durationpy (Go's ``time.ParseDuration``
grammar, the parser the Kubernetes Python client uses). One place, for both schedulers.
"""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache

import durationpy


class DurationError(ValueError):
    """A value that is not a Go duration of at least zero; the message names its key."""


def parse(value: object, key: str) -> timedelta:
    """``value`` as a duration; ``key`` (e.g. ``'kueue.waitForPodsReady.timeout'``) names it in the error."""
    if not isinstance(value, str):
        raise DurationError(f"{key} must be a duration such as '5m' or '300ms', not {value!r}")
    try:
        # durationpy also knows days and weeks ("1d", "2w"); Go's ParseDuration, and so the
        # cluster, does not: refuse them here rather than accept a file upstream rejects.
        if "d" in value or "w" in value:
            raise durationpy.DurationError(value)
        parsed = durationpy.from_str(value)
    except durationpy.DurationError:
        raise DurationError(f"{key} must be a duration such as '5m' or '300ms', not {value!r}") from None
    if parsed < timedelta(0):
        raise DurationError(f"{key} must not be negative, not {value!r}")
    return parsed


def seconds(value: object, key: str) -> float:
    return parse(value, key).total_seconds()


def positive_seconds(value: object) -> float | None:
    """Seconds of a positive Go duration, or None for anything else (an annotation upstream
    ignores when it does not parse, as Volcano's sla plugin does)."""
    return _positive_seconds(value) if isinstance(value, str) else None


@lru_cache(maxsize=1024)
def _positive_seconds(text: str) -> float | None:
    """``positive_seconds`` of a string, kept: the same few annotations are read every cycle."""
    try:
        parsed = seconds(text, "")
    except DurationError:
        return None
    return parsed if parsed > 0 else None
