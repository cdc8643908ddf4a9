"""The ``schedstream`` command line (CONTRACT section 3): replay, worker, produce, simulate, machines, db upgrade."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import click
import yaml

from domain.scheduler.config import ConfigError, SchedulerConfig, from_mapping
from services import logging as log
from services.config import Settings

T = TypeVar("T")


def load_config(path: Path | None) -> SchedulerConfig:
    if path is None:
        return SchedulerConfig()
    try:
        data = yaml.safe_load(path.read_text())
        return from_mapping(data)
    except (ConfigError, yaml.YAMLError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--config") from None


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Scheduler configuration (YAML, volcano-scheduler.conf shape).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """schedstream: an event-sourced batch scheduler for Kubernetes-style clusters."""


@main.command()
@click.argument("events", nargs=-1, required=True)
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False), help="Decisions file (JSONL).")
@click.option("--rejects", "rejects_path", type=click.Path(dir_okay=False), help="Rejected lines with reasons.")
@click.option("--db", "db_url", default="sqlite://", show_default=True, help="Store URL (default: in memory).")
@config_option
def replay(
    events: tuple[str, ...], out_path: str, rejects_path: str | None, db_url: str, config_path: Path | None
) -> None:
    """Run the scheduler over EVENTS files ('-' is stdin) and write its decisions."""
    from services.inputs import read_records
    from services.progress import bar
    from services.replay import StoreNotEmpty, replay_records

    settings = Settings.from_env()
    log.configure(settings.log_level, settings.log_format)
    logger = log.get("schedstream.replay")
    config = load_config(config_path)
    try:
        records = read_records(events)  # all input first: a bad path leaves --out untouched
    except OSError as exc:
        raise click.FileError(exc.filename or events[0], hint=exc.strerror or str(exc)) from None
    rejects: BinaryIO | None = None
    try:
        with open(out_path, "wb") as out:
            if rejects_path:
                rejects = open(rejects_path, "wb")  # noqa: SIM115 - closed below
            with bar("replay", len(records)) as progress:
                summary = replay_records(
                    records, out, config=config, rejects_out=rejects, db_url=db_url, progress=progress
                )
    except OSError as exc:
        raise click.FileError(getattr(exc, "filename", None) or out_path, hint=exc.strerror or str(exc)) from None
    except StoreNotEmpty as exc:
        raise click.UsageError(str(exc)) from None
    finally:
        if rejects is not None:
            rejects.close()
    for reject in summary.rejects:
        logger.warning("rejected", position=reject.position, reason=reject.reason)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(summary.decisions.items())) or "none"
    click.echo(f"{summary.events} events, {len(summary.rejects)} rejected; decisions: {kinds}", err=True)


@main.command()
@config_option
@click.option("--db", "db_url", help="Store URL (default: $SCHEDSTREAM_DB_URL or sqlite:///schedstream.db).")
@click.option("--exit-when-idle", type=float, help="Stop cleanly after this many seconds without input.")
def worker(config_path: Path | None, db_url: str | None, exit_when_idle: float | None) -> None:
    """Run the streaming service on Kafka (cluster-events -> scheduler-decisions)."""
    import faust

    from services.store.store import Store
    from services.stream.app import create_app
    from services.stream.topics import ensure_topics

    settings = Settings.from_env()
    if db_url:
        settings = replace(settings, db_url=db_url)
    log.configure(settings.log_level, settings.log_format)
    config = load_config(config_path)
    Store(settings.db_url).upgrade()
    topics = [settings.events_topic, settings.dlq_topic, settings.decisions_topic]
    _reach_kafka(settings, ensure_topics(settings.kafka_bootstrap, topics, settings.partitions))
    asyncio.set_event_loop(asyncio.new_event_loop())
    app = create_app(settings, config, exit_when_idle=exit_when_idle)
    # Faust's own log stays at WARNING unless we debug; our structlog lines say what happens.
    faust_level = "DEBUG" if settings.log_level == "debug" else "WARNING"
    faust.Worker(app, loglevel=faust_level, quiet=True).execute_from_commandline()


def _reach_kafka(settings: Settings, work: Coroutine[Any, Any, T]) -> T:
    """Run ``work``; a broker that cannot be reached is a clear error, not a traceback."""
    from aiokafka.errors import KafkaConnectionError

    try:
        return asyncio.run(work)
    except KafkaConnectionError as exc:
        raise click.ClickException(
            f"cannot reach Kafka at {settings.kafka_bootstrap} ({exc}); start one (make run does) "
            "or set SCHEDSTREAM_KAFKA_BOOTSTRAP"
        ) from None


@main.command()
@click.argument("files", nargs=-1, required=True)
@click.option("--topic", help="Events topic (default: $SCHEDSTREAM_EVENTS_TOPIC or cluster-events).")
def produce(files: tuple[str, ...], topic: str | None) -> None:
    """Feed event FILES ('-' is stdin) into the events topic, one message per line."""
    from services.inputs import read_records
    from services.produce import produce as run_produce

    settings = Settings.from_env()
    try:
        records = read_records(files)
    except OSError as exc:
        raise click.FileError(exc.filename or files[0], hint=exc.strerror) from None
    sent = _reach_kafka(
        settings,
        run_produce(
            records,
            bootstrap=settings.kafka_bootstrap,
            topic=topic or settings.events_topic,
            partitions=settings.partitions,
        ),
    )
    click.echo(f"produced {sent} messages to {topic or settings.events_topic}", err=True)


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
    queues_path: Path | None,
    out_dir: Path,
) -> None:
    """Run TRACE on a simulated cluster under the scheduler and the FCFS, EASY and greedy baselines."""
    from services.progress import bar
    from services.simulate import quota
    from services.simulate.metrics import table
    from services.simulate.run import load
    from services.simulate.run import simulate as run_simulation
    from services.traces.model import TraceError

    config = load_config(config_path)
    try:
        jobs, nodes = load(trace, fmt, nodes_path, arrival_scale=arrival_scale)  # type: ignore[arg-type]
        kueue_objects = quota.read(queues_path) if queues_path is not None else None
        with bar("simulate: jobs arrived", len(jobs.jobs)) as progress:
            result = run_simulation(
                jobs,
                nodes,
                config,
                out_dir,
                period=period,
                scheduler=scheduler,
                kueue_objects=kueue_objects,
                progress=progress,
            )
    except TraceError as exc:
        raise click.ClickException(str(exc)) from None
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
