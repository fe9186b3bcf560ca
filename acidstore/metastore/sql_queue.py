"""SQL of the compaction queue and of the cleaner's metastore needs (both SQL backends).

Each function runs inside a transaction opened by the backend (``_write``/``_read``), so every
state change of an entry is atomic with the checks that allow it; on PostgreSQL every queue
change holds the ``queue`` lock (``sql_store``), so two workers never claim one partition.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from acidstore.errors import InvalidInputError, TransactionStateError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore import sql_leases as leases
from acidstore.metastore.queue import (
    ACTIVE_STATES,
    CompactionCommit,
    CompactionInfo,
    CompactionKind,
    CompactionState,
)
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_schema import from_micros, to_micros
from acidstore.metastore.sql_txn import build_write_id_list, peek_sequence, unseen_txns

__all__ = ["begin_cleaning", "claim", "committed_after", "enqueue", "finish", "forget_aborted",
           "info_of", "live_snapshots", "log_outcome", "opens_in_flight", "ready_for_cleaning",
           "record_compacted", "unseen_replacements"]

_KINDS = ("minor", "major")
_FINAL: tuple[CompactionState, ...] = ("succeeded", "failed", "refused", "did not initiate")


def _time(value: int | None) -> datetime | None:
    return None if value is None else from_micros(value)


def info_of(row: Any) -> CompactionInfo:
    return CompactionInfo(
        row["compaction_id"], row["table_name"], row["part"], row["kind"], row["state"],
        row["reason"], from_micros(row["enqueued"]), row["worker"], _time(row["started"]),
        _time(row["heartbeat"]), row["txn_id"], row["highest_write_id"],
        row["compactor_write_ids"], row["next_txn_id"], _time(row["compacted"]),
        _time(row["finished"]), row["error"], row["attempts"], _time(row["cleaning_started"]))


def _check_kind(kind: str) -> None:
    if kind not in _KINDS:
        raise InvalidInputError(f"compaction kind must be 'minor' or 'major', not {kind!r}")


def _get(conn: Session, compaction_id: int) -> Any:
    row: Any = conn.execute(
        "SELECT * FROM compactions WHERE compaction_id = ?", (compaction_id,)).fetchone()
    if row is None:
        raise TransactionStateError(f"compaction {compaction_id} does not exist")
    return row


def enqueue(conn: Session, *, table_id: int, table: str, partition: str,
            kind: CompactionKind, reason: str, now: int) -> CompactionInfo | None:
    """Queue a compaction unless one is already initiated or working on the partition."""
    _check_kind(kind)
    busy = conn.execute(
        "SELECT 1 FROM compactions WHERE table_id = ? AND part = ? AND state IN (?, ?)",
        (table_id, partition, *ACTIVE_STATES)).fetchone()
    if busy is not None:
        return None
    cursor = conn.execute(
        "INSERT INTO compactions (table_id, table_name, part, kind, state, reason, enqueued) "
        "VALUES (?, ?, ?, ?, 'initiated', ?, ?) RETURNING compaction_id",
        (table_id, table, partition, kind, reason, now))
    return info_of(_get(conn, int(cursor.fetchone()[0])))


def log_outcome(conn: Session, *, table_id: int, table: str, partition: str,
                kind: CompactionKind, state: CompactionState, reason: str, now: int
                ) -> CompactionInfo:
    """Record a decision that needs no work (e.g. ``did not initiate``), for the history."""
    _check_kind(kind)
    if state not in _FINAL:
        raise InvalidInputError(f"{state!r} is not a final compaction state")
    cursor = conn.execute(
        "INSERT INTO compactions (table_id, table_name, part, kind, state, reason, enqueued, "
        "finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING compaction_id",
        (table_id, table, partition, kind, state, reason, now, now))
    return info_of(_get(conn, int(cursor.fetchone()[0])))


def record_compacted(conn: Session, *, table_id: int, table: str, partition: str,
                     kind: CompactionKind, reason: str, txn_id: int,
                     compactor_write_ids: ValidWriteIdList, worker: str, now: int,
                     stale_micros: int) -> CompactionInfo:
    """Record a compaction that ran outside the queue (``compact()`` called directly), just
    before its transaction commits: a ``working`` entry of ``worker`` that names the txn.
    From the commit on, time travel and readers' lease checks find the compaction here; the
    caller moves the entry to ``ready for cleaning`` after the commit, and if it dies first,
    the entry goes stale and a Worker takes it over, finds the txn committed and moves it on
    (or, if the txn never committed, aborts it and compacts again). ``stale_micros``: how long
    the entry stays the caller's without a heartbeat (its txn's timeout)."""
    _check_kind(kind)
    cursor = conn.execute(
        "INSERT INTO compactions (table_id, table_name, part, kind, state, reason, enqueued, "
        "worker, started, heartbeat, txn_id, highest_write_id, compactor_write_ids, attempts, "
        "stale_after) VALUES (?, ?, ?, ?, 'working', ?, ?, ?, ?, ?, ?, ?, ?, 1, ?) "
        "RETURNING compaction_id",
        (table_id, table, partition, kind, reason, now, worker, now, now, txn_id,
         compactor_write_ids.high_watermark, str(compactor_write_ids), stale_micros))
    return info_of(_get(conn, int(cursor.fetchone()[0])))


def claim(conn: Session, worker: str, now: int, stale_micros: int
          ) -> CompactionInfo | None:
    """Give ``worker`` the oldest initiated entry whose partition no live worker holds.

    An entry whose worker stopped heartbeating for that worker's own ``stale_micros`` (stored
    with the claim: a worker that heartbeats rarely because it was given a long window is not
    taken over by one given a short window; an entry claimed before schema version 9 has
    none, and this caller's applies) goes back to ``initiated`` first (its worker died): its
    ``txn_id`` stays, so the next worker can abort that transaction and remove its partial
    output before compacting again.
    """
    conn.execute("UPDATE compactions SET state = 'initiated', worker = NULL "
                 "WHERE state = 'working' AND heartbeat < ? - COALESCE(stale_after, ?)",
                 (now, stale_micros))
    row = conn.execute(
        "SELECT c.* FROM compactions c WHERE c.state = 'initiated' AND NOT EXISTS ("
        "SELECT 1 FROM compactions w WHERE w.state = 'working' AND w.table_id = c.table_id "
        "AND w.part = c.part) ORDER BY c.compaction_id LIMIT 1").fetchone()
    if row is None:
        return None
    conn.execute("UPDATE compactions SET state = 'working', worker = ?, started = ?, "
                 "heartbeat = ?, stale_after = ?, attempts = attempts + 1 "
                 "WHERE compaction_id = ?", (worker, now, now, stale_micros, row["compaction_id"]))
    return info_of(_get(conn, row["compaction_id"]))


def _owned(conn: Session, compaction_id: int, worker: str) -> Any:
    row = _get(conn, compaction_id)
    if row["state"] != "working" or row["worker"] != worker:
        raise TransactionStateError(
            f"compaction {compaction_id} is no longer held by worker {worker!r} (state "
            f"{row['state']!r}, worker {row['worker']!r}): another worker took it over")
    return row


def heartbeat(conn: Session, compaction_id: int, worker: str, now: int, *,
              txn_id: int | None, compactor_write_ids: ValidWriteIdList | None) -> None:
    """Keep the claim alive; also records the compaction's txn and compactor list once known."""
    _owned(conn, compaction_id, worker)
    conn.execute("UPDATE compactions SET heartbeat = ? WHERE compaction_id = ?",
                 (now, compaction_id))
    if txn_id is not None and compactor_write_ids is not None:
        conn.execute("UPDATE compactions SET txn_id = ?, compactor_write_ids = ?, "
                     "highest_write_id = ? WHERE compaction_id = ?",
                     (txn_id, str(compactor_write_ids), compactor_write_ids.high_watermark,
                      compaction_id))


