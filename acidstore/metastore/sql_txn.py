"""Transaction bookkeeping of the SQL metastores: snapshots, write ids, records, abort
(the commit and its conflict checks: ``sql_commit``).

Each function runs inside a metastore transaction opened by the backend (SQLite under ``BEGIN
IMMEDIATE``; PostgreSQL after taking the named locks ``sql_store`` lists per call) and takes its
``Session``; none of them commits. Keeping them apart from the connection handling keeps each
module small and lets the SQL be read next to the Hive rule it implements (spec §6.5, §12, §14).
Allocation of ids never relies on a single process: each counter is one row bumped with an
``UPDATE ... RETURNING``, which the database serializes.

Errors that must be raised *after* the surrounding transaction commits (the txn was just aborted
by the timeout reaper or by a conflict, and that abort must persist) are wrapped in
``RaiseAfterCommit``; the caller commits, then raises the wrapped error.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from acidstore.errors import (
    InvalidInputError,
    MetastoreError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
)
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore.records import WriteComponent
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_schema import decode_schema
from acidstore.metastore.validate import check_component, split_table_name

__all__ = [
    "RaiseAfterCommit",
    "Resolved",
    "abort_txn",
    "allocate_write_id",
    "build_write_id_list",
    "bucket_files_of",
    "commit_time",
    "component_of",
    "encode_bucket_files",
    "has_timed_out",
    "insert_components",
    "next_sequence",
    "peek_sequence",
    "reap_timed_out",
    "record_planned",
    "record_write",
    "require_open",
    "resolve",
    "take_snapshot",
    "unseen_txns",
]


class RaiseAfterCommit(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Carries an error whose cause (an abort) must be committed before it is raised."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


# --- sequences and the timeout reaper ---------------------------------------------------------


#: the server sequences that replace the ``sequences`` rows where the dialect has them
_SERVER_SEQUENCES = {"txn": "acid_txn_ids", "commit": "acid_commit_seqs"}


def peek_sequence(conn: Session, name: str) -> int:
    """The value ``next_sequence`` would hand out next, without consuming it (with server
    sequences: the next after every value handed out so far)."""
    if conn.dialect.server_sequences:
        return int(conn.execute(
            "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM "
            f"{_SERVER_SEQUENCES[name]}").fetchone()[0])
    row = conn.execute("SELECT next_value FROM sequences WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise MetastoreError(f"metastore sequence {name!r} is missing")
    return int(row[0])


def next_sequence(conn: Session, name: str) -> int:
    """Consume the next value of a global sequence (txn ids, commit sequence numbers).

    One statement, so the row lock it takes (PostgreSQL) or the write lock held (SQLite) makes
    the increment atomic; callers also hold the lock that orders what the number means.
    A server sequence (PostgreSQL) takes no lock at all: see ``take_snapshot`` for why its
    txn ids are still safe to hand out concurrently.
    """
    if conn.dialect.server_sequences:
        return int(conn.execute(
            f"SELECT nextval('{_SERVER_SEQUENCES[name]}')").fetchone()[0])
    row = conn.execute("UPDATE sequences SET next_value = next_value + 1 WHERE name = ? "
                       "RETURNING next_value - 1", (name,)).fetchone()
    if row is None:
        raise MetastoreError(f"metastore sequence {name!r} is missing")
    return int(row[0])


def commit_time(conn: Session, now: int) -> int:
    """The time of the commit being made, in microseconds: the store's clock, but at least
    one microsecond after the latest commit visible now, so commit times rise with commit
    order whatever the clocks of the committing clients say (``as_of=<time>`` then always
    reads a state the table had).

    The clock is the server's (``clock_timestamp()``) where the dialect has one (PostgreSQL:
    ``now``, the client's idea of the server's time, is not used), else ``now`` (SQLite: one
    machine's clock, read under the database write lock every commit holds, so the commits
    are totally ordered and each is strictly later than the one before). On PostgreSQL the
    caller holds the row locks of the txn's tables and runs at READ COMMITTED, so the
    previous commit on each of them is visible here: per table, commit times rise strictly
    with commit order. Across tables, a commit that was visible before this one began is
    earlier too; two commits on different tables running at once may come out in either
    order (neither waited for the other), and may even share a time. The latest commit time
    is one step of the partial index ``txns_commit_times`` (one lookup, however long the
    history)."""
    last = (f"(SELECT max(finished) FROM txns{conn.dialect.indexed_by('txns_commit_times')} "
            "WHERE state = 'committed')")
    clock = conn.dialect.server_clock
    if clock:
        row = conn.execute(f"SELECT greatest({clock}, coalesce({last}, 0) + 1)").fetchone()
    else:
        row = conn.execute(f"SELECT max(?, coalesce({last}, 0) + 1)", (now,)).fetchone()
    return int(row[0])


def abort_txn(conn: Session, txn_id: int, now: int, reason: str) -> None:
    """Mark an open txn aborted (which makes its write ids aborted) and release its locks.

    Only an *open* txn: on PostgreSQL a reaper may race the txn's own commit, and the
    condition, re-checked on the row's newest version, lets the commit win instead of
    turning a committed txn into an aborted one."""
    if conn.execute(
            "UPDATE txns SET state = 'aborted', finished = ?, abort_reason = ? "
            "WHERE txn_id = ? AND state = 'open'", (now, reason, txn_id)).rowcount:
        conn.execute("DELETE FROM locks WHERE txn_id = ?", (txn_id,))


def reap_timed_out(conn: Session, now: int) -> None:
    """§14: an open txn without a heartbeat for its own timeout (``hive.txn.timeout`` of the
    client that opened it, stored with it) is aborted, with its locks, by the next metastore
    call that notices: whichever client makes that call, with whatever timeout of its own."""
    stale = [row[0] for row in conn.execute(_STALE_OPEN_TXNS, (now,))]
    for txn_id in stale:
        abort_txn(conn, txn_id, now, "timed out: no heartbeat within the transaction timeout")


def has_timed_out(conn: Session, now: int) -> bool:
    """Whether ``reap_timed_out`` has work, so read-only calls take the write lock only then."""
    return conn.execute(_STALE_OPEN_TXNS + " LIMIT 1", (now,)).fetchone() is not None


#: open txns whose last heartbeat is older than their own timeout
_STALE_OPEN_TXNS = ("SELECT txn_id FROM txns WHERE state = 'open' AND "
                    "last_heartbeat < ? - heartbeat_timeout")


def require_open(conn: Session, txn_id: int) -> Any:
    """The txn's row if it is open; otherwise the error the protocol promises.

    Aborted -> ``TransactionAbortedError`` (the write did not land, a retry may succeed);
    committed or unknown -> ``TransactionStateError`` (the caller's bookkeeping is wrong).
    Wrapped so that a timeout abort decided in this same transaction is committed first.
    """
    if isinstance(txn_id, bool) or not isinstance(txn_id, int):
        raise InvalidInputError(f"txn id must be an int, got {txn_id!r}")
    row: Any = conn.execute(
        "SELECT * FROM txns WHERE txn_id = ?" + conn.dialect.row_lock, (txn_id,)).fetchone()
    if row is None:
        raise RaiseAfterCommit(TransactionStateError(f"txnid:{txn_id} does not exist"))
    if row["state"] == "aborted":
        reason = row["abort_reason"] or "aborted"
        raise RaiseAfterCommit(TransactionAbortedError(f"txnid:{txn_id} is aborted ({reason})"))
    if row["state"] != "open":
        raise RaiseAfterCommit(TransactionStateError(f"txnid:{txn_id} is already {row['state']}"))
    return row


# --- snapshots (§6.5) -------------------------------------------------------------------------


def take_snapshot(conn: Session, own: int | None = None) -> ValidTxnList:
    """Hive's ``createValidReadTxnList``: hwm = highest txn id handed out; exceptions = open and
    aborted txns up to it. Hive also drops the caller's own txn from the exceptions (so it reads
    its own writes): ``open_transaction`` takes the snapshot after consuming the new id but
    before inserting the txn's row, so the own txn is never listed in the first place.

    With server sequences (PostgreSQL) ids are handed out without a lock, so an id may be
    taken while its txn's row is not visible yet: the server's ``acid_snapshot_v9`` computes
    the snapshot in one statement and lists such ids as open (``postgres_functions``); an
    open passes its ``own`` new id, whose row is not inserted yet, so that it counts in the
    hwm and is not listed as such a gap (SQLite's counter already covers it)."""
    if conn.dialect.server_sequences:
        hwm, open_list, aborted_list = conn.execute(
            "SELECT hwm, open_ids, aborted_ids FROM acid_snapshot_v9(?)", (own,)).fetchone()
        return ValidTxnList(int(hwm), tuple(open_list), tuple(aborted_list))
    hwm = peek_sequence(conn, "txn") - 1
    open_ids: list[int] = []
    aborted_ids: list[int] = []
    for txn_id, state in conn.execute(
            "SELECT txn_id, state FROM txns WHERE state IN ('open', 'aborted') AND txn_id <= ? "
            "ORDER BY txn_id", (hwm,)):
        (open_ids if state == "open" else aborted_ids).append(txn_id)
    return ValidTxnList(hwm, tuple(open_ids), tuple(aborted_ids))


def build_write_id_list(conn: Session, table_id: int, table_name: str,
                        snapshot: ValidTxnList, txn_id: int | None) -> ValidWriteIdList:
    """Hive's ``getValidWriteIdsForTable`` (§6.5).

    hwm = highest write id of the table allocated to a txn at or below the snapshot's hwm (the
    caller's own txn always counts); every write id up to it whose txn the snapshot does not see
    as committed is an exception, aborted if the snapshot lists the txn as aborted, else open.
    Hive's pruned-rows quirk cannot arise: allocation rows are never pruned here.
    """
    own = -1 if txn_id is None else txn_id
    # Newest first, stopping at the first hit: the newest write ids nearly always belong to
    # txns the snapshot covers, so this reads a row or two, not the table's whole history.
    row = conn.execute(
        "SELECT write_id FROM txn_write_ids WHERE table_id = ? AND (txn_id <= ? OR txn_id = ?) "
        "ORDER BY write_id DESC LIMIT 1", (table_id, snapshot.high_watermark, own)).fetchone()
    hwm = 0 if row is None else int(row[0])
    open_ids: list[int] = []
    aborted_ids: list[int] = []
    # Only txns above the snapshot hwm or listed as its exceptions can be invalid; both are
    # looked up by txn id (the primary key; ``+table_id`` keeps SQLite from scanning the
    # table's whole history through the table_id index instead), and the exception list is a
    # single bound parameter whatever its length.
    dialect = conn.dialect
    for write_id, writer in conn.execute(
            "SELECT write_id, txn_id FROM txn_write_ids WHERE txn_id > ? AND "
            f"{dialect.hint('table_id')} = ? UNION ALL SELECT write_id, txn_id FROM "
            f"txn_write_ids WHERE {dialect.in_list('txn_id')} AND table_id = ?",
            (snapshot.high_watermark, table_id, dialect.list_parameter(snapshot.exceptions),
             table_id)):
        if write_id > hwm or writer == own or snapshot.is_txn_valid(writer):
            continue
        (aborted_ids if snapshot.is_txn_aborted(writer) else open_ids).append(write_id)
    return ValidWriteIdList(table_name, hwm, tuple(open_ids), tuple(aborted_ids))


def unseen_txns(conn: Session, snapshot: ValidTxnList) -> tuple[str, tuple[Any, ...]]:
    """A ``FROM`` source (alias ``t``, with its parameters) of the txns a snapshot does not
    see committed that may commit: those above its hwm and those it lists as open (aborted
    ones never commit). That, not a commit number or a time, is what "committed after my
    snapshot" means: on PostgreSQL commits on different tables run concurrently and take
    their numbers out of visibility order, and a commit in flight when a txn opened is listed
    open in its snapshot. Two index lookups by txn id; the open list is one bound
    parameter."""
    return (f"(SELECT * FROM txns WHERE txn_id > ? UNION ALL SELECT * FROM txns WHERE "
            f"{conn.dialect.in_list('txn_id')}) t",
            (snapshot.high_watermark, conn.dialect.list_parameter(snapshot.open_txn_ids)))


# --- allocation and recording -----------------------------------------------------------------


def allocate_write_id(conn: Session, txn_id: int, table_id: int,
                      table_name: str, *, fresh: bool = False) -> int:
    """§12.1: one write id per (txn, table), reused by later statements; per-table ids start at
    1 and are contiguous: the table's counter row is bumped in one upsert, which holds that row
    (PostgreSQL) or the database (SQLite) until the allocation commits (Hive's NEXT_WRITE_ID).
    ``fresh``: the txn was created in this metastore transaction and has no write id on the
    table yet (one query less)."""
    if not fresh:
        row = conn.execute("SELECT write_id FROM txn_write_ids WHERE txn_id = ? AND "
                           "table_id = ?", (txn_id, table_id)).fetchone()
        if row is not None:
            return int(row[0])
    write_id = int(conn.execute(
        "INSERT INTO next_write_id (table_id, next_value) VALUES (?, 2) ON CONFLICT (table_id) "
        "DO UPDATE SET next_value = next_write_id.next_value + 1 RETURNING next_value - 1",
        (table_id,)).fetchone()[0])
    conn.execute("INSERT INTO txn_write_ids (txn_id, table_id, table_name, write_id) "
                 "VALUES (?, ?, ?, ?)", (txn_id, table_id, table_name, write_id))
    return write_id


@dataclass(frozen=True)
class Resolved:
    """A validated component with the table id its write id was allocated on."""

    component: WriteComponent
    table: str
    table_id: int
    #: the table's metadata version now (the component's must be it, when it names one)
    metadata_version: int


def resolve(conn: Session, txn_id: int, component: WriteComponent) -> Resolved:
    """Tie a component to the write id the txn was allocated on its table, then validate it
    against that table (which may have been dropped since)."""
    if not isinstance(component, WriteComponent):
        raise InvalidInputError(f"expected a WriteComponent, got {component!r}")
    database, name = split_table_name(component.table)
    table = f"{database}.{name}"
    row = conn.execute("SELECT table_id, write_id FROM txn_write_ids WHERE txn_id = ? AND "
                       "table_name = ?", (txn_id, table)).fetchone()
    if row is None:
        raise InvalidInputError(f"txnid:{txn_id} has no write id on {table}; "
                                "call allocate_write_id first")
    if row["write_id"] != component.write_id:
        raise InvalidInputError(f"component of {table} names write id {component.write_id}, but "
                                f"txnid:{txn_id} was allocated write id {row['write_id']}")
    info = conn.execute("SELECT partition_schema, metadata_version FROM tables "
                        "WHERE table_id = ?", (row["table_id"],)).fetchone()
    if info is None:
        raise TableNotFoundError(f"table {table} was dropped while txnid:{txn_id} wrote to it")
    columns = [c.lower() for c in decode_schema(info["partition_schema"]).names]
    check_component(component, columns)
    return Resolved(component, table, int(row["table_id"]), int(info["metadata_version"]))


def _stored_components(conn: Session, txn_id: int) -> list[WriteComponent]:
    return [component_of(row) for row in conn.execute(
        "SELECT * FROM components WHERE txn_id = ? ORDER BY component_id", (txn_id,))]


def component_of(row: Any) -> WriteComponent:
    """A stored component row read back (``components``: both stores keep its lists as JSON
    text), decoded once per process for each distinct stored value (``_component``)."""
    return _component(tuple(row[name] for name in _STORED))


#: the columns of ``components`` a ``WriteComponent`` is made of, in its fields' order
_STORED = ("table_name", "part", "operation", "write_id", "directories", "rows_inserted",
           "rows_deleted", "files", "bytes", "bucket_files")
#: distinct stored components ``component_of`` keeps decoded (a few hundred bytes each)
_COMPONENTS_DECODED = 16384


@functools.lru_cache(maxsize=_COMPONENTS_DECODED)
def _component(stored: tuple[Any, ...]) -> WriteComponent:
    """A component from its stored values (``_STORED``), remembered: a read planned from the
    record gets every committed component of its partition, so each statement of a process
    decoded the same history again (two JSON texts and a dataclass a row, 45 us profiled:
    the part of a one-row UPDATE that grew with every delta left behind). The key is every
    value the component is made of, so a row stored differently is decoded anew; the
    component is frozen, so sharing it is safe."""
    table, part, operation, write_id, directories, inserted, deleted, files, size, buckets = \
        stored
    return WriteComponent(table, part, operation, write_id, tuple(json.loads(directories)),
                          inserted, deleted, files, size, bucket_files=bucket_files_of(buckets))


def encode_bucket_files(files: Sequence[tuple[str, int]] | None) -> str | None:
    """``WriteComponent.bucket_files`` as stored: a JSON list of [path, bytes] (NULL: not
    recorded)."""
    return None if files is None else json.dumps([[n, b] for n, b in files])


def bucket_files_of(stored: str | None) -> tuple[tuple[str, int], ...] | None:
    """``encode_bucket_files`` read back."""
    return None if stored is None else tuple((str(n), int(b)) for n, b in json.loads(stored))


def insert_components(conn: Session, txn_id: int, resolved: Sequence[Resolved], *,
                      none_stored: bool = False) -> None:
    """Store each component the txn has not stored yet (``none_stored``: it has none, as
    after the commit removed the recorded ones, so they are not read back)."""
    known = [] if none_stored else _stored_components(conn, txn_id)
    for item in resolved:
        c = item.component
        stored = WriteComponent(item.table, c.partition, c.operation, c.write_id, c.directories,
                                c.rows_inserted, c.rows_deleted, c.files, c.bytes,
                                bucket_files=c.bucket_files)
        if stored in known:
            continue
        known.append(stored)
        conn.execute(
            "INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id, "
            "directories, rows_inserted, rows_deleted, files, bytes, bucket_files) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (txn_id, item.table_id, item.table, c.partition, c.operation, c.write_id,
             json.dumps(list(c.directories)), c.rows_inserted, c.rows_deleted, c.files, c.bytes,
             encode_bucket_files(c.bucket_files)))


