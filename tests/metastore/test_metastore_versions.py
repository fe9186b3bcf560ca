"""Metastore schema versions on both backends, and PostgreSQL at the public edges.

A store records its schema version in ``meta``. Opening an older one migrates it in place and
keeps every row; a newer or unknown one is refused with ``MetastoreVersionError`` and left
exactly as it was (the refusal rolls back, DDL included). The "old" stores are made by hand
here: a current store, taken back to what version 1 or 2 looked like with raw SQL.

Then PostgreSQL through ``acidstore.connect`` and the CLI, and its connection errors.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from metastore_support import (
    Backend,
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    begin,
    new_table,
    write,
)

import acidstore
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.cli.main import main
from acidstore.errors import InvalidInputError, MetastoreError, MetastoreVersionError
from acidstore.metastore import (
    CompactionOutput,
    Operation,
    OriginalFile,
    PostgresMetastore,
    StatementSummary,
)
from acidstore.metastore.postgres_calls import CatalogEntry, commit_arguments
from acidstore.metastore.sql_schema import SCHEMA_VERSION
from benchmarks.postgres_server import PostgresServer


@contextmanager
def raw(backend: Backend) -> Iterator[Any]:
    """A plain driver connection to the backend's store, committing on exit."""
    kind, target = backend.spec
    if kind == "sqlite":
        with sqlite3.connect(target) as conn:
            yield conn
        conn.close()
    else:
        import psycopg

        with psycopg.connect(target) as server:  # commits when the block ends cleanly
            yield server


def version(backend: Backend) -> str:
    with raw(backend) as conn:
        return str(conn.execute(
            "SELECT value FROM meta WHERE name = 'schema_version'").fetchone()[0])


def set_version(conn: Any, value: str) -> None:
    conn.execute(f"UPDATE meta SET value = '{value}' WHERE name = 'schema_version'")


def test_a_version_2_store_is_migrated_and_keeps_its_rows(backend: Backend) -> None:
    store = backend.open()
    store.create_table(new_table())
    txn = begin(store)
    store.commit(txn, [write(store, txn, "insert")])
    store.log_compaction("t", "", "major", "did not initiate", "nothing to do")
    store.close()
    with raw(backend) as conn:  # version 2: compactions had no cleaning_started yet
        conn.execute("ALTER TABLE compactions DROP COLUMN cleaning_started")
        conn.execute("ALTER TABLE tables DROP COLUMN metadata_version")
        set_version(conn, "2")

    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION)
        assert [e.write_id for e in again.history("t")] == [1]
        [entry] = again.show_compactions()
        assert (entry.state, entry.cleaning_started) == ("did not initiate", None)
        assert again.allocate_write_id(begin(again), "t") == 2
    finally:
        again.close()


def test_a_version_1_store_gets_the_compaction_queue(backend: Backend) -> None:
    backend.open().close()
    with raw(backend) as conn:
        conn.execute("DROP TABLE compactions")
        conn.execute("ALTER TABLE tables DROP COLUMN metadata_version")
        set_version(conn, "1")
    store = backend.open()
    try:
        assert store.show_compactions() == []
        assert version(backend) == str(SCHEMA_VERSION)
    finally:
        store.close()


def one_committed_write(backend: Backend) -> None:
    """A current store with table ``t`` and one committed insert (write id 1)."""
    store = backend.open()
    store.create_table(new_table())
    txn = begin(store)
    store.commit(txn, [write(store, txn, "insert")])
    store.close()


def test_a_version_4_store_gets_metadata_versions(backend: Backend) -> None:
    one_committed_write(backend)
    with raw(backend) as conn:  # version 4: tables had no metadata_version
        conn.execute("ALTER TABLE tables DROP COLUMN metadata_version")
        set_version(conn, "4")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION)
        assert again.get_table("t").metadata_version == 0
        info = again.add_columns("t", pa.schema([("extra", pa.string())]))
        assert (info.metadata_version, info.schema.names[-1]) == (1, "extra")
        assert [e.write_id for e in again.history("t")] == [1]
    finally:
        again.close()


