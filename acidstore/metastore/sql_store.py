"""``SqlMetastore``: the ``Metastore`` protocol on SQL, for every SQL backend.

Transactions, commit and introspection calls (the catalogue's are ``sql_catalog``'s), each one
metastore transaction run by the backend's ``_write`` / ``_read`` (see ``sql_base`` for the
locks each names and why). The rules themselves are in ``sql_txn``; the backends (``sqlite``,
``postgres``) only connect.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from acidstore.errors import InvalidInputError, TransactionStateError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore import sql_apps as apps
from acidstore.metastore import sql_commit as commits
from acidstore.metastore import sql_txn as txns
from acidstore.metastore.history_rows import merged_history
from acidstore.metastore.records import (
    MAX_OPEN_BATCH,
    AppVersion,
    CommitCheck,
    CommitInfo,
    CommittedWrite,
    CompactionOutput,
    HistoryEntry,
    LockInfo,
    PlannedWrite,
    StatementSummary,
    TxnInfo,
    TxnKind,
    WriteComponent,
)
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_catalog import SqlCatalog
from acidstore.metastore.sql_partitions import (
    checked_floors,
    checked_partitions,
    components_by_partition,
    output_of,
    outputs_by_partition,
)
from acidstore.metastore.sql_schema import from_micros
from acidstore.metastore.validate import (
    check_app_version,
    check_kind,
)

__all__ = ["SqlMetastore"]

#: above every write id (a BIGINT): the open upper end of a write-id range
_NO_WRITE_ID = 2**63 - 1


def _checked_open(kind: TxnKind, user: str, host: str, writes: Sequence[PlannedWrite]
                  ) -> list[PlannedWrite]:
    """The planned writes of an open, refused before the metastore is touched when the
    open is malformed."""
    check_kind(kind)
    if not isinstance(user, str) or not isinstance(host, str):
        raise InvalidInputError("user and host must be strings")
    planned = list(writes)
    if any(not isinstance(w, PlannedWrite) for w in planned):
        raise InvalidInputError(f"writes must be PlannedWrite values, got {planned!r}")
    if planned and kind != "default":
        raise InvalidInputError("a compaction transaction allocates no write id")
    if len({w.table for w in planned}) < len(planned) or any(
            len(set(w.partitions)) < len(w.partitions) for w in planned):
        raise InvalidInputError(f"planned writes name a table or partition twice: {planned}")
    return planned


class SqlMetastore(SqlCatalog):
    """Every ``Metastore`` call over the backend's ``_write`` / ``_read``."""

    # --- transactions -------------------------------------------------------------------------

    @staticmethod
    def _txn_info(row: Any) -> TxnInfo:
        finished = row["finished"]
        return TxnInfo(
            row["txn_id"], row["state"], row["kind"], row["user_name"], row["host"],
            from_micros(row["started"]), from_micros(row["last_heartbeat"]),
            None if finished is None else from_micros(finished),
            ValidTxnList.parse(row["snapshot"]))

    def open_transaction(self, *, user: str, host: str, kind: TxnKind = "default",
                         writes: Sequence[PlannedWrite] = ()) -> TxnInfo:
        """See the protocol. ``writes`` saves a single-statement insert two of its four
        durable metastore transactions (open, allocate, record, commit): each is a WAL flush
        (an fsync) on either backend, and those flushes are what a commit cycle costs. This
        weakens nothing: the allocation and the record become durable together with the
        open, before ``open_transaction`` returns, so before any file is written (a crash
        still leaves a record of what to clean); the commit is unchanged. Holding the
        ``txn`` lock for a few more statements costs PostgreSQL's opens far less than the
        two round trips and flushes it saves."""
        planned = _checked_open(kind, user, host, writes)
        # consistent: the snapshot and the commit counter must come from one view of the
        # database, or a commit landing between the two reads would escape the conflict check
        return self._write(lambda conn, now: self._open_one(conn, now, kind, user=user,
                                                            host=host, planned=planned),
                           locks=("txn",), consistent=True)

    def open_transaction_batch(self, count: int, *, user: str, host: str,
                               writes: Sequence[PlannedWrite] = ()) -> list[TxnInfo]:
        """See the protocol. Each txn is opened exactly as ``open_transaction`` opens one,
        one after another inside this one metastore transaction: so each snapshot lists the
        batch's earlier txns as open (a snapshot taken once for all would see them as
        committed), and a table's write ids come out contiguous, since the first allocation
        holds the table's counter row (PostgreSQL) or the database (SQLite) until the batch
        is durable."""
        if isinstance(count, bool) or not isinstance(count, int) or not (
                1 <= count <= MAX_OPEN_BATCH):
            raise InvalidInputError(f"a transaction batch opens 1 to {MAX_OPEN_BATCH} "
                                    f"transactions (hive.txn.max.open.batch), got {count!r}")
        planned = _checked_open("default", user, host, writes)

        def body(conn: Session, now: int) -> list[TxnInfo]:
            return [self._open_one(conn, now, "default", user=user, host=host, planned=planned)
                    for _ in range(count)]

        return self._write(body, locks=("txn",), consistent=True)

    def _open_one(self, conn: Session, now: int, kind: TxnKind, *, user: str, host: str,
                  planned: Sequence[PlannedWrite]) -> TxnInfo:
        txn_id = txns.next_sequence(conn, "txn")
        snapshot = txns.take_snapshot(conn, own=txn_id)
        # Commits numbered up to here are in the snapshot; a later number is a commit this
        # txn cannot see, i.e. one it overlaps with (the conflict check of §12.2).
        seen_commits = txns.peek_sequence(conn, "commit") - 1
        conn.execute(
            "INSERT INTO txns (txn_id, state, kind, user_name, host, started, "
            "last_heartbeat, snapshot, snapshot_commit_seq, heartbeat_timeout) "
            "VALUES (?, 'open', ?, ?, ?, ?, ?, ?, ?, ?)",
            (txn_id, kind, user, host, now, now, str(snapshot), seen_commits,
             self._timeout_micros))
        write_ids = self._allocate_planned(conn, txn_id, now, planned)
        started = from_micros(now)  # the row just inserted, not read back
        return TxnInfo(txn_id, "open", kind, user, host, started, started, None, snapshot,
                       write_ids=write_ids)

    def _allocate_planned(self, conn: Session, txn_id: int, now: int,
                          planned: Sequence[PlannedWrite]) -> dict[str, int]:
        """Allocate the write id of each planned write's table and record its directories,
        for a txn that has no write id on those tables yet (one opened in this metastore
        transaction, or by the one just before it)."""
        write_ids: dict[str, int] = {}
        for plan in planned:
            row = self._table_row(conn, plan.table)
            full_name = f"{row['db_name']}.{row['name']}"
            write_id = txns.allocate_write_id(conn, txn_id, row["table_id"], full_name,
                                              fresh=True)
            txns.record_planned(conn, txn_id, row, plan.components(write_id), now)
            write_ids[full_name] = write_id
        return write_ids

    def heartbeat(self, txn_id: int) -> None:
        def body(conn: Session, now: int) -> None:
            txns.require_open(conn, txn_id)
            conn.execute("UPDATE txns SET last_heartbeat = ? WHERE txn_id = ?", (now, txn_id))

        self._write(body)

    def heartbeat_batch(self, txn_ids: Sequence[int]) -> list[int]:
        ids = sorted(set(txn_ids))
        if any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
            raise InvalidInputError(f"txn ids must be ints, got {list(txn_ids)!r}")

        def body(conn: Session, now: int) -> list[int]:
            dialect = conn.dialect
            # the open ones, row-locked as a single heartbeat locks its txn (a commit, an
            # abort and a heartbeat of one txn never interleave)
            alive = {int(r[0]) for r in conn.execute(
                f"SELECT txn_id FROM txns WHERE {dialect.in_list('txn_id')} AND "
                "state = 'open' ORDER BY txn_id" + dialect.row_lock,
                (dialect.list_parameter(ids),))}
            conn.execute(f"UPDATE txns SET last_heartbeat = ? WHERE "
                         f"{dialect.in_list('txn_id')} AND state = 'open'",
                         (now, dialect.list_parameter(sorted(alive))))
            return [i for i in ids if i not in alive]

        return self._write(body) if ids else []

    def allocate_write_id(self, txn_id: int, table: str) -> int:
        def body(conn: Session, _now: int) -> int:
            txns.require_open(conn, txn_id)
            row = self._table_row(conn, table)
            full_name = f"{row['db_name']}.{row['name']}"
            return txns.allocate_write_id(conn, txn_id, row["table_id"], full_name)

        return self._write(body)

    def valid_txns(self, txn_id: int | None = None) -> ValidTxnList:
        if txn_id is None:
            return self._snapshot_call(txns.take_snapshot)

        def recorded(conn: Session) -> ValidTxnList:
            row = conn.execute("SELECT snapshot FROM txns WHERE txn_id = ?",
                               (txn_id,)).fetchone()
            if row is None:
                raise TransactionStateError(f"txnid:{txn_id} does not exist")
            return ValidTxnList.parse(row[0])

        return self._read(recorded)

    def valid_write_ids(self, table: str, snapshot: ValidTxnList,
                        txn_id: int | None = None) -> ValidWriteIdList:
        if not isinstance(snapshot, ValidTxnList):
            raise InvalidInputError(f"snapshot must be a ValidTxnList, got {snapshot!r}")

        def body(conn: Session) -> ValidWriteIdList:
            row = self._table_row(conn, table)
            return txns.build_write_id_list(conn, row["table_id"],
                                            f"{row['db_name']}.{row['name']}", snapshot, txn_id)

        return self._snapshot_call(body)

    def record_write(self, txn_id: int, component: WriteComponent) -> None:
        def body(conn: Session, now: int) -> None:
            txns.require_open(conn, txn_id)
            txns.record_write(conn, txn_id, component, now)

        self._write(body)

    def commit(self, txn_id: int, components: Sequence[WriteComponent], *,
               check: CommitCheck | None = None,
               outputs: Sequence[CompactionOutput] = (),
               statements: Sequence[StatementSummary] = ()) -> CommitInfo:
        offered, written, ran = list(components), list(outputs), list(statements)
        # no global lock: commit_txn locks the rows of the txn's tables (per-table order)
        return self._write(lambda conn, now: commits.commit_txn(
            conn, txn_id, offered, check, now, outputs=written, statements=ran))

    def record_app_version(self, txn_id: int, table: str, app_id: str, version: int) -> None:
        app_id, version = check_app_version(app_id, version)

        def body(conn: Session, _now: int) -> None:
            txns.require_open(conn, txn_id)
            row = self._table_row(conn, table)
            apps.record_app_version(conn, txn_id,
                                    (row["table_id"], f"{row['db_name']}.{row['name']}"),
                                    app_id, version)

        self._write(body)

    def app_versions(self, table: str, app_id: str | None = None) -> list[AppVersion]:
        if app_id is not None:
            app_id, _ = check_app_version(app_id, 0)

        def body(conn: Session) -> list[AppVersion]:
            row = self._table_row(conn, table)
            return apps.app_versions(conn, row["table_id"], f"{row['db_name']}.{row['name']}",
                                     app_id)

        return self._read(body)

    def overlapping_writes(self, txn_id: int, components: Sequence[WriteComponent]
                           ) -> list[CommittedWrite]:
        offered = list(components)
        return self._read(lambda conn: commits.overlapping_writes(conn, txn_id, offered))

    def abort(self, txn_id: int, reason: str = "") -> None:
        def body(conn: Session, now: int) -> None:
            row = conn.execute("SELECT state FROM txns WHERE txn_id = ?" + conn.dialect.row_lock,
                               (txn_id,)).fetchone()
            if row is None:
                raise TransactionStateError(f"txnid:{txn_id} does not exist")
            if row["state"] == "committed":
                raise TransactionStateError(f"txnid:{txn_id} is committed; it cannot abort")
            if row["state"] == "open":
                txns.abort_txn(conn, txn_id, now, reason or "aborted by the client")

        self._write(body)

    def commit_info(self, txn_id: int) -> CommitInfo | None:
        def body(conn: Session) -> CommitInfo | None:
            row = conn.execute("SELECT commit_seq, finished FROM txns WHERE txn_id = ? AND "
                               "state = 'committed'", (txn_id,)).fetchone()
            if row is None:
                return None
            write_ids = {r["table_name"]: int(r["write_id"]) for r in conn.execute(
                "SELECT table_name, write_id FROM txn_write_ids WHERE txn_id = ?", (txn_id,))}
            return CommitInfo(txn_id, int(row["commit_seq"]), from_micros(row["finished"]),
                              write_ids)

        return self._read(body)

    def aborted_components(self, table: str) -> list[WriteComponent]:
        def body(conn: Session) -> list[WriteComponent]:
            table_id = self._table_row(conn, table)["table_id"]
            return [txns.component_of(row) for row in conn.execute(
                "SELECT c.* FROM components c JOIN txns t ON t.txn_id = c.txn_id "
                "WHERE c.table_id = ? AND t.state = 'aborted' ORDER BY c.txn_id, "
                "c.component_id", (table_id,))]

        return self._read(body)

    def committed_components(self, table: str, *, partition: str | None = None,
                             min_write_id: int | None = None,
                             below_write_id: int | None = None) -> list[WriteComponent]:
        """See the protocol. With a partition the query reads the ``components_by_write``
        index (table, partition, write id): the partition's writes in the write-id range,
        never its history below the bound (what a read planned from the record asks). With
        a write-id bound alone it is driven by the table's write ids in range (the
        ``(table_id, write_id)`` index of ``txn_write_ids``, then ``components_by_txn``)."""
        def body(conn: Session) -> list[WriteComponent]:
            table_id = self._table_row(conn, table)["table_id"]
            hint, join = conn.dialect.hint, conn.dialect.forced_join
            low = min_write_id or 0
            high = _NO_WRITE_ID if below_write_id is None else below_write_id
            if partition is not None:
                # the unary + keeps SQLite off the state index (every txn of the store)
                rows = conn.execute(
                    "SELECT c.* FROM components c JOIN txns t ON t.txn_id = c.txn_id "
                    "WHERE c.table_id = ? AND c.part = ? AND c.write_id >= ? AND "
                    f"c.write_id < ? AND {hint('t.state')} = 'committed'",
                    (table_id, partition, low, high)).fetchall()
            elif min_write_id is None and below_write_id is None:
                rows = conn.execute(
                    "SELECT c.* FROM components c JOIN txns t ON t.txn_id = c.txn_id "
                    "WHERE c.table_id = ? AND t.state = 'committed'", (table_id,)).fetchall()
            else:
                # the unary + keep SQLite off the partition and state indexes (whole history)
                where = (f"w.table_id = ? AND w.write_id >= ? AND w.write_id < ? AND "
                         f"{hint('c.table_id')} = w.table_id AND {hint('t.state')} = "
                         "'committed'")
                rows = conn.execute(
                    f"SELECT c.* FROM txn_write_ids w {join} components c ON c.txn_id = "
                    f"w.txn_id {join} txns t ON t.txn_id = c.txn_id WHERE {where}",
                    (table_id, low, high)).fetchall()
            # sorted here, not by the query: an ORDER BY may steer SQLite to another index
            return [txns.component_of(row) for row in sorted(
                rows, key=lambda row: (row["txn_id"], row["component_id"]))]

        return self._read(body)

    def compaction_outputs(self, table: str, *, partition: str | None = None,
                           txn_ids: Iterable[int] | None = None) -> list[CompactionOutput]:
        wanted = None if txn_ids is None else sorted(set(txn_ids))

        def body(conn: Session) -> list[CompactionOutput]:
            found = self._table_row(conn, table)
            name = f"{found['db_name']}.{found['name']}"
            where, parameters = "o.table_id = ?", [found["table_id"]]
            if partition is not None:
                where += " AND o.part = ?"
                parameters.append(partition)
            if wanted is not None:
                # the primary key (txn_id, table_id, directory) finds each txn's rows
                where += f" AND {conn.dialect.in_list('o.txn_id')}"
                parameters.append(conn.dialect.list_parameter(wanted))
            return [output_of(name, row) for row in conn.execute(
                        "SELECT o.* FROM compaction_outputs o JOIN txns t ON t.txn_id = "
                        f"o.txn_id WHERE {where} AND t.state = 'committed' "
                        "ORDER BY o.txn_id, o.directory", parameters)]

        if wanted == []:
            return []
        return self._read(body)

    def compaction_outputs_by_partition(self, table: str, partitions: Iterable[str]
                                        ) -> dict[str, list[CompactionOutput]]:
        """See the protocol: one query for all of them (``sql_partitions``)."""
        wanted = checked_partitions(partitions)
        if not wanted:
            return {}
        return self._read(lambda conn: outputs_by_partition(
            conn, self._table_row(conn, table), wanted))

    def committed_components_by_partition(self, table: str, floors: Mapping[str, int]
                                          ) -> dict[str, list[WriteComponent]]:
        """See the protocol: one query for all of them (``sql_partitions``)."""
        wanted = checked_floors(floors)
        if not wanted:
            return {}
        return self._read(lambda conn: components_by_partition(
            conn, self._table_row(conn, table)["table_id"], wanted))

    # --- introspection ------------------------------------------------------------------------

    def history(self, table: str) -> list[HistoryEntry]:
        """The writes' rows by write id, and a row per committed compaction, from the outputs
        its commit recorded (``compaction_outputs``, found by the table's index; stored only
        by a commit): major if it wrote a base, else minor. Each compaction stands before the
        first write committed after it (``merged_history``)."""
        def body(conn: Session) -> list[HistoryEntry]:
            table_id = self._table_row(conn, table)["table_id"]
            writes = [HistoryEntry(
                r["write_id"], r["txn_id"], from_micros(r["commit_time"]), r["operation"],
                r["rows_inserted"], r["rows_deleted"], r["files"], r["bytes"],
                tuple(json.loads(r["partitions"])), rows_updated=r["rows_updated"])
                for r in conn.execute("SELECT * FROM history WHERE table_id = ? "
                                      "ORDER BY write_id", (table_id,))]
            outputs: dict[int, list[Any]] = {}
            for r in conn.execute(
                    "SELECT o.txn_id, o.part, o.directory, o.files, o.bytes, t.finished "
                    "FROM compaction_outputs o JOIN txns t ON t.txn_id = o.txn_id "
                    "WHERE o.table_id = ? AND t.state = 'committed'", (table_id,)):
                outputs.setdefault(int(r["txn_id"]), []).append(r)
            compacted = [HistoryEntry(
                None, txn_id, from_micros(rows[0]["finished"]), "compaction_major" if any(
                    r["directory"].rsplit("/", 1)[-1].startswith("base_") for r in rows)
                else "compaction_minor", 0, 0, sum(int(r["files"]) for r in rows),
                sum(int(r["bytes"]) for r in rows),
                tuple(sorted({r["part"] for r in rows if r["part"]})))
                for txn_id, rows in outputs.items()]
            return merged_history(writes, compacted)

        return self._read(body)

    def show_transactions(self) -> list[TxnInfo]:
        return self._read(lambda conn: [self._txn_info(row) for row in conn.execute(
            "SELECT * FROM txns ORDER BY txn_id")])

    def show_locks(self) -> list[LockInfo]:
        return self._read(lambda conn: [LockInfo(
            r["lock_id"], r["txn_id"], r["db_name"], r["table_name"], r["part"] or None,
            r["lock_type"], "acquired", from_micros(r["acquired"]))
            for r in conn.execute("SELECT * FROM locks ORDER BY lock_id")])

    def write_id_commit_times(self, table: str) -> dict[int, datetime]:
        def body(conn: Session) -> dict[int, datetime]:
            table_id = self._table_row(conn, table)["table_id"]
            return {r[0]: from_micros(r[1]) for r in conn.execute(
                "SELECT write_id, commit_time FROM history WHERE table_id = ? ORDER BY write_id",
                (table_id,))}

        return self._read(body)

