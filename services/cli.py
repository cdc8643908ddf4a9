"""The ``schedstream`` command line (CONTRACT section 3): replay, worker, produce, apply, shadow, simulate, machines,
db upgrade."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Coroutine
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from domain.scheduler.config import ConfigError, SchedulerConfig, from_mapping
from services import logging as log
from services.config import Settings
from services.errors import Group

T = TypeVar("T")
GC_THRESHOLDS = (10_000, 20, 100)  # Python's collector: young objects, then each older generation
BATCH_GC_THRESHOLDS = (100_000, 50, 100)  # for ``simulate``: nobody waits on its pauses
EXPLAIN_KINDS = ("pod", "podgroup", "job", "queue", "workload", "clusterqueue", "localqueue", "node")


def load_config(path: Path | None) -> SchedulerConfig:
    if path is None:
        return SchedulerConfig()
    try:
        data = yaml.safe_load(path.read_text())
        config = from_mapping(data)
    except (ConfigError, yaml.YAMLError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--config") from None
    for warning in config.warnings:  # accepted, but with no effect here: one line each
        click.echo(f"warning: {path}: {warning}", err=True)
    return config


def configure_logging(settings: Settings) -> None:
    try:
        log.configure(settings.log_level, settings.log_format)
    except log.LogConfigError as exc:
        raise click.UsageError(str(exc)) from None


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Scheduler configuration (YAML, volcano-scheduler.conf shape).",
)


@click.group("schedstream", cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """schedstream: an event-sourced batch scheduler for Kubernetes-style clusters."""
    # Each event and cycle makes many short-lived objects beside a large, lasting state; at
    # Python's default thresholds (700, 10, 10) the collector walks that state every 70,000
    # allocations (37 full passes on HPC2N's first 1,500 jobs). Rarer passes: 13% less CPU there.
    # A young generation of 10,000 rather than 50,000: each young pass stops the worker for at
    # most ~25 ms instead of 60-90 (a marker's decisions wait for it), and in all less CPU.
    gc.set_threshold(*GC_THRESHOLDS)


@main.command()
@click.argument("events", nargs=-1, required=True)
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Decisions file (JSONL), written whole or not at all; '-' is stdout.")  # fmt: skip
@click.option("--rejects", "rejects_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="Rejected lines with reasons, written whole or not at all.")  # fmt: skip
@click.option("--db", "db_url", default="sqlite://", show_default=True, help="Store URL (default: in memory).")
@config_option
def replay(
    events: tuple[str, ...], out_path: str, rejects_path: str | None, db_url: str, config_path: Path | None
) -> None:
    """Run the scheduler over EVENTS files ('-' is stdin) and write its decisions."""
    from services.output import atomic_output
    from services.progress import bar
    from services.record_files import read_records
    from services.replay import StoreNotEmpty, replay_records

    settings = Settings.from_env()
    configure_logging(settings)
    logger = log.get("schedstream.replay")
    config = load_config(config_path)
    try:
        records = read_records(events)  # all input first: a bad path leaves --out untouched
    except OSError as exc:
        raise click.FileError(exc.filename or events[0], hint=exc.strerror or str(exc)) from None
    try:
        with (
            atomic_output(out_path) as out,
            atomic_output(rejects_path) if rejects_path else nullcontext() as rejects,
            bar("replay", len(records)) as progress,
        ):
            summary = replay_records(records, out, config=config, rejects_out=rejects, db_url=db_url, progress=progress)
    except OSError as exc:
        raise click.FileError(getattr(exc, "filename", None) or out_path, hint=exc.strerror or str(exc)) from None
    except StoreNotEmpty as exc:
        raise click.UsageError(str(exc)) from None
    for reject in summary.rejects:
        logger.warning("rejected", position=reject.position, reason=reject.reason)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(summary.decisions.items())) or "none"
    click.echo(f"{summary.events} events, {len(summary.rejects)} rejected; decisions: {kinds}", err=True)


@main.command()
@config_option
@click.option("--db", "db_url", help="Store URL (default: $SCHEDSTREAM_DB_URL or sqlite:///schedstream.db).")
@click.option("--exit-when-idle", type=float, help="Stop cleanly after this many seconds without input.")
@click.option(
    "--metrics-addr",
    help="HOST:PORT for /metrics, /healthz, /readyz and the status page (default: $SCHEDSTREAM_METRICS_ADDR; off).",
)
def worker(
    config_path: Path | None, db_url: str | None, exit_when_idle: float | None, metrics_addr: str | None
) -> None:
    """Run the streaming service on Kafka (cluster-events -> scheduler-decisions)."""
    import faust

    from services.store.startup import DatabaseUnreachable, upgrade_when_reachable
    from services.stream.app import create_app
    from services.stream.topics import ensure_topics

    settings = Settings.from_env()
    if db_url:
        settings = replace(settings, db_url=db_url)
    configure_logging(settings)
    metrics_addr = metrics_addr or settings.metrics_addr or None
    if metrics_addr:
        from services.observe.server import parse_addr

        try:
            parse_addr(metrics_addr)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--metrics-addr") from None
    config = load_config(config_path)
    try:
        upgrade_when_reachable(settings.db_url, settings.db_wait).close()
    except DatabaseUnreachable as exc:
        raise click.ClickException(str(exc)) from None
    topics = [settings.events_topic, settings.dlq_topic, settings.decisions_topic]
    _reach_kafka(
        settings, ensure_topics(settings.kafka_bootstrap, topics, settings.partitions, settings.kafka_security)
    )
    asyncio.set_event_loop(asyncio.new_event_loop())
    app = create_app(settings, config, exit_when_idle=exit_when_idle, metrics_addr=metrics_addr)
    # Logging is ours (services/logging.py): Faust's records go through structlog, at WARNING unless we debug.
    faust_worker = faust.Worker(app, quiet=True, override_logging=False)
    faust_worker.spinner = None  # it writes cursor escape codes even into a file
    faust_worker.execute_from_commandline()


def _reach_kafka(settings: Settings, work: Coroutine[Any, Any, T]) -> T:
    """Run ``work``; a broker that cannot be reached or refuses our login is a clear error, not a traceback."""
    from aiokafka.errors import KafkaConnectionError

    from services.errors import bootstrap_quietly
    from services.kafka_security import KafkaSecurityError, refused_logins

    try:
        settings.kafka_security.check()
    except KafkaSecurityError as exc:
        raise click.UsageError(str(exc)) from None
    with refused_logins() as refused, bootstrap_quietly():
        try:
            return asyncio.run(work)
        except KafkaConnectionError as exc:
            if refused:
                raise click.ClickException(
                    f"Kafka at {settings.kafka_bootstrap} refused the SCHEDSTREAM_KAFKA_SASL_* credentials "
                    f"({refused[0]})"
                ) from None
            raise click.ClickException(
                f"cannot reach Kafka at {settings.kafka_bootstrap} ({exc}); start one (make run does) "
                "or set SCHEDSTREAM_KAFKA_BOOTSTRAP"
            ) from None


@main.command()
@click.argument("files", nargs=-1, required=True)
@click.option("--topic", help="Events topic (default: $SCHEDSTREAM_EVENTS_TOPIC or cluster-events).")
def produce(files: tuple[str, ...], topic: str | None) -> None:
    """Feed event FILES ('-' is stdin) into the events topic, one message per line.

    A lone '-' is streamed: each line is sent as it arrives (e.g. from `kubectl get --raw ... -w`).
    """
    from services.produce import produce as run_produce
    from services.produce import stream_lines
    from services.record_files import marker_clusters, read_records

    settings = Settings.from_env()
    if files == ("-",):
        records: Any = stream_lines("-", sys.stdin.buffer)
        external = None
    else:
        try:
            records = read_records(files)
        except OSError as exc:
            raise click.FileError(exc.filename or files[0], hint=exc.strerror) from None
        external = marker_clusters(records)
    produced = _reach_kafka(
        settings,
        run_produce(
            records,
            bootstrap=settings.kafka_bootstrap,
            topic=topic or settings.events_topic,
            partitions=settings.partitions,
            external=external,
            security=settings.kafka_security,
        ),
    )
    for reject in produced.rejects:
        click.echo(f"{reject.position}: {reject.reason}", err=True)
    dlq = f"; {len(produced.rejects)} too large, sent to its DLQ" if produced.rejects else ""
    click.echo(f"produced {produced.sent} messages to {topic or settings.events_topic}{dlq}", err=True)


kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Kubeconfig (default: $KUBECONFIG or ~/.kube/config; in a pod: in-cluster config).",
)


@main.command(name="apply")
@kubeconfig_option
@config_option
@click.option("--dry-run", is_flag=True, help="Write nothing; report per decision whether the cluster did the same.")
@click.option("--ledger", "ledger_url", help="Store of applied decision ids (default: sqlite in the data dir).")
@click.option("--exit-when-idle", type=float, help="Stop cleanly after this many seconds without decisions.")
def apply_decisions(
    kubeconfig: Path | None,
    config_path: Path | None,
    *,
    dry_run: bool,
    ledger_url: str | None,
    exit_when_idle: float | None,
) -> None:
    """Act on the cluster for the decisions topic (binds, statuses, evictions, events), once per decision id."""
    from services.kube.apply import apply_command
    from services.kube.client import KubeError

    settings = Settings.from_env()
    log.configure(settings.log_level, settings.log_format)
    scheduler_name = load_config(config_path).scheduler_name
    idle = exit_when_idle
    work = apply_command(settings, kubeconfig, scheduler_name, ledger_url, dry_run=dry_run, exit_when_idle=idle)
    try:
        summary = _reach_kafka(settings, work)
    except KubeError as exc:
        raise click.ClickException(str(exc)) from None
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{kubeconfig}: not a kubeconfig ({str(exc).splitlines()[0]})") from None
    if summary.report is not None:
        click.echo(summary.report.text())
    click.echo(summary.line(), err=True)


@main.command()
@click.option("--events", "events_paths", multiple=True, help="Watch-event files (default: the events topic).")
@click.option("--decisions", "decisions_path", help="Decisions file (default: the decisions topic).")
@config_option
@click.option("--json", "as_json", is_flag=True, help="The report as JSON.")
def shadow(events_paths: tuple[str, ...], decisions_path: str | None, config_path: Path | None, as_json: bool) -> None:
    """Compare our decisions with what the cluster's own scheduler did (from the watch stream)."""
    from services.kube.shadow import read_file, read_topic, report

    settings = Settings.from_env()
    scheduler_name = load_config(config_path).scheduler_name
    try:
        events = [e for path in events_paths for e in read_file(path)]
        decisions = read_file(decisions_path) if decisions_path else []
    except OSError as exc:
        raise click.FileError(exc.filename or "", hint=exc.strerror or str(exc)) from None
    if not events_paths:
        events = _reach_kafka(
            settings, read_topic(settings.kafka_bootstrap, settings.events_topic, security=settings.kafka_security)
        )
    if not decisions_path:
        decisions = _reach_kafka(
            settings, read_topic(settings.kafka_bootstrap, settings.decisions_topic, security=settings.kafka_security)
        )
    result = report(events, decisions, scheduler_name)
    click.echo(result.json() if as_json else result.text())


