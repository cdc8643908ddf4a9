"""The applier: ``schedstream apply`` consumes the decisions topic and acts on the cluster.

Per message, in partition order: decode, skip an id the ledger holds, act (services/kube/effects.py),
record the id and its outcome, and commit the partition's offset after the batch. Effects and
offsets are never in one transaction, so the order makes it exactly once in effect: a crash before
the ledger row re-applies a decision whose effect finds nothing left to do; a crash before the
offset commit re-reads decisions whose ids the ledger skips. A transient API error (the server
away, 5xx, 429) is retried with backoff, holding the partition, so nothing is skipped.

``--dry-run`` writes nothing, neither to the cluster nor to the ledger, and commits no offset:
it reads every decision from the start and reports whether the cluster did the same
(services/kube/shadow.py), one line per decision and a summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import ClientError
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition
from kubernetes_asyncio.client.exceptions import ApiException

from services import logging as log
from services.config import Settings
from services.kafka_security import PLAINTEXT, KafkaSecurity
from services.kube import effects, shadow
from services.kube.api import Rest, object_path
from services.kube.client import KubeError, connect
from services.kube.ledger import Ledger, target_key

logger = log.get("schedstream.apply")
MAX_BACKOFF = 10.0


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Applier:
    rest: Rest
    scheduler_name: str
    ledger: Ledger | None  # None in a dry run
    outcomes: Counter[str] = field(default_factory=Counter)
    report: shadow.Report = field(default_factory=shadow.Report)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, value: bytes | None) -> bool:
        """Handle one message; False when stopping interrupted it (its offset must not be committed)."""
        try:
            decision = json.loads(value or b"")
            if not isinstance(decision, dict) or not {"id", "kind", "target"} <= decision.keys():
                raise ValueError("a decision has an id, a kind and a target")
        except ValueError as exc:
            self.outcomes["invalid"] += 1
            text = (value or b"")[:200].decode("utf-8", "replace")
            logger.warning("not a decision, skipped", error=str(exc), value=text)
            return True
        if self.ledger is None:
            await self.compare(decision)
            return True
        if self.ledger.has(decision["id"]):
            self.outcomes["duplicate"] += 1
            return True
        result = await self.retrying(decision)
        if result is None:
            return False
        self.ledger.record(decision, result)
        self.outcomes[result.outcome.value] += 1
        logger.info("applied", decision=decision["kind"], id=decision["id"], key=target_key(decision["target"]),
                    outcome=result.outcome.value, detail=result.detail)  # fmt: skip
        return True

    async def retrying(self, decision: Mapping[str, Any]) -> effects.Result | None:
        ctx = effects.Context(self.rest, self.scheduler_name, rfc3339_now)
        delay = 0.5
        while not self.stopping.is_set():
            try:
                return await effects.apply(ctx, decision)
            except ApiException as exc:
                if effects.is_denied(exc):
                    raise KubeError(
                        f"permission denied ({exc.status}) applying {decision['kind']} to "
                        f"{target_key(decision['target'])}: {exc.reason}; apply needs the RBAC of docs/apply-rbac.yaml"
                    ) from None
                delay = await self.back_off(decision, exc, delay)
            except (TimeoutError, ClientError, OSError) as exc:
                delay = await self.back_off(decision, exc, delay)
        return None

    async def back_off(self, decision: Mapping[str, Any], exc: Exception, delay: float) -> float:
        """Wait ``delay`` (less if stopping) after a transient failure; the next delay."""
        logger.warning("the API server failed, retrying", id=decision["id"], error=str(exc)[:300], delay=delay)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), delay)
        return min(delay * 2, MAX_BACKOFF)

    async def compare(self, decision: Mapping[str, Any]) -> None:
        """Dry run: what the cluster holds now for the decision's target, beside the decision."""
        if decision["kind"] not in shadow.ASPECTS:
            self.outcomes["not-compared"] += 1
            return
        t = decision["target"]
        obj = await self.rest.get(object_path(t["apiVersion"], t["kind"], t.get("namespace", ""), t["name"]))
        comparison = shadow.compare(decision, obj)
        if comparison is not None:
            self.report.comparisons.append(comparison)
            self.outcomes["same" if comparison.agrees else "differs"] += 1
            logger.info("shadow", decision=decision["kind"], id=decision["id"], line=comparison.line())


async def consume(
    applier: Applier,
    bootstrap: str,
    topic: str,
    group: str | None,
    exit_when_idle: float | None,
    *,
    security: KafkaSecurity = PLAINTEXT,
) -> None:
    """Read the decisions topic until stopped (or idle that long), committing after each batch."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=200,
        **security.client_options(),
    )
    await consumer.start()
    last_input = time.monotonic()
    try:
        while not applier.stopping.is_set():
            batches = await consumer.getmany(timeout_ms=500)
            if not batches:
                if exit_when_idle is not None and time.monotonic() - last_input >= exit_when_idle:
                    break
                continue
            last_input = time.monotonic()
            for tp, messages in sorted(batches.items()):
                done = await _handle_partition(applier, messages)
                if group is not None and done is not None:
                    await consumer.commit({TopicPartition(tp.topic, tp.partition): done + 1})
    finally:
        await consumer.stop()


async def _handle_partition(applier: Applier, messages: list[Any]) -> int | None:
    """Handle a partition's messages in order; the offset of the last one fully handled."""
    done = None
    for message in messages:
        if applier.stopping.is_set() or not await applier.handle(message.value):
            break
        done = message.offset
    return done


@dataclass(frozen=True, slots=True)
class Summary:
    outcomes: Mapping[str, int]
    report: shadow.Report | None  # the dry run's comparisons

    def line(self) -> str:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.outcomes.items())) or "no decisions"
        return f"apply: {counts}"


async def run(
    *,
    bootstrap: str,
    topic: str,
    group: str,
    rest: Rest,
    scheduler_name: str,
    ledger: Ledger | None,
    exit_when_idle: float | None,
    security: KafkaSecurity = PLAINTEXT,
) -> Summary:
    """Apply (or, without a ledger, compare) decisions until SIGINT/SIGTERM or idleness."""
    applier = Applier(rest, scheduler_name, ledger)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, applier.stopping.set)
    try:
        group_id = group if ledger is not None else None
        await consume(applier, bootstrap, topic, group_id, exit_when_idle, security=security)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return Summary(dict(applier.outcomes), applier.report if ledger is None else None)


async def apply_command(
    settings: Settings,
    kubeconfig: Path | None,
    scheduler_name: str,
    ledger_url: str | None,
    *,
    dry_run: bool,
    exit_when_idle: float | None,
) -> Summary:
    """``schedstream apply``: connect, check the server answers, then run."""
    async with connect(kubeconfig) as kube:
        rest = Rest(kube.api_client)
        try:
            await rest.request("GET", "/version")
        except (ApiException, ClientError, OSError) as exc:
            raise KubeError(f"cannot reach the Kubernetes API server at {kube.server}: {exc}") from None
        ledger = None if dry_run else Ledger(ledger_url or f"sqlite:///{settings.data_dir / 'apply.db'}")
        try:
            return await run(
                bootstrap=settings.kafka_bootstrap,
                topic=settings.decisions_topic,
                group=f"{settings.app_id}-apply",
                rest=rest,
                scheduler_name=scheduler_name,
                ledger=ledger,
                exit_when_idle=exit_when_idle,
                security=settings.kafka_security,
            )
        finally:
            if ledger is not None:
                ledger.close()
