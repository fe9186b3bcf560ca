"""The commit of the SQL metastores (spec §12.2): the write-write and compaction conflict
checks against the txn's own snapshot, then the commit's records.

Split from ``sql_txn`` (the bookkeeping a commit builds on) because the commit's checks are a
concern of their own; the same rules as there apply: each function runs inside a metastore
transaction the backend opened, and an abort that must persist before its error is raised is
wrapped in ``RaiseAfterCommit``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from acidstore.errors import (
    ConcurrentCompactionError,
    InvalidInputError,
    MetadataChangedError,
    TableNotFoundError,
)
from acidstore.format.writeids import ValidTxnList
from acidstore.metastore import sql_apps as apps
from acidstore.metastore.conflicts import conflict_error
from acidstore.metastore.history_rows import HistoryRow, check_statement, history_rows
from acidstore.metastore.records import (
    CommitCheck,
    CommitInfo,
    CommittedWrite,
    CompactionOutput,
    StatementSummary,
    WriteComponent,
)
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_schema import decode_schema, from_micros
from acidstore.metastore.sql_txn import (
    RaiseAfterCommit,
    Resolved,
    abort_txn,
    commit_time,
    insert_components,
    next_sequence,
    peek_sequence,
    require_open,
    resolve,
    unseen_txns,
)
from acidstore.metastore.validate import CONFLICTING_OPERATIONS, check_output, split_table_name

__all__ = ["commit_txn", "overlapping_writes"]

# --- commit (§12.2) ---------------------------------------------------------------------------


def _overlapping(conn: Session, txn_id: int, snapshot: ValidTxnList,
                 resolved: Sequence[Resolved]) -> list[tuple[Resolved, CommittedWrite]]:
    """Committed writes that overlap ours: committed after our snapshot (not seen committed
    by it), on the same table and partition, both sides update/delete/overwrite. Inserts
    conflict only with a component that ``read`` its partition (isolation level
    Serializable). A committed component that wrote no directory (a Serializable
    statement's record of a partition it only read) changed nothing, so it conflicts with no
    one: two readers never conflict."""
    pairs: list[tuple[Resolved, CommittedWrite]] = []
    unseen, parameters = unseen_txns(conn, snapshot)
    for item in resolved:
        reads = item.component.read
        if item.component.operation not in CONFLICTING_OPERATIONS and not reads:
            continue
        # Driven by the unseen txns (CROSS JOIN fixes them as the outer loop in SQLite); the
        # unary + operators keep SQLite from choosing the state or partition indexes, and
        # sorting here keeps it off the commit_seq index: each would scan the whole history.
        hint = conn.dialect.hint
        rows = sorted(conn.execute(
            f"SELECT c.*, t.commit_seq FROM {unseen} {conn.dialect.forced_join} components c "
            f"ON c.txn_id = t.txn_id WHERE {hint('t.state')} = 'committed' AND "
            f"{hint('c.table_id')} = ? AND {hint('c.part')} = ? AND c.txn_id != ? "
            "AND c.directories != '[]' "
            "AND (? OR c.operation IN ('update', 'delete', 'overwrite'))",
            (*parameters, item.table_id, item.component.partition, txn_id, reads)),
            key=lambda row: (row["commit_seq"], row["component_id"]))
        pairs.extend((item, CommittedWrite(
            row["txn_id"], row["commit_seq"], row["table_name"], row["part"],
            row["operation"], row["write_id"], tuple(json.loads(row["directories"]))))
            for row in rows)
    return pairs


def _distinct(pairs: Sequence[tuple[Resolved, CommittedWrite]]) -> list[CommittedWrite]:
    out: list[CommittedWrite] = []
    for _, other in pairs:
        if other not in out:
            out.append(other)
    return out


def overlapping_writes(conn: Session, txn_id: int, components: Sequence[WriteComponent]
                       ) -> list[CommittedWrite]:
    """What ``commit_txn`` would hand its check if the txn committed now, read without a lock
    and without changing anything: a committer reads their files before it takes the commit
    lock. Empty when the txn is not open (its commit reports that)."""
    txn = conn.execute("SELECT state, snapshot FROM txns WHERE txn_id = ?",
                       (txn_id,)).fetchone()
    if txn is None or txn["state"] != "open":
        return []
    resolved = [resolve(conn, txn_id, c) for c in components]
    return _distinct(_overlapping(conn, txn_id, ValidTxnList.parse(txn["snapshot"]),
                                  resolved))


def _hidden_by_overwrite(conn: Session, txn_id: int,
                         resolved: Sequence[Resolved]) -> tuple[Resolved, CommittedWrite] | None:
    """A committed INSERT OVERWRITE of one of our partitions whose write id is above ours.

    Its ``base_W`` hides every delta of a lower write id, so committing ours after it would
    publish rows no snapshot ever shows (a committed write lost). Hive prevents this with an
    exclusive lock on the overwrite; with optimistic writers the later committer must fail.
    Inserts are included: they never conflict otherwise. The partial index
    ``components_overwrites`` holds only overwrites, so the check never reads the partition's
    other components, which grow with every commit (a scan of them cost 8.6 ms at 12,000
    commits into one partition, inside the commit's write lock).
    """
    for item in resolved:
        row = conn.execute(
            "SELECT c.*, t.commit_seq FROM components c JOIN txns t ON t.txn_id = c.txn_id "
            "WHERE c.table_id = ? AND c.part = ? AND c.operation = 'overwrite' "
            "AND c.write_id > ? AND c.txn_id != ? AND t.state = 'committed' "
            "ORDER BY t.commit_seq LIMIT 1",
            (item.table_id, item.component.partition, item.component.write_id,
             txn_id)).fetchone()
        if row is not None:
            return item, CommittedWrite(
                row["txn_id"], row["commit_seq"], row["table_name"], row["part"],
                row["operation"], row["write_id"], tuple(json.loads(row["directories"])))
    return None


def _write_history(conn: Session, txn_id: int, committed: int, resolved: Sequence[Resolved],
                   statements: Sequence[StatementSummary]) -> dict[str, int]:
    """One history row per write id the txn committed (``history_rows``: its statements on
    that table, or its components there), at the commit's time ``committed``."""
    rows = history_rows([(r.table, r.component) for r in resolved], statements)
    write_ids: dict[str, int] = {}
    for row in conn.execute("SELECT table_id, table_name, write_id FROM txn_write_ids "
                            "WHERE txn_id = ? ORDER BY table_name", (txn_id,)).fetchall():
        summed = rows.get(row["table_name"], HistoryRow())
        conn.execute(
            "INSERT INTO history (table_id, write_id, txn_id, commit_time, operation, "
            "rows_inserted, rows_updated, rows_deleted, files, bytes, partitions) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row["table_id"], row["write_id"], txn_id, committed, summed.operation,
             summed.rows_inserted, summed.rows_updated, summed.rows_deleted, summed.files,
             summed.bytes, json.dumps(summed.partitions)))
        write_ids[row["table_name"]] = int(row["write_id"])
    return write_ids


def _resolve_outputs(conn: Session, txn_id: int, outputs: Sequence[CompactionOutput]
                     ) -> list[tuple[int, CompactionOutput]]:
    """(table id, output) of each compaction output, validated against its table."""
    out = []
    for output in outputs:
        if not isinstance(output, CompactionOutput):
            raise InvalidInputError(f"expected a CompactionOutput, got {output!r}")
        database, name = split_table_name(output.table)
        row = conn.execute("SELECT table_id, partition_schema FROM tables WHERE db_name = ? "
                           "AND name = ?", (database, name)).fetchone()
        if row is None:
            raise TableNotFoundError(f"table {database}.{name} was dropped while txnid:"
                                     f"{txn_id} compacted it")
        columns = [c.lower() for c in decode_schema(row["partition_schema"]).names]
        check_output(output, columns, txn_id)
        out.append((int(row["table_id"]), output))
    return out


def _compacted_meanwhile(conn: Session, txn_id: int, snapshot: ValidTxnList,
                         outputs: Sequence[tuple[int, CompactionOutput]]
                         ) -> ConcurrentCompactionError | None:
    """The error for a compaction whose partition another compaction committed to after its
    snapshot: the two outputs were planned from different directory sets and need not nest."""
    unseen, parameters = unseen_txns(conn, snapshot)
    for table_id, output in outputs:
        row = min(conn.execute(
            f"SELECT o.txn_id, t.commit_seq FROM {unseen} {conn.dialect.forced_join} "
            "compaction_outputs o ON o.txn_id = t.txn_id WHERE o.table_id = ? AND o.part = ? "
            f"AND o.txn_id != ? AND {conn.dialect.hint('t.state')} = 'committed'",
            (*parameters, table_id, output.partition, txn_id)),
            key=lambda found: found["commit_seq"], default=None)
        if row is not None:
            where = f"{output.table}/{output.partition}" if output.partition else output.table
            return ConcurrentCompactionError(
                f"Aborting [txnid:{txn_id}]: another compaction of {where} "
                f"([txnid:{row['txn_id']}]) committed after this one's snapshot; their outputs "
                "could overlap, so nothing of this one was committed: compact again",
                txn_id=txn_id, other_txn_id=int(row["txn_id"]), table=output.table,
                partition=output.partition)
    return None


def _insert_outputs(conn: Session, txn_id: int,
                    outputs: Sequence[tuple[int, CompactionOutput]]) -> None:
    conn.executemany(
        "INSERT INTO compaction_outputs (txn_id, table_id, part, directory, files, "
        "rows_written, bytes, file_rows) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        [(txn_id, table_id, o.partition, o.directory, o.files, o.rows, o.bytes,
          json.dumps(dict(o.file_rows))) for table_id, o in outputs])