def test_a_version_5_store_records_compaction_outputs(backend: Backend) -> None:
    """Version 6 adds the record of compaction outputs (a new table); a compaction commit
    stores its directories with it, and only directories carrying its own ``_v<txn>``."""
    store = backend.open()
    store.create_table(new_table())
    txn = begin(store)
    store.commit(txn, [write(store, txn, "insert")])
    store.close()
    with raw(backend) as conn:
        conn.execute("DROP TABLE compaction_outputs")
        set_version(conn, "5")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION)
        assert again.compaction_outputs("t") == []
        compaction = again.open_transaction(user="tester", host="h", kind="compaction").txn_id
        bad = CompactionOutput("t", "", "base_0000001_v0000099", 1, 3, 10, (("bucket_00000", 3),))
        with pytest.raises(InvalidInputError, match="_v"):
            again.commit(compaction, [], outputs=[bad])
        assert again.commit_info(compaction) is None  # refused before anything was written
        good = CompactionOutput("t", "", f"base_0000001_v{compaction:07d}", 1, 3, 10,
                                (("bucket_00000", 3),))
        again.commit(compaction, [], outputs=[good])
        assert again.compaction_outputs("t") == [CompactionOutput(
            "default.t", "", good.directory, 1, 3, 10, (("bucket_00000", 3),), compaction)]
        assert [(e.write_id, e.operation) for e in again.history("t")] == [
            (1, "insert"), (None, "compaction_major")]
    finally:
        again.close()


def test_a_version_6_store_gets_app_versions(backend: Backend) -> None:
    one_committed_write(backend)
    with raw(backend) as conn:  # version 6: no idempotent writes yet
        conn.execute("DROP TABLE app_versions")
        conn.execute("DROP TABLE txn_app_versions")
        set_version(conn, "6")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION) == "16"
        assert again.app_versions("t") == []
        txn = begin(again)
        again.record_app_version(txn, "t", "job", 1)
        again.commit(txn, [write(again, txn, "insert")])
        assert [(a.app_id, a.version) for a in again.app_versions("t")] == [("job", 1)]
        assert [e.write_id for e in again.history("t")] == [1, 2]
    finally:
        again.close()


def test_a_version_9_store_gets_original_files(backend: Backend) -> None:
    one_committed_write(backend)
    with raw(backend) as conn:  # version 9: adopted originals had no record
        conn.execute("DROP TABLE original_files")
        set_version(conn, "9")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION)
        assert again.original_files("t") == []
        again.record_originals("t", [OriginalFile("", "000000_0", 42)])
        assert again.original_files("t") == [OriginalFile("", "000000_0", 42)]
        assert [e.write_id for e in again.history("t")] == [1]
    finally:
        again.close()


def test_a_version_10_store_records_bucket_files(backend: Backend) -> None:
    """Version 11 records each bucket file a write committed, with its bytes: on both
    backends, through the general commit and PostgreSQL's one-statement insert commit; the
    components committed before it read back with none (checked by count, as before)."""
    one_committed_write(backend)
    with raw(backend) as conn:  # version 10: components had no bucket_files
        conn.execute("ALTER TABLE components DROP COLUMN bucket_files")
        set_version(conn, "10")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION) == "16"
        files = (("delta_0000002_0000002_0000/bucket_00001", 880),)
        writes: tuple[tuple[Operation, int], ...] = (("insert", 2), ("delete", 3))
        for operation, write_id in writes:
            txn = begin(again)
            planned = write(again, txn, operation)
            assert planned.write_id == write_id
            again.commit(txn, [dataclasses.replace(planned, files=1, bytes=880,
                                                   bucket_files=files)])
        assert [c.bucket_files for c in again.committed_components("t")] == [
            None, files, files]
    finally:
        again.close()


def test_a_version_11_store_marks_its_tables_as_unrecorded(backend: Backend) -> None:
    """Version 12 tells tables whose original files ``original_files`` lists completely
    (created from it on) from older ones, which may have been adopted without a record:
    a migrated store's tables are the older kind, and tables created afterwards the new."""
    one_committed_write(backend)
    with raw(backend) as conn:  # version 11: no originals_recorded
        conn.execute("ALTER TABLE tables DROP COLUMN originals_recorded")
        set_version(conn, "11")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION) == "16"
        assert again.get_table("t").originals_recorded is False
        assert again.create_table(new_table("u")).originals_recorded is True
        assert again.get_table("u").originals_recorded is True
        assert [e.write_id for e in again.history("t")] == [1]
    finally:
        again.close()


