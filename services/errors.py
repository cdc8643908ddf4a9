"""User errors of the command line: one line on standard error, never a traceback (CONTRACT
section 3). Exit status 2 for usage (arguments, options, environment values), 1 for I/O
(files, the database, the broker).

``Group`` is the ``schedstream`` group: every command it makes gets ``--version`` and turns the
errors a user can cause (a malformed setting, a bad or unreachable ``--db``, a file that cannot
be read or written) into click's errors, and the group prints any click error as one line.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import click
from alembic.util.exc import CommandError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from services.config import DEFAULT_DB_URL, SettingsError

PROG = "schedstream"
# click 8.2 and later raise this for a group called without a command (8.1 prints the help itself).
NO_ARGS_IS_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", type(None))


def one_line(text: str) -> str:
    """Several lines of a message (a driver's, say) as one."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _db_of(ctx: click.Context) -> str:
    url = ctx.params.get("db_url") or os.environ.get("SCHEDSTREAM_DB_URL") or DEFAULT_DB_URL
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return str(url)


def _translated(ctx: click.Context, exc: Exception) -> click.ClickException | None:
    """The click error a user-caused exception stands for, or None for a bug."""
    if isinstance(exc, SettingsError):
        return click.UsageError(str(exc), ctx)
    if isinstance(exc, ArgumentError):
        return click.BadParameter(one_line(str(exc)), ctx, param_hint="--db")
    if isinstance(exc, DBAPIError):
        return click.ClickException(f"cannot use the database {_db_of(ctx)}: {one_line(str(exc.orig))}")
    if isinstance(exc, CommandError):
        return click.ClickException(f"the database {_db_of(ctx)} has a schema this version cannot use: {exc}")
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else ""
        return click.ClickException(f"{where}: {exc.strerror or exc}" if where else str(exc))
    return None


class Command(click.Command):
    """A command with ``--version`` whose user errors are click errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        click.version_option(package_name=PROG, prog_name=PROG)(self)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if getattr(exc, "ctx", None) is None:
                exc.ctx = ctx  # type: ignore[attr-defined]  # the message names the command
            raise
        except Exception as exc:
            error = _translated(ctx, exc)
            if error is None:
                raise
            error.ctx = ctx  # type: ignore[attr-defined]
            raise error from None


class Group(click.Group):
    """The ``schedstream`` group: its commands are ``Command``s, its subgroups ``Group``s."""

    command_class = Command
    group_class = type

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        click.version_option(package_name=PROG, prog_name=PROG)(self)

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs.pop("standalone_mode", None)
        try:
            return super().main(args, *rest, standalone_mode=False, **kwargs)
        except click.ClickException as exc:
            _exit_with(exc)
        except click.Abort:
            click.echo(f"{PROG}: aborted", err=True)
            sys.exit(1)


class _BootstrapFailures(logging.Filter):
    """Drops aiokafka's "Unable connect to HOST:PORT" records: the one-line error that follows
    (or the retry that succeeds) says all they say."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable connect to")


@contextmanager
def bootstrap_quietly() -> Iterator[None]:
    """While a command first reaches the broker, keep its connection failures off stderr."""
    logger, quiet = logging.getLogger("aiokafka"), _BootstrapFailures()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _exit_with(exc: click.ClickException) -> NoReturn:
    if isinstance(exc, NO_ARGS_IS_HELP):  # a group called without a command: its help, as click shows it
        exc.show()
        sys.exit(exc.exit_code)
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if isinstance(ctx, click.Context) else PROG
    message = one_line(exc.format_message())
    if isinstance(exc, click.UsageError) and isinstance(ctx, click.Context):
        message += f" (see '{where} --help')"
    click.echo(f"{where}: error: {message}", err=True)
    sys.exit(exc.exit_code)