def compacted(conn: Session, compaction_id: int, worker: str, now: int) -> None:
    """The compaction's txn committed: the entry waits for the cleaner."""
    _owned(conn, compaction_id, worker)
    conn.execute("UPDATE compactions SET state = 'ready for cleaning', next_txn_id = ?, "
                 "compacted = ? WHERE compaction_id = ?",
                 (peek_sequence(conn, "txn"), now, compaction_id))


def finish(conn: Session, compaction_id: int, state: CompactionState,
           error: str | None, now: int) -> None:
    if state not in _FINAL:
        raise InvalidInputError(f"{state!r} is not a final compaction state")
    _get(conn, compaction_id)
    conn.execute("UPDATE compactions SET state = ?, error = ?, finished = ?, worker = NULL "
                 "WHERE compaction_id = ?", (state, error, now, compaction_id))


def opens_in_flight(conn: Session) -> list[int]:
    """Ids handed out above PostgreSQL's txn floor whose txn has no visible row: opens in
    flight (or dead), whose snapshots may predate any commit (postgres_functions). SQLite
    hands out an id and inserts its row in one locked transaction: never any."""
    if not conn.dialect.server_sequences:
        return []
    return [int(r[0]) for r in conn.execute(
        "SELECT g FROM generate_series((SELECT next_value FROM sequences WHERE "
        "name = 'txn_floor') + 1, (SELECT last_value FROM acid_txn_ids)) g WHERE NOT "
        "EXISTS (SELECT 1 FROM txns WHERE txn_id = g) ORDER BY g")]