def _lock_tables(conn: Session, txn_id: int, outputs: Sequence[CompactionOutput]) -> None:
    """Serialize commits per table (PostgreSQL): lock the catalog row of every table the txn
    has a write id, an idempotent-write version or a compaction output on, in table id order,
    until the commit ends. Two commits on one table then never interleave between the
    conflict check and publishing (first committer wins, §12.2), while commits on different
    tables run in parallel. ``add_columns`` updates the same row, so a commit's metadata check
    never interleaves with it either. SQLite holds the whole database already."""
    if not conn.dialect.row_lock:
        return
    names = [".".join(split_table_name(o.table)) for o in outputs
             if isinstance(o, CompactionOutput)]
    by_name = conn.dialect.in_list("db_name || '.' || name")
    conn.execute(
        "SELECT table_id FROM tables WHERE table_id IN (SELECT table_id FROM txn_write_ids "
        "WHERE txn_id = ? UNION SELECT table_id FROM txn_app_versions WHERE txn_id = ?) "
        f"OR {by_name} ORDER BY table_id{conn.dialect.row_lock}",
        (txn_id, txn_id, conn.dialect.list_parameter(names))).fetchall()


def commit_txn(conn: Session, txn_id: int, components: Sequence[WriteComponent],
               check: CommitCheck | None, now: int, *,
               outputs: Sequence[CompactionOutput] = (),
               statements: Sequence[StatementSummary] = ()) -> CommitInfo:
    """The whole commit, inside one ``BEGIN IMMEDIATE`` so no other commit can interleave
    between the conflict check and publishing (first committer wins). A compaction's
    ``outputs`` are stored in the same transaction: a reader never sees its directories
    without their record. ``statements`` name the history rows (``history_rows``)."""
    txn = require_open(conn, txn_id)
    statements = [check_statement(s) for s in statements]  # refused before anything changes
    snapshot = ValidTxnList.parse(txn["snapshot"])
    _lock_tables(conn, txn_id, outputs)
    resolved = [resolve(conn, txn_id, c) for c in components]
    written = _resolve_outputs(conn, txn_id, outputs)
    for item in resolved:
        planned = item.component.metadata_version
        if planned is not None and planned != item.metadata_version:
            stale = MetadataChangedError(
                f"txnid:{txn_id} wrote {item.table} as of its metadata version {planned}, but "
                f"its metadata changed since (now version {item.metadata_version}: columns "
                "were added, renamed or dropped, or the table was renamed); nothing was "
                "committed: read the table again and retry",
                txn_id=txn_id, table=item.table, partition=item.component.partition)
            _abort_with(conn, txn_id, now, resolved, str(stale))
            raise RaiseAfterCommit(stale)
    pending = apps.pending_apps(conn, txn_id)
    raced = apps.app_conflict(txn_id, pending)
    if raced is not None:
        _abort_with(conn, txn_id, now, resolved, str(raced))
        raise RaiseAfterCommit(raced)
    compacted = _compacted_meanwhile(conn, txn_id, snapshot, written)
    if compacted is not None:
        _abort_with(conn, txn_id, now, resolved, str(compacted))
        raise RaiseAfterCommit(compacted)
    hidden = _hidden_by_overwrite(conn, txn_id, resolved)
    if hidden is not None:
        item, other = hidden
        error = conflict_error(txn_id, peek_sequence(conn, "commit"), item.table,
                               partition=item.component.partition,
                               operation=item.component.operation, other=other,
                               detail=f": its base_{other.write_id:07d} would hide write id "
                               f"{item.component.write_id} of this transaction")
        _abort_with(conn, txn_id, now, resolved, str(error))
        raise RaiseAfterCommit(error)
    pairs = _overlapping(conn, txn_id, snapshot, resolved)
    if pairs:
        would_be_seq = peek_sequence(conn, "commit")
        if check is None:
            item, other = pairs[0]
            error = conflict_error(txn_id, would_be_seq, item.table,
                                   partition=item.component.partition,
                                   operation=item.component.operation, other=other)
            _abort_with(conn, txn_id, now, resolved, str(error))
            raise RaiseAfterCommit(error)
        try:
            check(list(components), _distinct(pairs))
        except Exception as exc:
            _abort_with(conn, txn_id, now, resolved, f"commit check failed: {exc}")
            raise RaiseAfterCommit(exc) from exc
    commit_seq = next_sequence(conn, "commit")
    # the metastore's time, after the previous commit's (the table locks are held)
    committed = commit_time(conn, now)
    conn.execute("UPDATE txns SET state = 'committed', commit_seq = ?, finished = ? "
                 "WHERE txn_id = ?", (commit_seq, committed, txn_id))
    # The committed components replace the ones recorded before writing: they are final.
    conn.execute("DELETE FROM components WHERE txn_id = ?", (txn_id,))
    insert_components(conn, txn_id, resolved, none_stored=True)
    _insert_outputs(conn, txn_id, written)
    write_ids = _write_history(conn, txn_id, committed, resolved, statements)
    apps.publish_apps(conn, txn_id, committed, pending)
    conn.executemany(
        "INSERT INTO partitions (table_id, part) SELECT table_id, ? FROM tables "
        "WHERE table_id = ? ON CONFLICT DO NOTHING",
        sorted({(r.component.partition, r.table_id) for r in resolved if r.component.partition}))
    conn.execute("DELETE FROM locks WHERE txn_id = ?", (txn_id,))
    return CommitInfo(txn_id, commit_seq, from_micros(committed), write_ids)


def _abort_with(conn: Session, txn_id: int, now: int,
                resolved: Sequence[Resolved], reason: str) -> None:
    """Abort at commit, keeping the components offered so a cleaner can find their files."""
    insert_components(conn, txn_id, resolved)
    abort_txn(conn, txn_id, now, reason)
