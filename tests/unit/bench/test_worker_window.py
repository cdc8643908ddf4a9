"""``bench.worker_window``: what a worker did over a latency row's window, from its /metrics."""

from __future__ import annotations

import math
import os

from prometheus_client import CollectorRegistry, Histogram, start_http_server

from bench import worker_window
from services.observe import metrics


def test_a_window_counts_what_the_metrics_gained_in_it() -> None:
    """Histograms named as the worker's (``services.observe.metrics``) served on a free port:
    the window holds what they gained between its start and its stop, and this process's CPU."""
    registry = CollectorRegistry()
    batch = Histogram(worker_window.BATCH, "batches", buckets=metrics._S_BUCKETS, registry=registry)
    cycle = Histogram(worker_window.CYCLE, "cycles", buckets=metrics._MS_BUCKETS, registry=registry)
    address = worker_window.free_address()
    host, port = address.split(":")
    server, thread = start_http_server(int(port), host, registry)
    try:
        batch.observe(30.0)  # before the window: not in it
        watch = worker_window.Watch(os.getpid(), address)
        for _ in range(98):
            batch.observe(0.004)
        batch.observe(0.3)
        batch.observe(7.0)
        for _ in range(10):
            cycle.observe(3)
        sum(range(2_000_000))  # some CPU
        window = watch.stop()
    finally:
        server.shutdown()
        thread.join()
    assert window.batches == 100
    assert window.batch_ms == (5.0, 500.0)  # the bounds of the buckets of the median and p99, in ms
    assert (window.cycles, window.cycle_ms) == (10, (5.0, 5.0))
    assert window.cpu_share > 0
    assert "100 batches processed and committed, p50 <= 5 ms, p99 <= 500 ms; 10 cycles, p99 <= 5 ms" in window.line()


def test_quantiles_are_bucket_bounds() -> None:
    buckets = {0.1: 50.0, 1.0: 99.0, math.inf: 100.0}
    assert worker_window.quantile(buckets, 0.5) == 0.1
    assert worker_window.quantile(buckets, 0.99) == 1.0
    assert worker_window.quantile(buckets, 1.0) == math.inf
    assert math.isnan(worker_window.quantile({}, 0.5))
    told = worker_window.Window(1, (1.0, math.inf), 0, (math.nan,) * 2, 0.5).line()
    assert "p99 over the largest bucket; 0 cycles, p99 none;" in told
