"""The SQLite metastore's own facts, beside the contract every backend passes
(``test_metastore_contract.py``): WAL and a versioned schema, in-place upgrades of older
files, refused in-memory databases and closed handles, and state that survives reopening."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest
from metastore_support import begin, new_table, sqlite_steps, write

from acidstore.errors import InvalidInputError, MetastoreError
from acidstore.metastore import SqliteMetastore
from acidstore.metastore.sql_schema import SCHEMA_VERSION
from benchmarks.metastore import insert_cycle


def test_sqlite_uses_wal_and_a_versioned_schema(tmp_path: Path) -> None:
    path = tmp_path / "ms.db"
    SqliteMetastore(path).close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("SELECT value FROM meta WHERE name = 'schema_version'"
                           ).fetchone()[0] == str(SCHEMA_VERSION)
        raw.execute("UPDATE meta SET value = '99' WHERE name = 'schema_version'")
    with pytest.raises(MetastoreError, match="schema version 99"):
        SqliteMetastore(path)


def test_sqlite_upgrades_a_version_1_file_in_place(tmp_path: Path) -> None:
    """Version 2 added the compaction queue (3 a column of it): a version-1 warehouse keeps
    working."""
    path = tmp_path / "ms.db"
    SqliteMetastore(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TABLE compactions")
        raw.execute("ALTER TABLE tables DROP COLUMN metadata_version")
        raw.execute("UPDATE meta SET value = '1' WHERE name = 'schema_version'")
    store = SqliteMetastore(path)
    assert store.show_compactions() == []
    store.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT value FROM meta WHERE name = 'schema_version'"
                           ).fetchone()[0] == str(SCHEMA_VERSION)


def test_sqlite_version_3_locations_become_relative_to_the_warehouse_root(
        tmp_path: Path) -> None:
    """Up to version 3 a warehouse stored ``<root>/<db>.db/<table>``; version 4 keeps
    ``<db>.db/<table>``, so a copied warehouse resolves its tables against its own root.
    Other locations (placed elsewhere through the metastore) stay as they were."""
    path = tmp_path / "ms.db"
    with SqliteMetastore(path) as store:
        store.create_table(new_table("my_t", "sales", location="/old/wh/sales.db/my_t"))
        store.create_table(new_table("u", location="/elsewhere/u_data"))
        store.create_table(new_table("v", location="/old/wh/default.db/xv"))
    with sqlite3.connect(path) as raw:
        raw.execute("ALTER TABLE tables DROP COLUMN metadata_version")
        raw.execute("UPDATE meta SET value = '3' WHERE name = 'schema_version'")
    with SqliteMetastore(path) as store:
        assert [store.get_table(t).location for t in ("sales.my_t", "u", "v")] == [
            "sales.db/my_t", "/elsewhere/u_data", "/old/wh/default.db/xv"]


def test_sqlite_refuses_memory_databases_and_closed_handles(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        SqliteMetastore(":memory:")
    with pytest.raises(InvalidInputError):
        SqliteMetastore(tmp_path / "x.db", timeout_seconds=0)
    store = SqliteMetastore(tmp_path / "ms.db")
    store.close()
    with pytest.raises(MetastoreError, match="closed"):
        store.list_tables()


def test_sqlite_state_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "ms.db"
    with SqliteMetastore(path) as store:
        store.create_table(new_table())
        txn = begin(store)
        store.commit(txn, [write(store, txn, "insert")])
    with SqliteMetastore(path) as again:
        assert [e.write_id for e in again.history("t")] == [1]
        assert again.allocate_write_id(begin(again), "t") == 2


def test_a_commit_costs_the_same_after_thousands_of_commits(tmp_path: Path) -> None:
    """A commit's checks must look up what concerns it, not scan the partition's history:
    the INSERT OVERWRITE check once read every component of the partition, so each commit
    cost more than the last (8.6 ms at 12,000 commits, inside the write lock; 11x a young
    table's steps at 2,000). Counted in SQLite virtual-machine steps (deterministic), not
    time."""
    from acidstore.metastore import NewTable

    store = SqliteMetastore(tmp_path / "ms.db")
    table = "default.t"
    store.create_table(NewTable("default", "t", pa.schema([("id", pa.int64())]),
                                pa.schema([]), (), 0, {}, "/t"))
    conn = store._connection()
    conn.execute("PRAGMA synchronous = OFF")  # only to fill the history quickly

    def five() -> None:
        for _ in range(5):
            insert_cycle(store, table)

    def steps() -> int:
        return sqlite_steps(conn, five)

    for _ in range(20):
        insert_cycle(store, table)
    early = steps()
    for _ in range(1000):
        insert_cycle(store, table)
    late = steps()
    assert late < early * 1.2, (early, late)
