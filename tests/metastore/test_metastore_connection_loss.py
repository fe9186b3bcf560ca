"""A PostgreSQL metastore connection lost before a commit: the write did not land, the error
says so (``MetastoreConnectionError``, a ``CommitFailedError``), and the next call works.

The server really ends the client's backends (``pg_terminate_backend``), as a restart, a
failover or a network cut between calls does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest

import acidstore
from acidstore.errors import CommitFailedError, MetastoreConnectionError
from benchmarks.postgres_server import PostgresServer

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture(name="place")
def place_fixture(postgres_server: PostgresServer, tmp_path: Path
                  ) -> Iterator[tuple[acidstore.Warehouse, str]]:
    url = postgres_server.new_store()
    with acidstore.connect(str(tmp_path / "wh"), metastore=url) as wh:
        yield wh, url


def _cut(url: str) -> int:
    """End every other backend of the metastore's clients on the server."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'acidstore' AND pid <> pg_backend_pid()").fetchall()
    return len(rows)


def _ids(table: acidstore.Table) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def test_a_lost_connection_before_a_write_is_typed_and_safe_to_retry(
        place: tuple[acidstore.Warehouse, str]) -> None:
    wh, url = place
    table = wh.create_table("db.t", SCHEMA)
    table.insert(pa.table({"id": [1]}))
    assert _cut(url) >= 1
    with pytest.raises(MetastoreConnectionError, match="nothing of the call was committed"):
        table.insert(pa.table({"id": [2]}))
    assert _ids(table) == [1]
    table.insert(pa.table({"id": [2]}))  # the same write again: the client reconnected
    assert _ids(table) == [1, 2]


def test_a_lost_connection_inside_a_transaction_aborts_it(
        place: tuple[acidstore.Warehouse, str]) -> None:
    wh, url = place
    table = wh.create_table("db.t", SCHEMA, partition_by=None)
    table.insert(pa.table({"id": [1, 2]}))
    with pytest.raises(CommitFailedError) as caught, wh.transaction() as txn:
        txn.table("db.t").insert(pa.table({"id": [3]}))
        _cut(url)
        txn.table("db.t").delete("id = 1")
    assert isinstance(caught.value, MetastoreConnectionError)
    assert _ids(table) == [1, 2]
    states = {r.txn_id: r.state for r in wh.metastore.show_transactions()}
    assert states[txn.txn_id] == "aborted"
    assert wh.fsck().num_rows == 0