def record_write(conn: Session, txn_id: int, component: WriteComponent,
                 now: int) -> None:
    """Store a component before its files exist (so a crash leaves a cleanup record) and show
    the writer's informational lock: shared_write, or exclusive for an overwrite (§13.2)."""
    item = resolve(conn, txn_id, component)
    insert_components(conn, txn_id, [item])
    database, name = item.table.split(".")
    lock_type = "exclusive" if component.operation == "overwrite" else "shared_write"
    conn.execute("INSERT INTO locks (txn_id, table_id, db_name, table_name, part, "
                 "lock_type, acquired) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                 (txn_id, item.table_id, database, name, component.partition, lock_type, now))
    if lock_type == "exclusive":
        conn.execute("UPDATE locks SET lock_type = 'exclusive' WHERE txn_id = ? AND "
                     "table_id = ? AND part = ?", (txn_id, item.table_id, component.partition))


def record_planned(conn: Session, txn_id: int, table: Any,
                   components: Sequence[WriteComponent], now: int) -> None:
    """``record_write`` of each component for a txn opened in this metastore transaction,
    whose write id on ``table`` (its catalog row) was just allocated: nothing of the txn is
    stored yet, so the checks ``record_write`` reads back are known to hold, and the rows go
    in two batches (a few round trips less while the open holds the ``txn`` lock)."""
    columns = [c.lower() for c in decode_schema(table["partition_schema"]).names]
    for component in components:
        check_component(component, columns)
    name = f"{table['db_name']}.{table['name']}"
    conn.executemany(
        "INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id, "
        "directories, rows_inserted, rows_deleted, files, bytes) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0)",
        [(txn_id, table["table_id"], name, c.partition, c.operation, c.write_id,
          json.dumps(list(c.directories))) for c in components])
    conn.executemany(
        "INSERT INTO locks (txn_id, table_id, db_name, table_name, part, lock_type, acquired) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(txn_id, table["table_id"], table["db_name"], table["name"], c.partition,
          "exclusive" if c.operation == "overwrite" else "shared_write", now)
         for c in components])
