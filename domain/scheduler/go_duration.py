"""Go duration strings, as Volcano's plugin arguments and annotations spell waiting times
(``time.ParseDuration``: "1h2m3s4ms5us6ns", "1.5h", "90s")."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration(text: object) -> float | None:
    """Seconds of a Go duration string, or None when it is not one or is not positive."""
    if not isinstance(text, str) or not text:
        return None
    seconds, at = 0.0, 0
    while at < len(text):
        match = _PART.match(text, at)
        if match is None:
            return None
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        at = match.end()
    return seconds if seconds > 0 else None
