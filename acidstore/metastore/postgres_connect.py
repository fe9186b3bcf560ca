"""psycopg 3 at the edge of the PostgreSQL metastore: connecting, and its errors as ours.

Kept apart from ``postgres`` so the driver's names (connections, SQLSTATEs, URL parsing) sit in
one small module. psycopg is an optional dependency (``pip install acidstore[postgresql]``): it
is imported here only, and a missing driver is reported as such, not as an ImportError deep in
a call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from acidstore.errors import (
    AcidStoreError,
    MetastoreConnectionError,
    MetastoreError,
    import_optional,
)
from acidstore.metastore.sql import NamedRow

if TYPE_CHECKING:
    import psycopg

    Connection = psycopg.Connection[NamedRow]
else:
    Connection = Any

__all__ = ["Connection", "connect", "display_url", "in_transaction", "is_retryable",
           "psycopg_error"]

#: serialization_failure, deadlock_detected: another client won a race; the call is retried
_RETRYABLE = frozenset({"40001", "40P01"})
#: lock_not_available (our lock_timeout), query_canceled
_BUSY = frozenset({"55P03", "57014"})
#: the server ended this backend: admin_shutdown (pg_terminate_backend, a fast shutdown),
#: crash_shutdown, cannot_connect_now
_GONE = frozenset({"57P01", "57P02", "57P03"})


def _driver() -> Any:
    return import_optional("psycopg", "acidstore[postgresql]", "a PostgreSQL metastore")


def display_url(url: str) -> str:
    """The URL without its password, for messages (``postgresql://user@host:port/db``)."""
    try:
        parts = _driver().conninfo.conninfo_to_dict(url)
    except Exception:
        return "postgresql://" + url.rsplit("@", maxsplit=1)[-1].rsplit("://", maxsplit=1)[-1]
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


def _named_rows(cursor: Any) -> Callable[[Sequence[Any]], NamedRow]:
    """Rows readable by position and by name; the first of two equal names wins, as in
    ``sqlite3.Row``."""
    names: dict[str, int] = {}
    for index, column in enumerate(cursor.description or ()):
        names.setdefault(column.name, index)
    return lambda values: NamedRow(names, values)


def connect(url: str, where: str, *, connect_timeout: float, lock_timeout: float) -> Connection:
    """An autocommit connection (the metastore issues BEGIN/COMMIT itself) whose lock waits
    end after ``lock_timeout`` seconds."""
    psycopg = _driver()
    try:
        conn = psycopg.connect(url, autocommit=True, row_factory=_named_rows,
                               connect_timeout=max(1, round(connect_timeout)),
                               application_name="acidstore")
        conn.execute("SELECT set_config('lock_timeout', %s, false)",
                     (f"{round(lock_timeout * 1000)}ms",))
    except psycopg.Error as exc:
        raise MetastoreConnectionError(
            f"cannot connect to the metastore {where}: {exc}".strip()) from exc
    result: Connection = conn
    return result


def in_transaction(conn: Connection) -> bool:
    return bool(conn.info.transaction_status != _driver().pq.TransactionStatus.IDLE)


def is_retryable(exc: BaseException) -> bool:
    return getattr(exc, "sqlstate", None) in _RETRYABLE


def connection_lost(exc: BaseException) -> bool:
    """Whether a driver error means the connection to the server is gone (it was closed,
    the server went away or terminated this backend), not that a statement failed."""
    psycopg = _driver()
    if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate is None:
        return True  # libpq's own failures: a closed socket, a connection already closed
    return sqlstate.startswith("08") or sqlstate in _GONE


def psycopg_error(exc: BaseException, where: str, *, ambiguous: bool = False
                  ) -> BaseException:
    """A driver error as the ``MetastoreError`` it means (other errors pass unchanged). A
    lost connection is a ``MetastoreConnectionError`` (nothing of the call committed, a
    retry is safe) unless the call is ``ambiguous``: it was the commit itself, whose answer
    was lost, and only the metastore can tell whether it landed."""
    if isinstance(exc, AcidStoreError) or not isinstance(exc, _driver().Error):
        return exc
    sqlstate = getattr(exc, "sqlstate", None)
    message = str(exc).strip() or type(exc).__name__
    if connection_lost(exc):
        if ambiguous:
            return MetastoreError(f"lost the connection to the metastore {where} while "
                                  f"committing: {message}")
        return MetastoreConnectionError(
            f"lost the connection to the metastore {where} ({message}): nothing of the call "
            "was committed, and repeating the whole write is safe")
    if sqlstate in _BUSY:
        return MetastoreError(f"metastore {where} is busy: {message}")
    if sqlstate in _RETRYABLE:
        return MetastoreError(f"metastore {where}: gave up after repeated conflicts with other "
                              f"clients: {message}")
    return MetastoreError(f"metastore {where} failed: {message}")