def test_a_version_7_store_continues_its_counters(backend: Backend) -> None:
    """Version 8 moved PostgreSQL's txn ids and commit numbers to server sequences: a
    migrated store's must continue where its ``sequences`` rows stopped (an id handed out
    twice would merge two txns), and a version-7 client must refuse the store afterwards."""
    one_committed_write(backend)
    with raw(backend) as conn:  # version 7: the counters were rows, PostgreSQL had no functions
        if backend.kind == "postgresql":
            conn.execute("DROP SEQUENCE acid_txn_ids, acid_commit_seqs")
        conn.execute("DELETE FROM sequences WHERE name = 'txn_floor'")
        conn.execute("UPDATE sequences SET next_value = 40 WHERE name = 'txn'")
        conn.execute("UPDATE sequences SET next_value = 30 WHERE name = 'commit'")
        set_version(conn, "7")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION) == "16"
        txn = begin(again)
        assert txn == 40
        assert again.commit(txn, [write(again, txn, "insert")]).commit_seq == 30
        assert again.valid_txns().high_watermark == 40
        assert [e.write_id for e in again.history("t")] == [1, 2]
        assert [t.txn_id for t in again.show_transactions()] == [1, 40]
    finally:
        again.close()


def test_a_version_12_store_takes_commit_times_from_the_metastore(backend: Backend) -> None:
    """Version 13 assigns commit times inside the commit (rising with commit order, the
    latest found by the index ``txns_commit_times``) and records the warehouse a store
    serves: a migrated store serves none until a connect binds it, and its next commit is
    later than every earlier one, even one an older client stamped a minute ahead. On
    PostgreSQL a client connected before the migration still calls ``acid_commit_v9`` with
    its own time, which the server no longer takes."""
    one_committed_write(backend)
    with raw(backend) as conn:  # version 12: client times, no index, no binding
        conn.execute("DROP INDEX txns_commit_times")
        conn.execute("DROP INDEX compactions_by_txn")
        conn.execute("UPDATE txns SET finished = finished + 60000000 WHERE state = 'committed'")
        conn.execute("UPDATE history SET commit_time = commit_time + 60000000")
        if backend.kind == "postgresql":
            conn.execute("DROP FUNCTION acid_commit_v9(bigint, bigint, jsonb, jsonb)")
            conn.execute("DROP FUNCTION acid_commit_v13(bigint, jsonb, jsonb)")
        set_version(conn, "12")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION) == "16"
        assert again.warehouse_binding() is None
        txn = begin(again)
        info = again.commit(txn, [write(again, txn, "insert")])
        if backend.kind == "postgresql":
            old_client = begin(again)
            written = write(again, old_client, "insert")
            arguments = commit_arguments([written], {"default.t": CatalogEntry(
                again.get_table("t").table_id, "default", "t", ())})
            assert arguments is not None
            with raw(backend) as conn:  # what a version-12 client sends: its time, 0
                conn.execute("SELECT * FROM acid_commit_v9(%s, 0, %s::jsonb, %s::jsonb)",
                             (old_client, *arguments))
        times = [e.commit_time for e in again.history("t")]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert info.commit_time == times[1]
        with raw(backend) as conn:
            for index in ("txns_commit_times", "compactions_by_txn"):
                found = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?"
                    if backend.kind == "sqlite" else
                    "SELECT 1 FROM pg_indexes WHERE indexname = %s", (index,)).fetchone()
                assert found is not None, index
    finally:
        again.close()


def test_a_version_14_store_counts_updated_rows(backend: Backend) -> None:
    """Version 15 stores each history row's ``rows_updated``: rows committed before it read
    0, a commit naming its statements stores their counts, and on PostgreSQL a client
    connected before the migration still commits through ``acid_commit_v13`` (its rows name
    no statement: their components' operations, 0 updated)."""
    one_committed_write(backend)
    with raw(backend) as conn:  # version 14: history had no rows_updated
        conn.execute("ALTER TABLE history DROP COLUMN rows_updated")
        if backend.kind == "postgresql":
            conn.execute("DROP FUNCTION acid_commit_v15(bigint, jsonb, jsonb)")
        set_version(conn, "14")
    again = backend.open()
    try:
        assert version(backend) == str(SCHEMA_VERSION) == "16"
        txn = begin(again)
        updated = dataclasses.replace(write(again, txn, "update"), rows_inserted=2,
                                      rows_deleted=2)
        again.commit(txn, [updated], statements=[StatementSummary("t", "update",
                                                                  rows_updated=2)])
        if backend.kind == "postgresql":
            old_client = begin(again)
            written = dataclasses.replace(write(again, old_client, "insert"), rows_inserted=3)
            arguments = commit_arguments([written], {"default.t": CatalogEntry(
                again.get_table("t").table_id, "default", "t", ())})
            assert arguments is not None
            with raw(backend) as conn:  # what a version-14 client sends
                conn.execute("SELECT * FROM acid_commit_v13(%s, %s::jsonb, %s::jsonb)",
                             (old_client, *arguments))
        got = [(e.write_id, e.operation, e.rows_inserted, e.rows_updated, e.rows_deleted)
               for e in again.history("t")]
        assert got == [(1, "insert", 0, 0, 0), (2, "update", 0, 2, 0)] + (
            [(3, "insert", 3, 0, 0)] if backend.kind == "postgresql" else [])
    finally:
        again.close()