@main.command()
@click.option("--kubeconfig", type=click.Path(dir_okay=False, path_type=Path),
              help="Kubeconfig (default: $KUBECONFIG or ~/.kube/config; in a pod: in-cluster config).")  # fmt: skip
@click.option("--context", help="Kubeconfig context (default: its current context).")
@click.option("--cluster", required=True, help="Cluster name: the lines' `cluster` and their Kafka key.")
@click.option("--topic", help="Events topic (default: $SCHEDSTREAM_EVENTS_TOPIC or cluster-events).")
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Progress file for resuming (default: $SCHEDSTREAM_DATA_DIR/watch-CLUSTER.json).")  # fmt: skip
@click.option("--queue-size", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Lines held between the API server and Kafka at most (backpressure).")  # fmt: skip
@click.option("--watch-timeout", default=300, show_default=True, type=click.IntRange(min=1),
              help="Seconds each watch request lasts before it is renewed (a BOOKMARK comes just before).")  # fmt: skip
def watch(
    *,
    kubeconfig: Path | None,
    context: str | None,
    cluster: str,
    topic: str | None,
    state_path: Path | None,
    queue_size: int,
    watch_timeout: int,
) -> None:
    """List+watch a Kubernetes cluster into the events topic (CONTRACT section 1 lines)."""
    from services.kube.client import KubeError, connect
    from services.kube.state import StateError
    from services.kube.watch import WatchOptions, run_watch

    settings = Settings.from_env()
    configure_logging(settings)
    options = WatchOptions(
        cluster=cluster,
        topic=topic or settings.events_topic,
        bootstrap=settings.kafka_bootstrap,
        partitions=settings.partitions,
        state_path=state_path or settings.data_dir / f"watch-{cluster}.json",
        queue_size=queue_size,
        watch_timeout=watch_timeout,
        security=settings.kafka_security,
    )

    async def run() -> None:
        async with connect(kubeconfig, context) as kube:
            await run_watch(kube, options)

    try:
        _reach_kafka(settings, run())
    except (KubeError, StateError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.argument("trace", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["native", "openb", "dlrm", "swf"]), default="native", show_default=True
)
@click.option(
    "--nodes",
    "nodes_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Node list: the openb node CSV for --format openb, native node lines otherwise.",
)
@config_option
@click.option("--period", default=1.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds of simulated time between SCHEDULE markers.")  # fmt: skip
@click.option("--arrival-scale", default=1.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Arrivals X times as frequent (submits compressed toward the first): more load.")  # fmt: skip
@click.option("--scheduler", type=click.Choice(["volcano", "kueue"]), default="volcano", show_default=True,
              help="Jobs that name no scheduler become Volcano PodGroups or Kueue Workloads.")  # fmt: skip
@click.option("--estimates", type=click.Choice(["none", "trace", "exact"]), default="none", show_default=True,
              help="Runtime estimates annotated on the jobs: the trace's (SWF requested time) or exact.")  # fmt: skip
@click.option("--baseline-estimates", type=click.Choice(["same", "trace", "exact"]), default="same",
              show_default=True, help="Runtimes EASY plans with: those --estimates gives (exact when none), "
              "the trace's (SWF requested time), or exact.")  # fmt: skip
@click.option(
    "--queues",
    "queues_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Kueue flavors, cohorts, ClusterQueues and LocalQueues (YAML); default: one ClusterQueue per queue.",
)
@click.option(
    "--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Run directory."
)
def simulate(
    trace: Path,
    *,
    fmt: str,
    nodes_path: Path | None,
    config_path: Path | None,
    period: float,
    arrival_scale: float,
    scheduler: str,
    estimates: str,
    baseline_estimates: str,
    queues_path: Path | None,
    out_dir: Path,
) -> None:
    """Run TRACE on a simulated cluster under the scheduler and the FCFS, EASY and greedy baselines."""
    from services.output import atomic_directory
    from services.progress import bar
    from services.simulate import kueue_quota
    from services.simulate.metrics import table
    from services.simulate.run import load
    from services.simulate.run import simulate as run_simulation
    from services.traces.model import TraceError, with_estimates

    # A batch run: no marker waits on a young pass, so rarer, longer ones (most of a cycle's
    # objects are gone by then): 3% less CPU on HPC2N's first 18,000 jobs at 1.75x.
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    config = load_config(config_path)
    try:
        given, nodes = load(trace, fmt, nodes_path, arrival_scale=arrival_scale, estimates="trace")  # type: ignore[arg-type]
        jobs = with_estimates(given, estimates)
        told = None if baseline_estimates == "same" else with_estimates(given, baseline_estimates)
        baselines = None if told is None else (baseline_estimates, told)
        kueue_objects = kueue_quota.read(queues_path) if queues_path is not None else None
        with atomic_directory(out_dir) as work, bar("simulate: jobs arrived", len(jobs.jobs)) as progress:
            result = run_simulation(
                jobs,
                nodes,
                config,
                work,
                period=period,
                scheduler=scheduler,
                kueue_objects=kueue_objects,
                progress=progress,
                baselines=baselines,
            )
    except TraceError as exc:
        raise click.ClickException(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{trace} (or its --nodes/--queues file) is not a text trace: byte {exc.start} is not UTF-8"
        ) from None
    except OSError as exc:
        raise click.FileError(exc.filename or str(out_dir), hint=exc.strerror or str(exc)) from None
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(result.decisions.items())) or "none"
    click.echo(table(result.metrics))
    click.echo(f"{result.lines} events, decisions: {kinds}; written to {out_dir}", err=True)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["table", "mermaid", "dot"]), default="table", show_default=True)
