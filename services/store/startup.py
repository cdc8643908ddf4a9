"""Start-up against a database that may not be up yet (a container started beside the worker,
PostgreSQL restarting): retry with backoff for a bounded time, then one clear error."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import InterfaceError, OperationalError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from services import logging as log
from services.store.store import Store

UNREACHABLE = (OperationalError, InterfaceError)
logger = log.get("schedstream.store")


class DatabaseUnreachable(RuntimeError):
    """The database did not answer within the allowed time; the message is one line."""


def _where(url: str) -> str:
    parsed = make_url(url)
    return parsed.database or url if parsed.get_backend_name() == "sqlite" else f"{parsed.host}:{parsed.port or ''}"


def _first_line(exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc
    return (str(cause).strip().splitlines() or [type(cause).__name__])[0]


def upgrade_when_reachable(url: str, wait: float) -> Store:
    """The store at ``url`` with its schema upgraded, retrying for up to ``wait`` seconds while
    the database cannot be reached; raises DatabaseUnreachable after that."""
    store = Store(url)

    def note(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        logger.warning(
            "database not reachable yet, retrying",
            at=_where(url),
            attempt=state.attempt_number,
            error=_first_line(error) if error else "",
        )

    retrying = Retrying(
        retry=retry_if_exception_type(UNREACHABLE),
        stop=stop_after_delay(wait),
        wait=wait_exponential(multiplier=0.2, max=5),
        before_sleep=note,
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                store.upgrade()
    except UNREACHABLE as exc:
        store.close()
        raise DatabaseUnreachable(
            f"cannot reach the database at {_where(url)} after {wait:g} s ({_first_line(exc)}); "
            "start it or set SCHEDSTREAM_DB_URL (SCHEDSTREAM_DB_WAIT: how long to wait)"
        ) from None
    return store
