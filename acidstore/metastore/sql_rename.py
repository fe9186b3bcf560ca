"""Renaming a table in the SQL metastores (``SqlCatalog.rename_table``): one metastore
transaction that moves every stored copy of the name, or refuses and changes nothing.

Rows are keyed by ``table_id``, so a renamed table keeps its write ids, history, partitions,
original files, compaction outputs, application versions and reader leases untouched. The
name is also stored beside the id where readers of a row need it without a join, and each of
those copies must move with it: ``components.table_name`` above all, since a commit's
conflict check matches its own components with the committed ones by that name (a stale one
would let a conflicting write through), ``compactions.table_name`` (the worker and the cleaner
open the table by it), ``locks`` (the cleaner spares the partitions a writer holds by name)
and ``txn_write_ids.table_name`` (what ``commit_info`` reports). The write-id lists kept as
text (``compactions.compactor_write_ids``, the leases' ``write_ids``) keep the name they were
taken under: only their ids and ranges are ever read back.

A rename is refused (``TableBusyError``) while a transaction that may still commit writes
the table: one holding a write id on it, or compacting it. Its components name the old name,
and its files the table it planned against; letting it commit under a name that no longer
exists, or fail half-way, is what Hive avoids with the exclusive lock its ``ALTER TABLE ...
RENAME`` waits for. The rename also bumps ``metadata_version``, so that a writer that slipped
in beside it anyway (PostgreSQL's write-id allocation reads the catalogue without a lock)
fails its commit with ``MetadataChangedError`` instead of publishing under the old name.

A renamed table keeps its location (as Iceberg's do; a move is not atomic on object storage
and would pull the files from under running readers), so the directory its old name would
get may be taken: ``refuse_shared_location`` keeps any two tables from ever sharing one, and
the warehouse picks another for a new table (``engine.catalog``).
"""

from __future__ import annotations

from typing import Any

from acidstore.errors import LocationNotEmptyError, TableBusyError, TableExistsError
from acidstore.metastore.records import NewTable
from acidstore.metastore.sql import Session

__all__ = ["owner_of", "refuse_shared_location", "rename_row"]

#: every stored copy of a table's name outside ``tables``: the statement that moves it, and
#: the form of the new name it takes ("full": ``db.name``; "parts": ``db``, ``name``)
_COPIES = (
    ("UPDATE txn_write_ids SET table_name = ? WHERE table_id = ?", "full"),
    ("UPDATE components SET table_name = ? WHERE table_id = ?", "full"),
    ("UPDATE compactions SET table_name = ? WHERE table_id = ?", "full"),
    ("UPDATE locks SET db_name = ?, table_name = ? WHERE table_id = ?", "parts"),
)


def rename_row(conn: Session, row: Any, database: str, name: str, now: int) -> None:
    """Give the table of catalogue row ``row`` the name ``database.name`` and bump its
    metadata version; the caller holds the ``catalog`` and ``commit`` locks."""
    table_id = row["table_id"]
    old, new = f"{row['db_name']}.{row['name']}", f"{database}.{name}"
    if conn.execute("SELECT 1 FROM tables WHERE db_name = ? AND name = ?",
                    (database, name)).fetchone() is not None:
        same = " (it already has that name)" if old == new else ""
        raise TableExistsError(f"cannot rename table {old} to {new}: table {new} already "
                               f"exists{same}; choose another name, or drop {new} first")
    _wait_for_writers(conn, table_id)
    busy = [int(r[0]) for r in conn.execute(
        "SELECT w.txn_id FROM txn_write_ids w JOIN txns t ON t.txn_id = w.txn_id "
        "WHERE w.table_id = ? AND t.state = 'open' UNION "
        "SELECT c.txn_id FROM compactions c JOIN txns t ON t.txn_id = c.txn_id "
        "WHERE c.table_id = ? AND t.state = 'open' ORDER BY 1", (table_id, table_id))]
    if busy:
        shown = ", ".join(f"txnid:{t}" for t in busy)
        raise TableBusyError(
            f"cannot rename table {old} to {new}: open transactions write it ({shown}), and "
            "would commit under a name that no longer exists. Nothing was changed; rename "
            "it once they have committed or aborted (acidstore show transactions; acidstore "
            "abort TXNID ends one)", table=old, txn_ids=tuple(busy))
    conn.execute("INSERT INTO databases (name, created) VALUES (?, ?) ON CONFLICT DO NOTHING",
                 (database, now))
    conn.execute("UPDATE tables SET db_name = ?, name = ?, "
                 "metadata_version = metadata_version + 1 WHERE table_id = ?",
                 (database, name, table_id))
    for statement, names in _COPIES:
        given = (new,) if names == "full" else (database, name)
        conn.execute(statement, (*given, table_id))


def _wait_for_writers(conn: Session, table_id: int) -> None:
    """On PostgreSQL, take the rows a write-id allocation and a commit of the table hold
    until they end (its counter row, its catalogue row), so that the busy check below sees
    every allocation and commit begun before this rename: an allocation in flight has
    written its row, and once it commits the check reads it (READ COMMITTED). SQLite holds
    the whole database already."""
    if not conn.dialect.row_lock:
        return
    conn.execute("SELECT table_id FROM tables WHERE table_id = ?" + conn.dialect.row_lock,
                 (table_id,)).fetchall()
    # a table never written has no counter row yet: insert it (next value 1: no write id
    # handed out), so that a first allocation in flight is waited for too
    conn.execute("INSERT INTO next_write_id (table_id, next_value) VALUES (?, 1) "
                 "ON CONFLICT (table_id) DO UPDATE SET next_value = next_write_id.next_value",
                 (table_id,))


def owner_of(conn: Session, location: str) -> str | None:
    """The full name of the table whose stored location is ``location`` (as stored), if any."""
    row = conn.execute("SELECT db_name, name FROM tables WHERE location = ?",
                       (location,)).fetchone()
    return None if row is None else f"{row[0]}.{row[1]}"


def refuse_shared_location(conn: Session, info: NewTable) -> None:
    """Refuse a new table the location of another (one renamed away from this name keeps its
    directory): the two would read each other's files as their own rows, and dropping one
    would delete the other's."""
    owner = owner_of(conn, info.location)
    if owner is not None:
        raise LocationNotEmptyError(
            f"cannot create table {info.full_name} at {info.location}: that is the location "
            f"of table {owner}, and two tables never share a directory; give the new table "
            "another location", path=info.location)