@pytest.mark.parametrize(("stored", "message"), [
    ("99", "schema version 99, newer than this acidstore supports"),
    ("x1", "unknown schema version 'x1'"),
])
def test_newer_or_unknown_versions_are_refused_untouched(backend: Backend, stored: str,
                                                         message: str) -> None:
    backend.open().close()
    with raw(backend) as conn:
        conn.execute("DROP TABLE leases")  # a current open would create it again
        set_version(conn, stored)
    with pytest.raises(MetastoreVersionError, match=message) as caught:
        backend.open()
    where = backend.spec[1] if backend.kind == "sqlite" else "postgresql://postgres@"
    assert where in str(caught.value)
    assert version(backend) == stored
    with raw(backend) as conn, pytest.raises(Exception, match="leases"):
        conn.execute("SELECT * FROM leases")


# --- PostgreSQL at the public edges -------------------------------------------------------


def test_connect_with_a_postgresql_url_runs_the_embedded_api(
        postgres_server: PostgresServer, tmp_path: Path) -> None:
    url = postgres_server.new_store()
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
    with acidstore.connect(tmp_path / "wh", metastore=url) as wh:
        assert isinstance(wh.metastore, PostgresMetastore)
        t = wh.create_table("db.t", schema, partition_by=["dt"])
        t.insert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["d1", "d1", "d2"]}))
        t.update("id = 2", {"v": "'B'"})
        t.delete("id = 3")
    assert not (tmp_path / "wh" / DEFAULT_METASTORE_FILE).exists()
    # a second client (as on another machine) sees the same catalog and commits
    with acidstore.connect(tmp_path / "wh", metastore=url) as other:
        t = other.table("db.t")
        assert sorted(t.to_arrow().select(["id", "v"]).to_pylist(), key=lambda r: r["id"]) \
            == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}]
        assert t.history().column("write_id").to_pylist() == [1, 2, 3]


def test_compact_command_takes_a_postgresql_metastore(
        postgres_server: PostgresServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = postgres_server.new_store()
    schema = pa.schema([("id", pa.int64())])
    with acidstore.connect(tmp_path / "wh", metastore=url) as wh:
        t = wh.create_table("db.c", schema)
        for i in range(3):
            t.insert(pa.table({"id": [i]}))
    assert main(["compact", "--warehouse", str(tmp_path / "wh"), "--metastore", url,
                 "--table", "db.c", "--kind", "major"]) == 0
    assert "base_0000003" in capsys.readouterr().out
    with acidstore.connect(tmp_path / "wh", metastore=url) as wh:
        assert sorted(wh.table("db.c").to_arrow()["id"].to_pylist()) == [0, 1, 2]


def test_postgresql_urls_and_unreachable_servers_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="postgresql://user@host:5432/dbname"):
        PostgresMetastore("mysql://u@h/db")
    with pytest.raises(InvalidInputError, match="unsupported metastore URL"):
        acidstore.connect(tmp_path / "wh", metastore="oracle://x")
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://alice:secret@127.0.0.1:{port}/meta"
    with pytest.raises(MetastoreError, match="cannot connect to the metastore "
                       f"postgresql://alice@127.0.0.1:{port}/meta") as caught:
        PostgresMetastore(url, connect_timeout_seconds=2)
    assert "secret" not in str(caught.value)


def test_the_readme_postgresql_example_runs_as_written(
        postgres_server: PostgresServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = readme.split("<!-- postgresql-example -->")[1].split("<!-- /postgresql-example -->")[0]
    code = block.strip().removeprefix("```python").removesuffix("```")
    monkeypatch.setenv("ACIDSTORE_METASTORE", postgres_server.new_store())
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "[{'id': 2, 'dt': '2026-11-22'}] 2"