def ready_for_cleaning(conn: Session) -> list[CompactionInfo]:
    """Entries whose every possible reader has moved on: no txn that was open when the
    compaction committed (id below ``next_txn_id``) is still open (spec §11)."""
    low = conn.execute("SELECT MIN(txn_id) FROM txns WHERE state = 'open'").fetchone()[0]
    # an id handed out whose txn is not visible yet may be an open in flight, whose
    # snapshot could predate the compaction: it counts as open
    gap = min(opens_in_flight(conn), default=None)
    low = gap if low is None else low if gap is None else min(low, gap)
    rows = conn.execute("SELECT * FROM compactions WHERE state = 'ready for cleaning' "
                        "ORDER BY compaction_id").fetchall()
    return [info_of(r) for r in rows if low is None or r["next_txn_id"] <= low]


def begin_cleaning(conn: Session, table_id: int, partition: str,
                   txns: ValidTxnList, now: int) -> list[int]:
    """Flag the partition's compactions that ``txns`` sees committed as being cleaned (before
    the cleaner lists or removes anything), so time travel stops reading around them."""
    rows = conn.execute(
        "SELECT compaction_id, txn_id FROM compactions WHERE table_id = ? AND part = ? AND "
        "txn_id IS NOT NULL AND cleaning_started IS NULL", (table_id, partition)).fetchall()
    flagged = [r["compaction_id"] for r in rows if txns.is_txn_valid(r["txn_id"])]
    conn.executemany("UPDATE compactions SET cleaning_started = ? WHERE compaction_id = ?",
                     [(now, c) for c in flagged])
    return flagged


def committed_after(conn: Session, table_id: int, point: int | datetime
                    ) -> list[CompactionCommit]:
    """The table's compactions committed after ``point``: the commit that made every write
    id up to ``point`` (an int) visible, or a moment (a datetime)."""
    if isinstance(point, datetime):
        where, value = "t.finished > ?", to_micros(point)
    else:
        where, value = "t.commit_seq > ?", conn.execute(
            "SELECT COALESCE(MAX(t.commit_seq), 0) FROM history h JOIN txns t "
            "ON t.txn_id = h.txn_id WHERE h.table_id = ? AND h.write_id <= ?",
            (table_id, point)).fetchone()[0]
    rows = conn.execute(
        "SELECT c.txn_id, c.part, c.state, c.cleaning_started, t.commit_seq, t.finished "
        "FROM compactions c JOIN txns t ON t.txn_id = c.txn_id WHERE c.table_id = ? AND "
        f"t.state = 'committed' AND {where} ORDER BY t.commit_seq, c.part",
        (table_id, value)).fetchall()
    # an entry cleaned before cleaning_started existed (schema 2) is 'succeeded'
    return [CompactionCommit(r["txn_id"], r["part"], r["commit_seq"], from_micros(r["finished"]),
                             r["cleaning_started"] is not None or r["state"] == "succeeded")
            for r in rows]


