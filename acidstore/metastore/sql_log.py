"""The commit log of one table's components, read in one snapshot (layer L2): what
``CommitLog.committed_log`` returns on SQL, for a backend whose commit sequence numbers are
seen in order (SQLite: one database write lock, and a read is one WAL snapshot)."""

from __future__ import annotations

from acidstore.metastore import sql_txn as txns
from acidstore.metastore.records import ComponentLog, LoggedComponent
from acidstore.metastore.sql import Session

__all__ = ["committed_log"]


def committed_log(conn: Session, table_id: int, *, min_write_id: int = 0,
                  after_seq: int | None = None) -> ComponentLog:
    """See ``CommitLog.committed_log``; ``conn`` must be inside one read transaction, so
    that the sequence read here and the rows agree."""
    seq = txns.peek_sequence(conn, "commit") - 1
    hint, join = conn.dialect.hint, conn.dialect.forced_join
    if after_seq is not None:
        # driven by the commit_seq index: the commits since, however long the history
        rows = conn.execute(
            f"SELECT c.* FROM txns t {join} components c ON c.txn_id = t.txn_id "
            f"WHERE t.commit_seq > ? AND t.commit_seq <= ? AND {hint('t.state')} = "
            f"'committed' AND {hint('c.table_id')} = ?",
            (after_seq, seq, table_id)).fetchall()
    elif min_write_id > 0:
        # the (table_id, write_id) index of txn_write_ids, as committed_components
        rows = conn.execute(
            f"SELECT c.* FROM txn_write_ids w {join} components c ON c.txn_id = w.txn_id "
            f"{join} txns t ON t.txn_id = c.txn_id WHERE w.table_id = ? AND w.write_id >= ? "
            f"AND {hint('c.table_id')} = w.table_id AND {hint('t.state')} = 'committed'",
            (table_id, min_write_id)).fetchall()
    else:
        rows = conn.execute(
            "SELECT c.* FROM components c JOIN txns t ON t.txn_id = c.txn_id "
            "WHERE c.table_id = ? AND t.state = 'committed'", (table_id,)).fetchall()
    ordered = sorted(rows, key=lambda row: (row["txn_id"], row["component_id"]))
    return ComponentLog(table_id, seq, tuple(
        LoggedComponent(row["txn_id"], row["component_id"], txns.component_of(row))
        for row in ordered))
