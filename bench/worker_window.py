"""What a worker did over a stretch of a benchmark, read from its own ``/metrics`` before and
after it and from its CPU time: how many batches it processed and committed and how long they
took, its scheduling cycles, and how much of a core it used. The speed table prints it under a
latency row short of its target: a marker waits for the batch before its own and then for its
own, so the batches' lengths and the worker's share of a core say where its time went.
"""

from __future__ import annotations

import math
import os
import socket
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

BATCH = "schedstream_batch_commit_seconds"  # seconds
CYCLE = "volcano_e2e_scheduling_latency_milliseconds"  # milliseconds

Buckets = dict[float, float]  # upper bound -> how many observations fell at or under it, so far


def free_address() -> str:
    """A loopback HOST:PORT nothing listens on now, for the worker's ``--metrics-addr``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def _histograms(address: str) -> dict[str, Buckets]:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    out: dict[str, Buckets] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_bucket") and family.name in (BATCH, CYCLE):
                out.setdefault(family.name, {})[float(sample.labels["le"])] = sample.value
    return out


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quantile(buckets: Buckets, q: float) -> float:
    """The upper bound of the bucket the ``q`` quantile falls in (cumulative counts); nan when empty."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0
    if not total:
        return math.nan
    return next(bound for bound in bounds if buckets[bound] >= q * total)


@dataclass(frozen=True, slots=True)
class Window:
    batches: int
    batch_ms: tuple[float, float]  # p50, p99 (the upper bounds of their buckets)
    cycles: int
    cycle_ms: tuple[float, float]
    cpu_share: float  # of one core, from the window's start to the worker's last decision

    def line(self) -> str:
        def ms(value: float) -> str:
            if math.isnan(value):
                return "none"
            return "over the largest bucket" if math.isinf(value) else f"<= {value:,.0f} ms"

        return (
            f"  (the worker over the window: {self.batches:,} batches processed and committed, p50 "
            f"{ms(self.batch_ms[0])}, p99 {ms(self.batch_ms[1])}; {self.cycles:,} cycles, p99 {ms(self.cycle_ms[1])};"
            f" {self.cpu_share:.0%} of a core until its last decision)"
        )


class Watch:
    """A worker's counters at the start of a window; ``stop`` gives the window."""

    def __init__(self, pid: int, address: str) -> None:
        self.pid, self.address = pid, address
        self.started, self.cpu, self.before = time.perf_counter(), _cpu_seconds(pid), _histograms(address)

    def stop(self, busy_until: float | None = None) -> Window:
        """The window; ``busy_until`` (``time.perf_counter``): when the worker's last decision
        came, the end of the time its CPU share is over (it idles after it)."""
        after = _histograms(self.address)
        end = time.perf_counter() if busy_until is None else busy_until
        cpu_share = (_cpu_seconds(self.pid) - self.cpu) / max(end - self.started, 1e-9)

        def spread(name: str, scale: float) -> tuple[int, tuple[float, float]]:
            was = self.before.get(name, {})
            buckets = {bound * scale: count - was.get(bound, 0) for bound, count in after.get(name, {}).items()}
            count = int(buckets.get(math.inf, 0))
            return count, (quantile(buckets, 0.5), quantile(buckets, 0.99))

        batches, batch_ms = spread(BATCH, 1000)
        cycles, cycle_ms = spread(CYCLE, 1)
        return Window(batches, batch_ms, cycles, cycle_ms, cpu_share)