@click.option("--kind", "kinds", multiple=True, help="Only this kind's machine (repeatable; default: all).")
def machines(fmt: str, kinds: tuple[str, ...]) -> None:
    """Print each object kind's lifecycle machine as a table or a Mermaid/Graphviz diagram."""
    from domain.lifecycle.catalog import MACHINES
    from services.diagrams import FORMATS

    unknown = [kind for kind in kinds if kind not in MACHINES]
    if unknown:
        raise click.BadParameter(
            f"no machine for {', '.join(unknown)} (known: {', '.join(MACHINES)})", param_hint="--kind"
        )
    chosen = [MACHINES[kind].lifecycle for kind in (kinds or MACHINES)]
    click.echo("\n\n".join(FORMATS[fmt](lifecycle) for lifecycle in chosen))


@main.command()
@click.argument("kind", type=click.Choice(sorted(EXPLAIN_KINDS), case_sensitive=False))
@click.argument("ref", metavar="NAMESPACE/NAME")
@click.option("--db", "db_url", help="Read the store at this URL (what the worker recorded).")
@click.option("--events", "events", multiple=True, help="Read these event files instead ('-' is stdin; repeatable).")
@click.option("--at", "at", help="Stop at this seq, or at this time (the last SCHEDULE marker up to it).")
@click.option("--cluster", help="The cluster, when the object appears in several.")
@click.option("--json", "as_json", is_flag=True, help="The explanation as JSON.")
@config_option
def explain(
    kind: str,
    ref: str,
    *,
    db_url: str | None,
    events: tuple[str, ...],
    at: str | None,
    cluster: str | None,
    as_json: bool,
    config_path: Path | None,
) -> None:
    """Why an object is where it is: status, reason, what it waits for, and its history."""
    from services.explain.command import run_explain

    if bool(db_url) == bool(events):
        raise click.UsageError("give either --db or --events")
    config = load_config(config_path)
    click.echo(
        run_explain(kind, ref, db_url=db_url, events=events, at=at, cluster=cluster, config=config, as_json=as_json)
    )


