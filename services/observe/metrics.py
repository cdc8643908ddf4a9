"""WorkerMetrics: the worker's Prometheus metrics, under the names operators already chart.

* Volcano's (``volcano_*``, as pkg/scheduler/metrics names them): cycle latency, schedule
  attempts, unschedulable tasks and jobs, and per queue what it holds against its deserved
  share and capability (cpu in milli-cores, memory in bytes, other resources in milli-units).
* Kueue's (``kueue_*``, as pkg/metrics names them, ``replica_role="standalone"``): admission
  attempts, admitted workloads, pending workloads (active / inadmissible) and each
  ClusterQueue's usage and nominal quota per flavor and resource.
* Ours (``schedstream_*``): events consumed and lag per partition, batch commit latency,
  decisions by kind, rejects by reason.

Counters are counted from what the pipeline returns (decisions, rejects) and gauges are read
from the clusters' state at scrape time (``services.observe.view``), so the domain stays pure.
Decisions are emitted on change only: an attempt whose outcome repeats the last one is not
counted again, unlike upstream, which counts every attempt of every cycle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from domain.decisions import Decision, DecisionKind
from domain.engine import Failing
from domain.quantity import CPU, MEMORY, MILLI
from domain.state import ClusterState
from services.observe.view import ClusterView, view_of

ROLE = "standalone"  # Kueue's replica_role of a process that is not one of several replicas
_MS_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
_S_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_DETAIL = re.compile(r"( - at `.*`|: .*)$")
_NUMBER = re.compile(r"\b\d+\b")


def reject_class(reason: str) -> str:
    """A reject reason without its detail (the offending value, the JSON path) and with its
    numbers as ``N`` (a failed cycle's seq): a bounded label."""
    return _NUMBER.sub("N", _DETAIL.sub("", reason))[:80] or "unknown"


class WorkerMetrics:
    def __init__(self, states: Callable[[], Iterable[ClusterState]], failing: Callable[[str], Failing | None]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.cycle_ms = Histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "Duration of a scheduling cycle in milliseconds (its SCHEDULE marker's processing).",
            buckets=_MS_BUCKETS,
            registry=r,
        )
        self.attempts = Counter(
            "volcano_schedule_attempts", "Scheduling outcomes, by result (on change).", ["result"], registry=r
        )
        self.admission = Counter(
            "kueue_admission_attempts",
            "Admission outcomes, by result (on change).",
            ["result", "replica_role"],
            registry=r,
        )
        self.admitted = Counter(
            "kueue_admitted_workloads", "Workloads admitted.", ["cluster_queue", "replica_role"], registry=r
        )
        self.events = Counter("schedstream_events_consumed", "Events consumed.", ["partition"], registry=r)
        self.lag = Gauge("schedstream_consumer_lag", "Messages behind the partition's end.", ["partition"], registry=r)
        self.commit = Histogram(
            "schedstream_batch_commit_seconds",
            "Time to process and commit one batch.",
            buckets=_S_BUCKETS,
            registry=r,
        )
        self.decisions = Counter("schedstream_decisions", "Decisions made, by kind.", ["kind"], registry=r)
        self.timer = Counter(
            "schedstream_timer_markers",
            "SCHEDULE markers of the worker's timer for a cluster that wanted a cycle, by outcome: written,"
            " idle (not written: it would have decided nothing) or backoff (not written: the cluster's"
            " last cycles raised, and the wait after them is not over).",
            ["outcome"],
            registry=r,
        )
        self.rejects = Counter("schedstream_rejects", "Inputs rejected, by reason.", ["reason"], registry=r)
        self.parked = Gauge(
            "schedstream_outbox_parked",
            "Outbox rows the broker refused, kept in the store's outbox_parked table: alert when above 0.",
            registry=r,
        )
        r.register(_StateCollector(states, failing))

    def observe_batch(
        self, partition: int, events: int, decisions: Sequence[Decision], rejects: Sequence[str], seconds: float
    ) -> None:
        self.events.labels(str(partition)).inc(events)
        self.commit.observe(seconds)
        for reason in rejects:
            self.rejects.labels(reject_class(reason)).inc()
        for decision in decisions:
            self.decisions.labels(decision.kind.value).inc()
            self._outcome(decision)

    def _outcome(self, decision: Decision) -> None:
        if decision.kind is DecisionKind.BIND:
            self.attempts.labels("scheduled").inc()
        elif decision.kind is DecisionKind.POD_GROUP_STATUS:
            conditions = decision.fields.get("conditions") or ()
            if any(c.get("type") == "Unschedulable" and c.get("status") == "True" for c in conditions):
                self.attempts.labels("unschedulable").inc()
        elif decision.kind is DecisionKind.WORKLOAD_STATUS:
            self._admission(decision)

    def _admission(self, decision: Decision) -> None:
        """By the decision's reason: Kueue's cycle reserves quota ("QuotaReserved", admitted at
        once without admission checks), the checks admit later ("Admitted", with their states),
        or it cannot admit ("Pending", "Inadmissible")."""
        admitted = any(c.get("type") == "Admitted" and c.get("status") == "True"
                       for c in decision.fields.get("conditions") or ())  # fmt: skip
        if decision.reason == "QuotaReserved":
            self.admission.labels("success", ROLE).inc()
        elif decision.reason in ("Pending", "Inadmissible"):
            self.admission.labels("inadmissible", ROLE).inc()
        checks_admit = decision.reason == "Admitted" and "admissionChecks" in decision.fields
        if admitted and (decision.reason == "QuotaReserved" or checks_admit):
            queue = (decision.fields.get("admission") or {}).get("clusterQueue", "")
            self.admitted.labels(str(queue), ROLE).inc()


def _per_resource(amounts: dict[str, int]) -> Iterator[tuple[str, str, float]]:
    """(metric suffix, resource, value) in Volcano's units: milli-cpu, memory bytes, scalar milli-units."""
    for name, amount in sorted(amounts.items()):
        if name == CPU:
            yield "milli_cpu", "", float(amount)
        elif name == MEMORY:
            yield "memory_bytes", "", amount / MILLI
        elif name != "pods":
            yield "scalar_resources", name, float(amount)


class _StateCollector(Collector):
    """Gauges read from the clusters' state at each scrape."""

    def __init__(self, states: Callable[[], Iterable[ClusterState]], failing: Callable[[str], Failing | None]) -> None:
        self.states, self.failing = states, failing

    def collect(self) -> Iterator[Metric]:
        views = [view_of(state, self.failing(state.name)) for state in self.states()]
        failing = GaugeMetricFamily(
            "schedstream_cycles_failing",
            "Scheduling cycles of the cluster that raised in a row (0: the last ran to its end): alert when"
            " above 0; the DLQ's rejects say why.",
            labels=["cluster"],
        )
        for view in views:
            failing.add_metric([view.cluster], view.failing.count if view.failing is not None else 0)
        yield failing
        yield from _volcano(views)
        yield from _kueue(views)


def _volcano(views: list[ClusterView]) -> Iterator[Metric]:
    families: dict[str, GaugeMetricFamily] = {}

    def gauge(name: str, help_text: str, labels: list[str]) -> GaugeMetricFamily:
        if name not in families:
            families[name] = GaugeMetricFamily(name, help_text, labels=labels)
        return families[name]

    for what in ("allocated", "deserved", "capacity"):
        for suffix, labels in (("milli_cpu", ["queue_name"]), ("memory_bytes", ["queue_name"])):
            gauge(f"volcano_queue_{what}_{suffix}", f"Queue {what}.", ["cluster", *labels])
        gauge(f"volcano_queue_{what}_scalar_resources", f"Queue {what}.", ["cluster", "queue_name", "resource"])
    share = gauge("volcano_queue_share", "Largest allocated/deserved ratio of the queue.", ["cluster", "queue_name"])
    weight = gauge("volcano_queue_weight", "Weight of the queue.", ["cluster", "queue_name"])
    tasks = gauge("volcano_unschedule_task_count", "Tasks that could not be scheduled.", ["cluster", "job_id"])
    held_help = "Room a gang past its waiting bound held from later jobs in the last cycle."
    for suffix, labels in (("milli_cpu", []), ("memory_bytes", []), ("scalar_resources", ["resource"])):
        gauge(f"schedstream_held_room_{suffix}", held_help, ["cluster", "podgroup", *labels])
    held_nodes = gauge("schedstream_held_room_nodes", "Nodes where a gang held room in the last cycle.",
                       ["cluster", "podgroup"])  # fmt: skip
    starts_by = gauge(
        "schedstream_held_room_starts_by_timestamp_seconds",
        "When a gang holding room starts at the latest (its shadow time), when runtimes tell.",
        ["cluster", "podgroup"],
    )
    jobs = gauge("volcano_unschedule_job_count", "Jobs that could not be scheduled.", ["cluster"])
    for view in views:
        for queue in view.queues:
            for what, amounts in (("allocated", queue.allocated), ("deserved", queue.deserved),
                                  ("capacity", queue.capability)):  # fmt: skip
                for suffix, resource, value in _per_resource(amounts):
                    labels = [view.cluster, queue.name, *([resource] if resource else [])]
                    families[f"volcano_queue_{what}_{suffix}"].add_metric(labels, value)
            if queue.share is not None:
                share.add_metric([view.cluster, queue.name], queue.share)
            weight.add_metric([view.cluster, queue.name], queue.weight)
        stuck = [row for row in view.waiting if row.kind == "PodGroup" and row.reason]
        for row in stuck:
            tasks.add_metric([view.cluster, row.key], row.unplaced)
        jobs.add_metric([view.cluster], len(stuck))
        for held in view.held:
            for suffix, resource, value in _per_resource(held.held):
                labels = [view.cluster, held.gang, *([resource] if resource else [])]
                families[f"schedstream_held_room_{suffix}"].add_metric(labels, value)
            held_nodes.add_metric([view.cluster, held.gang], held.nodes)
            if held.starts_by is not None:
                starts_by.add_metric([view.cluster, held.gang], held.starts_by.timestamp())
    yield from families.values()


def _kueue(views: list[ClusterView]) -> Iterator[Metric]:
    quota_labels = ["cluster", "cohort", "cluster_queue", "flavor", "resource", "replica_role"]
    usage = GaugeMetricFamily(
        "kueue_cluster_queue_resource_usage", "Resources reserved by admitted workloads.", labels=quota_labels
    )
    nominal = GaugeMetricFamily("kueue_cluster_queue_nominal_quota", "Nominal quota.", labels=quota_labels)
    pending = GaugeMetricFamily(
        "kueue_pending_workloads", "Pending workloads.", labels=["cluster", "cluster_queue", "status", "replica_role"]
    )
    active = GaugeMetricFamily(
        "kueue_admitted_active_workloads",
        "Workloads holding quota.",
        labels=["cluster", "cluster_queue", "replica_role"],
    )
    for view in views:
        for cq in view.cluster_queues:
            for family, amounts in ((usage, cq.usage), (nominal, cq.nominal)):
                for (flavor, resource), amount in amounts.items():
                    value = amount / MILLI
                    family.add_metric([view.cluster, cq.cohort, cq.name, flavor, resource, ROLE], value)
            for status in ("active", "inadmissible"):
                pending.add_metric([view.cluster, cq.name, status, ROLE], cq.pending[status])
            active.add_metric([view.cluster, cq.name, ROLE], cq.admitted)
    yield from (usage, nominal, pending, active)
