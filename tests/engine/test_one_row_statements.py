"""A single-statement DELETE or UPDATE of an unpartitioned table opens its transaction with
its planned write (``PlannedWrite``), as an insert does: two durable metastore transactions
(open, commit) instead of four, the directories recorded before any file exists."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import acidstore
from acidstore.api.table import Table
from acidstore.api.warehouse import Warehouse
from acidstore.engine import writes
from acidstore.metastore.sqlite import SqliteMetastore

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64())])


def _rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table({"id": ids, "v": ids.astype(np.float64)}, schema=SCHEMA)


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return acidstore.connect(tmp_path / "wh")


def _durable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names the caller of every durable metastore transaction (``_write``) from now on."""
    calls: list[str] = []
    real = SqliteMetastore._write

    def counted(self: SqliteMetastore, body: Callable[..., Any], **kwargs: Any) -> Any:
        calls.append(getattr(body, "__qualname__", "?"))
        return real(self, body, **kwargs)

    monkeypatch.setattr(SqliteMetastore, "_write", counted)
    return calls


@pytest.mark.parametrize("statement", ["update", "delete"])
def test_two_durable_metastore_transactions(wh: Warehouse, monkeypatch: pytest.MonkeyPatch,
                                            statement: str) -> None:
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=4)
    table.insert(_rows(100))
    parted = wh.create_table("db.p", SCHEMA.append(pa.field("dt", pa.string())),
                             partition_by=["dt"])
    parted.insert(_rows(10).append_column("dt", pa.array(["a"] * 10)))
    calls = _durable(monkeypatch)

    def run(t: Table, key: int) -> None:
        if statement == "update":
            t.update(f"id = {key}", {"v": "v + 1"})
        else:
            t.delete(f"id = {key}")

    run(table, 7)
    assert len(calls) == 2, calls  # open (allocating and recording), commit
    calls.clear()
    run(parted, 7)  # partitions are known only once planned: allocate and record apart
    assert len(calls) == 4, calls
    expected = _rows(100).to_pylist()
    if statement == "update":
        expected[7]["v"] += 1
    else:
        del expected[7]
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == expected


def test_a_failed_statement_leaves_its_planned_directories_to_clean(
        wh: Warehouse, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The open recorded the directories the statement then wrote: when it fails before its
    commit, the abort lists them for the cleaner and removes them."""
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=4)
    table.insert(_rows(100))

    def fail(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("dies after writing its files")

    monkeypatch.setattr(writes, "publish_change", fail)
    with pytest.raises(RuntimeError, match="dies after"):
        table.update("id = 7", {"v": "v + 1"})
    assert [c.directories for c in wh.metastore.aborted_components("db.t")] == [
        ("delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0001")]
    location = Path(table.location)
    assert sorted(p.name for p in location.iterdir() if not p.name.startswith(".")) == [
        "delta_0000001_0000001_0000"]
    monkeypatch.undo()
    assert table.update("id = 7", {"v": "v + 1"}).rows_updated == 1


def test_a_statement_that_matches_no_file_commits_its_write_id(wh: Warehouse) -> None:
    """Its open took the write id, so it commits a version that changed nothing, reported
    and listed in history as one whose files held no match."""
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=4)
    deleted = table.delete("id = 3")  # an empty table: no file can hold a match
    assert (deleted.write_id, deleted.rows_deleted, deleted.committed) == (1, 0, True)
    assert table.history().column("write_id").to_pylist() == [1]
    assert table.insert(_rows(5)).write_id == 2
    assert table.to_arrow().num_rows == 5


def test_a_transaction_allocates_its_write_id_once_per_table(
        wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each statement after the first in a multi-statement transaction takes the table's
    write id from the transaction, not from another durable metastore call."""
    wh.create_table("db.t", SCHEMA).insert(_rows(10))
    calls = _durable(monkeypatch)
    with wh.transaction() as txn:
        t = txn.table("db.t")
        t.delete("id = 1")
        t.update("id = 2", {"v": "v + 1"})
        t.insert(pa.table({"id": [100], "v": [100.0]}, schema=SCHEMA))
        t.delete("id = 3")
    allocations = [c for c in calls if "allocate_write_id" in c]
    assert len(allocations) == 1, calls
    rows = {r["id"]: r["v"] for r in wh.table("db.t").to_arrow().to_pylist()}
    assert sorted(rows) == [0, 2, 4, 5, 6, 7, 8, 9, 100] and rows[2] == 3.0


@pytest.mark.parametrize("statement", ["update", "delete", "insert"])
def test_the_commit_flushes_where_the_statement_wrote_without_a_catalog_read(
        wh: Warehouse, monkeypatch: pytest.MonkeyPatch, statement: str) -> None:
    """The statement's handle knows where it wrote: the commit flushes those directories
    (every file, each directory, the table's) and asks the metastore nothing about it."""
    from acidstore.engine.core import WarehouseCore
    from acidstore.io import durable

    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=4)
    table.insert(_rows(100))
    flushed: list[tuple[str, list[str]]] = []
    real = durable.flush_written

    def recording(fs: Any, location: str, directories: Any) -> None:
        flushed.append((location, sorted(directories)))
        real(fs, location, directories)

    def refused(self: WarehouseCore, name: str) -> str | None:
        raise AssertionError(f"the commit looked up where {name} is")

    monkeypatch.setattr(durable, "flush_written", recording)
    monkeypatch.setattr(WarehouseCore, "location_of", refused)
    monkeypatch.setattr(durable, "flush_enabled", lambda: True)  # whatever ACIDSTORE_FLUSH says
    if statement == "update":
        result = table.update("id = 7", {"v": "v + 1"})
    elif statement == "delete":
        result = table.delete("id = 7")
    else:
        result = table.insert(_rows(1))
    assert result.committed
    assert len(flushed) == 1 and flushed[0][0] == table.location
    assert flushed[0][1] and all((Path(table.location) / d).is_dir() for d in flushed[0][1])
