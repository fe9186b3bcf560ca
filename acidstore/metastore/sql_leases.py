"""Reader leases in the SQL metastores: the snapshots the cleaner must keep readable.

Functions over one ``Session`` inside the caller's transaction (the backend supplies it, and
the table's id); times are microseconds since the epoch.
"""

from __future__ import annotations

from acidstore.errors import TransactionStateError
from acidstore.metastore.records import LeaseInfo
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_schema import from_micros
from acidstore.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["acquire", "active", "release", "renew"]


def acquire(conn: Session, table_id: int, snapshot: ValidTxnList,
            write_ids: ValidWriteIdList, *, now: int, ttl: int) -> int:
    """A new lease on ``snapshot`` until ``now + ttl`` (expired leases are dropped first)."""
    conn.execute("DELETE FROM leases WHERE expires <= ?", (now,))
    cursor = conn.execute(
        "INSERT INTO leases (table_id, snapshot, write_ids, acquired, expires) "
        "VALUES (?, ?, ?, ?, ?) RETURNING lease_id",
        (table_id, str(snapshot), str(write_ids), now, now + ttl))
    return int(cursor.fetchone()[0])


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