def unseen_replacements(conn: Session, table_id: int, snapshot: ValidTxnList) -> list[int]:
    """Txns that have committed but that ``snapshot`` does not see committed, and that made
    directories of the table obsolete: a compaction of it (its output replaces what it read)
    or an INSERT OVERWRITE (its base hides older directories); sorted. The cleaner may
    remove what they replaced before a reader holding ``snapshot`` has leased it.

    Found by txn id (``unseen_txns``: above the snapshot's hwm, or listed open in it), so
    the answer is exact whatever the clocks say, and costs what committed since the
    snapshot, never the table's history (``compactions_by_txn``, ``components_by_txn``)."""
    unseen, parameters = unseen_txns(conn, snapshot)
    hint, join = conn.dialect.hint, conn.dialect.forced_join
    committed = f"{hint('t.state')} = 'committed'"
    compactions = conn.execute(
        f"SELECT c.txn_id FROM {unseen} {join} compactions c ON c.txn_id = t.txn_id "
        f"WHERE {committed} AND {hint('c.table_id')} = ?", (*parameters, table_id))
    overwrites = conn.execute(
        f"SELECT c.txn_id FROM {unseen} {join} components c ON c.txn_id = t.txn_id "
        f"WHERE {committed} AND {hint('c.table_id')} = ? AND "
        f"{hint('c.operation')} = 'overwrite'", (*parameters, table_id))
    return sorted({int(r[0]) for r in compactions} | {int(r[0]) for r in overwrites})


def live_snapshots(conn: Session, table_id: int, table: str, now: int
                   ) -> list[tuple[ValidTxnList, ValidWriteIdList]]:
    """Snapshots a reader may still read ``table`` with, as this store records them: the
    unexpired leases of its ``leases`` table (PostgreSQL's lease store; on SQLite the leases
    of clients from before the lease file, ``sqlite_leases``) and the open txns'."""
    out = leases.live(conn, table_id, now)
    for row in conn.execute("SELECT txn_id, snapshot FROM txns WHERE state = 'open'"):
        snapshot = ValidTxnList.parse(row["snapshot"])
        out.append((snapshot, build_write_id_list(conn, table_id, table, snapshot,
                                                  row["txn_id"])))
    return out


def forget_aborted(conn: Session, table_id: int, write_ids: Iterable[int]) -> int:
    """Drop the metadata of aborted writes whose files are all gone, so their write ids stop
    being exceptions in every snapshot (Hive's cleaner + housekeeper). Returns how many."""
    wanted = sorted(set(write_ids))
    if not wanted:
        return 0
    if conn.dialect.server_sequences:
        # rows are deleted only at or below PostgreSQL's txn floor (a missing row above it
        # reads as an open in flight: postgres_functions), so raise it first
        conn.execute("SELECT acid_raise_floor_v9(NULL, (SELECT last_value FROM acid_txn_ids))")
    rows = conn.execute(
        "SELECT w.txn_id, w.write_id FROM txn_write_ids w JOIN txns t ON t.txn_id = w.txn_id "
        f"WHERE w.table_id = ? AND t.state = 'aborted' AND {conn.dialect.in_list('w.write_id')}",
        (table_id, conn.dialect.list_parameter(wanted))).fetchall()
    for row in rows:
        conn.execute("DELETE FROM txn_write_ids WHERE txn_id = ? AND table_id = ?",
                     (row["txn_id"], table_id))
        conn.execute("DELETE FROM components WHERE txn_id = ? AND table_id = ?",
                     (row["txn_id"], table_id))
        # the version an aborted idempotent write meant to commit: it names the txn's row
        conn.execute("DELETE FROM txn_app_versions WHERE txn_id = ? AND table_id = ?",
                     (row["txn_id"], table_id))
        left = conn.execute("SELECT 1 FROM txn_write_ids WHERE txn_id = ? UNION ALL "
                            "SELECT 1 FROM components WHERE txn_id = ? UNION ALL "
                            "SELECT 1 FROM txn_app_versions WHERE txn_id = ?",
                            (row["txn_id"], row["txn_id"], row["txn_id"])).fetchone()
        if left is None:
            conn.execute("DELETE FROM locks WHERE txn_id = ?", (row["txn_id"],))
            # not above PostgreSQL's txn floor: a missing row there reads as an open in
            # flight (postgres_functions); SQLite has no floor row
            conn.execute("DELETE FROM txns WHERE txn_id = ? AND state = 'aborted' AND "
                         "kind = 'default' AND txn_id <= COALESCE((SELECT next_value FROM "
                         "sequences WHERE name = 'txn_floor'), txn_id)", (row["txn_id"],))
    return len(rows)
