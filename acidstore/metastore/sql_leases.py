"""Reader leases in SQL: the snapshots the cleaner must keep readable.

Functions over one ``Session`` of the lease store: PostgreSQL's ``leases`` table, or SQLite's
lease file (``sqlite_leases``); the backend supplies the table's id. Each function is one
statement or two independent ones, so each runs as its own short transaction and no lease
call holds anything between statements. None of them waits for a writer of the catalogue:
the lease store takes no lock a commit, an open or a compaction takes (``leases`` has no
foreign key to ``tables``, whose rows commits lock), and expired leases that another lease
call is deleting are skipped, not waited for. Times are microseconds since the epoch.
"""

from __future__ import annotations

from acidstore.errors import TransactionStateError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore.records import LeaseInfo
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_schema import from_micros

__all__ = ["acquire", "active", "delete_expired", "live", "release", "renew"]


def acquire(conn: Session, table_id: int, snapshot: ValidTxnList,
            write_ids: ValidWriteIdList, *, now: int, ttl: int) -> int:
    """A new lease on ``snapshot`` until ``now + ttl`` (expired leases are dropped first)."""
    delete_expired(conn, now)
    # fetchall: the statement (and with it an autocommit write) ends with its last row
    (row,) = conn.execute(
        "INSERT INTO leases (table_id, snapshot, write_ids, acquired, expires) "
        "VALUES (?, ?, ?, ?, ?) RETURNING lease_id",
        (table_id, str(snapshot), str(write_ids), now, now + ttl)).fetchall()
    return int(row[0])


def delete_expired(conn: Session, now: int) -> None:
    """Drop the leases that expired by ``now``, except those another transaction holds (it
    is deleting them too): housekeeping that must never make a reader wait."""
    conn.execute("DELETE FROM leases WHERE lease_id IN (SELECT lease_id FROM leases WHERE "
                 f"expires <= ?{conn.dialect.skip_locked})", (now,))


def renew(conn: Session, lease_id: int, now: int, ttl: int) -> None:
    # An expired lease may already have let the cleaner delete files the snapshot needs, so
    # it cannot be revived: the reader must take a new snapshot.
    updated = conn.execute("UPDATE leases SET expires = ? WHERE lease_id = ? AND expires > ?",
                           (now + ttl, lease_id, now)).rowcount
    if updated != 1:
        raise TransactionStateError(f"lease {lease_id} is expired or unknown")


def release(conn: Session, lease_id: int) -> None:
    conn.execute("DELETE FROM leases WHERE lease_id = ?", (lease_id,))


def active(conn: Session, table_id: int, full_name: str, now: int
           ) -> list[LeaseInfo]:
    return [LeaseInfo(r["lease_id"], full_name, ValidTxnList.parse(r["snapshot"]),
                      ValidWriteIdList.parse(r["write_ids"]), from_micros(r["acquired"]),
                      from_micros(r["expires"]))
            for r in conn.execute("SELECT * FROM leases WHERE table_id = ? AND expires > ? "
                                  "ORDER BY lease_id", (table_id, now))]


def live(conn: Session, table_id: int, now: int
         ) -> list[tuple[ValidTxnList, ValidWriteIdList]]:
    """The snapshots of the unexpired leases of the table: what the cleaner keeps."""
    return [(ValidTxnList.parse(r["snapshot"]), ValidWriteIdList.parse(r["write_ids"]))
            for r in conn.execute("SELECT snapshot, write_ids FROM leases WHERE table_id = ? "
                                  "AND expires > ?", (table_id, now))]