@main.command("diff")
@click.argument("a_path", metavar="A.jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b_path", metavar="B.jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="The differing objects as JSON.")
def diff_command(a_path: Path, b_path: Path, as_json: bool) -> None:
    """Per object, where two decision streams differ, with both reasons."""
    import msgspec

    from services.diff import DecisionFileError, diff, read_decisions, render

    try:
        a, b = read_decisions(a_path), read_decisions(b_path)
    except DecisionFileError as exc:
        raise click.ClickException(str(exc)) from None
    diffs = diff(a, b)
    if as_json:
        click.echo(msgspec.json.encode([d.to_dict() for d in diffs]))
    else:
        click.echo(render(diffs, str(a_path), str(b_path), (len(a), len(b))))


@main.group()
def db() -> None:
    """Database schema commands."""


@db.command()
@click.option("--db", "db_url", help="Store URL (default: $SCHEDSTREAM_DB_URL or sqlite:///schedstream.db).")
def upgrade(db_url: str | None) -> None:
    """Create or migrate the schema to the newest revision."""
    from services.store.store import Store

    url = db_url or Settings.from_env().db_url
    Store(url).upgrade()
    click.echo(f"schema is current at {url.split('@')[-1]}", err=True)


if __name__ == "__main__":
    sys.exit(main())
