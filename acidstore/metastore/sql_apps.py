"""Idempotent writes in the SQL metastores: application ids and their committed versions.

Delta's ``txn`` action, kept as two tables: ``txn_app_versions`` holds what an open
transaction means to commit (recorded by its writer, so a commit made by another process,
Spark's commit worker, finds it), ``app_versions`` the newest committed version of each
(table, application id). The commit checks the first against the second and moves it over
inside the commit's own metastore transaction, under the ``commit`` lock that orders every
commit: of two transactions with one application id and version, exactly one can commit.
Functions take the caller's ``Session`` and never commit, as in ``sql_txn``.
"""

from __future__ import annotations

from dataclasses import dataclass

from acidstore.errors import ConcurrentTransactionError, InvalidInputError, TableNotFoundError
from acidstore.metastore.records import AppVersion
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_schema import from_micros

__all__ = ["PendingApp", "app_conflict", "app_versions", "pending_apps", "publish_apps",
           "record_app_version"]


@dataclass(frozen=True)
class PendingApp:
    """A version a transaction means to commit, and what the table holds for it now."""

    table_id: int
    table: str
    app_id: str
    version: int
    #: the committed version of the application on the table (None: never written) and the
    #: transaction that committed it
    committed: int | None
    committed_by: int | None


def record_app_version(conn: Session, txn_id: int, table: tuple[int, str], app_id: str,
                       version: int) -> None:
    """Note that ``txn_id`` writes ``version`` of ``app_id`` on the table (the txn is open:
    the caller checked). The same version again is a no-op; another one is refused, since a
    commit records one version per application and table."""
    table_id, name = table
    row = conn.execute("SELECT version FROM txn_app_versions WHERE txn_id = ? AND "
                       "table_id = ? AND app_id = ?", (txn_id, table_id, app_id)).fetchone()
    if row is None:
        conn.execute("INSERT INTO txn_app_versions (txn_id, table_id, app_id, version) "
                     "VALUES (?, ?, ?, ?)", (txn_id, table_id, app_id, version))
    elif int(row[0]) != version:
        raise InvalidInputError(
            f"txnid:{txn_id} already writes version {row[0]} of app_id {app_id!r} on "
            f"{name}; one transaction commits one version per application and table, "
            f"not also {version}")


def pending_apps(conn: Session, txn_id: int) -> list[PendingApp]:
    """The versions ``txn_id`` recorded, each with the table's committed one."""
    pending = []
    for row in conn.execute(
            "SELECT p.table_id, p.app_id, p.version, t.db_name, t.name, a.version AS "
            "committed, a.txn_id AS committed_by FROM txn_app_versions p "
            "LEFT JOIN tables t ON t.table_id = p.table_id LEFT JOIN app_versions a "
            "ON a.table_id = p.table_id AND a.app_id = p.app_id WHERE p.txn_id = ? "
            "ORDER BY p.table_id, p.app_id", (txn_id,)).fetchall():
        if row["name"] is None:
            raise TableNotFoundError(f"the table txnid:{txn_id} wrote app_id "
                                     f"{row['app_id']!r} to was dropped")
        pending.append(PendingApp(
            int(row["table_id"]), f"{row['db_name']}.{row['name']}", row["app_id"],
            int(row["version"]), None if row["committed"] is None else int(row["committed"]),
            None if row["committed_by"] is None else int(row["committed_by"])))
    return pending


def app_conflict(txn_id: int, pending: list[PendingApp]) -> ConcurrentTransactionError | None:
    """The error for the first application whose version another transaction committed at
    or above ours after our writer checked it (it found none so high, or it would have
    skipped): the two raced, the other won."""
    for app in pending:
        if app.committed is not None and app.committed >= app.version:
            return ConcurrentTransactionError(
                f"Aborting [txnid:{txn_id}]: [txnid:{app.committed_by}] committed version "
                f"{app.committed} of app_id {app.app_id!r} on {app.table} first, and this "
                f"transaction writes version {app.version}; nothing of txnid:{txn_id} was "
                "committed (a retry of this version is skipped)",
                txn_id=txn_id, other_txn_id=app.committed_by, table=app.table,
                app_id=app.app_id)
    return None


def publish_apps(conn: Session, txn_id: int, now: int, pending: list[PendingApp]) -> None:
    """Record the versions as committed by ``txn_id`` (inside its commit)."""
    conn.executemany(
        "INSERT INTO app_versions (table_id, app_id, version, txn_id, commit_time) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (table_id, app_id) DO UPDATE SET "
        "version = excluded.version, txn_id = excluded.txn_id, "
        "commit_time = excluded.commit_time",
        [(app.table_id, app.app_id, app.version, txn_id, now) for app in pending])


def app_versions(conn: Session, table_id: int, table: str, app_id: str | None
                 ) -> list[AppVersion]:
    """The committed versions on the table (of ``app_id`` only, when given)."""
    query = "SELECT * FROM app_versions WHERE table_id = ?"
    parameters: tuple[object, ...] = (table_id,)
    if app_id is not None:
        query, parameters = query + " AND app_id = ?", (table_id, app_id)
    return [AppVersion(table, row["app_id"], int(row["version"]), int(row["txn_id"]),
                       from_micros(row["commit_time"]))
            for row in conn.execute(query + " ORDER BY app_id", parameters)]
