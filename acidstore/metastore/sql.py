"""The seam between the SQL metastore logic and a database driver: a session and its dialect.

The transactional rules (``sql_txn``), the queue (``sql_queue``), the leases (``sql_leases``)
and the schema (``sql_schema``) are written once, as SQL with ``?`` placeholders, against a
``Session``: SQLite (stdlib ``sqlite3``) and PostgreSQL (psycopg 3) each supply one. Nearly all
of that SQL is portable (``INSERT ... ON CONFLICT``, ``RETURNING``); the few places where the
engines really differ are named by the ``Dialect``, so a reader sees every difference here.

A row is indexable by position and by column name (``sqlite3.Row`` is; the PostgreSQL session
builds ``NamedRow``), which is all the shared code relies on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["POSTGRES", "SQLITE", "Cursor", "Dialect", "NamedRow", "Session"]


class Cursor(Protocol):
    """What the shared code uses of a driver's cursor."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


@dataclass(frozen=True)
class Dialect:
    """What differs between the engines, kept to a handful of SQL fragments.

    - ``row_lock``: appended to the ``SELECT`` of a transaction's own row before it changes
      anything of that transaction. PostgreSQL runs such calls concurrently and needs the row
      lock so that a commit, an abort and a heartbeat of one txn queue up behind each other;
      SQLite holds the database write lock already, and has no ``FOR UPDATE``.
    - ``skip_locked``: appended to a ``SELECT`` of rows that another transaction may hold
      and that this one may leave alone (expired reader leases another lease call is
      deleting): PostgreSQL's ``FOR UPDATE SKIP LOCKED`` never waits for their holder; SQLite
      needs nothing, since one write at a time holds its (lease) database.
    - ``forced_join`` / ``hint`` / ``indexed_by``: SQLite's planner must be told the join
      order (``CROSS JOIN``), kept off some indexes (unary ``+``) on the conflict check's hot
      query, and sent to a partial index it would not pick without statistics (``INDEXED
      BY``); PostgreSQL plans these well by itself and has no unary ``+`` on text.
    - ``in_list``: a list of values as *one* bound parameter (never SQL built from values):
      ``json_each`` in SQLite, an array with ``= ANY`` in PostgreSQL.
    - ``table_exists``: a query with one row if the table named by its one parameter exists
      (in the store's schema), none otherwise; ``column_exists`` the same for a column, given
      its table and its name.
    - ``server_sequences``: txn ids and commit numbers come from the server's sequences
      (PostgreSQL, where opens and commits run concurrently: ``postgres_functions``), not from
      the ``sequences`` rows bumped under the database's write lock (SQLite). Snapshots then
      list ids handed out whose txn is not visible yet as open (``acid_snapshot_v9``).
    - ``server_clock``: an expression of the database server's current time in microseconds
      since the epoch, where the server has a clock every client shares (PostgreSQL: one
      server, clients on many machines); empty where the client's clock is the store's
      (SQLite: one machine). Commit times come from it (``sql_txn.commit_time``).
    """

    name: str
    row_lock: str
    skip_locked: str
    forced_join: str
    hint_prefix: str
    array_parameters: bool
    table_exists: str
    column_exists: str
    server_sequences: bool
    server_clock: str = ""

    def hint(self, column: str) -> str:
        return f"{self.hint_prefix}{column}"

    def indexed_by(self, index: str) -> str:
        """Appended to a table name in ``FROM``: read it through ``index`` (SQLite only)."""
        return f" INDEXED BY {index}" if self.hint_prefix else ""

    def in_list(self, column: str) -> str:
        """``column`` is one of the values of a list bound with ``list_parameter``."""
        if self.array_parameters:
            return f"{column} = ANY(?)"
        return f"{column} IN (SELECT value FROM json_each(?))"

    def list_parameter(self, values: Iterable[int | str]) -> object:
        items = list(values)
        return items if self.array_parameters else json.dumps(items)


SQLITE = Dialect("sqlite", row_lock="", skip_locked="", forced_join="CROSS JOIN",
                 hint_prefix="+", array_parameters=False,
                 table_exists="SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                 column_exists="SELECT 1 FROM pragma_table_info(?) WHERE name = ?",
                 server_sequences=False)
POSTGRES = Dialect("postgresql", row_lock=" FOR UPDATE", skip_locked=" FOR UPDATE SKIP LOCKED",
                   forced_join="JOIN", hint_prefix="",
                   array_parameters=True,
                   table_exists="SELECT 1 FROM pg_catalog.pg_tables "
                   "WHERE schemaname = current_schema() AND tablename = ?",
                   column_exists="SELECT 1 FROM information_schema.columns WHERE "
                   "table_schema = current_schema() AND table_name = ? AND column_name = ?",
                   server_sequences=True,
                   server_clock="(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint")


class Session(Protocol):
    """One connection inside one database transaction, as the shared SQL code sees it.

    ``execute`` takes ``?`` placeholders and a sequence of parameters (values are always bound,
    never formatted into the SQL)."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> object: ...


class NamedRow(tuple[Any, ...]):
    """A result row readable by position and by column name, like ``sqlite3.Row``."""

    _names: dict[str, int]

    def __new__(cls, names: dict[str, int], values: Sequence[Any]) -> NamedRow:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)
