"""``Table.rename_column`` and ``Table.drop_columns``: Iceberg's semantics over positional ORC.

No file is rewritten (the bucket files' bytes are unchanged by either change); rows written
before read correctly under the new schema through every embedded path (vectorized and merge
readers, filters, time travel, UPDATE/DELETE/MERGE, minor and major compaction); a dropped
column re-added later reads NULL for the rows written before (no resurrection, compaction
included); what cannot be renamed or dropped is refused naming the table and column with
nothing changed; a writer that planned against the old schema fails with
``MetadataChangedError``. Runs on both metastores.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import InvalidInputError, MetadataChangedError
from acidstore.read.scan import Scan

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64()),
                    ("c", pa.float64()), ("k", pa.int32()), ("p", pa.string())])


def _rows(*ids: int, p: str = "x") -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": i, "a": f"a{i}", "b": i * 10, "c": i / 2, "k": i % 3, "p": p} for i in ids],
        schema=SCHEMA)


def _read(t: Table, **kwargs: Any) -> list[dict[str, Any]]:
    return sorted(t.to_arrow(**kwargs).to_pylist(), key=lambda r: r["id"])


def _file_digests(t: Table) -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(t.location):
        for f in files:
            if f.startswith("bucket_"):
                path = Path(d) / f
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def wh(store_wh: Warehouse) -> Warehouse:
    """A warehouse on each metastore (tests/api/conftest.py)."""
    return store_wh


@pytest.fixture
def table(wh: Warehouse) -> Table:
    t = wh.create_table("db.t", SCHEMA, partition_by=["p"], bucket_by=["k"], buckets=2)
    t.insert(_rows(1, 2, 3))
    t.insert(_rows(4, 5, p="y"))
    return t


def test_rename_reads_old_files_under_the_new_name_without_rewriting(table: Table,
                                                                      wh: Warehouse) -> None:
    files = _file_digests(table)
    table.rename_column("a", "title")
    assert table.schema.names == ["id", "title", "b", "c", "k", "p"]
    assert _file_digests(table) == files
    expected = [{"id": i, "title": f"a{i}", "b": i * 10, "c": i / 2, "k": i % 3,
                 "p": "x" if i <= 3 else "y"} for i in range(1, 6)]
    fresh = wh.table("db.t")
    assert fresh.schema == table.schema
    assert _read(fresh) == expected
    assert _read(fresh, columns=["id", "title"], filter="title = 'a2' or title = 'a5'") == [
        {"id": 2, "title": "a2"}, {"id": 5, "title": "a5"}]
    assert _read(fresh, as_of=1) == expected[:3]
    with pytest.raises(InvalidInputError, match="unknown column 'a'"):
        fresh.to_arrow(columns=["a"])


def test_rename_of_a_bucketing_column_keeps_the_bucketing(table: Table, wh: Warehouse) -> None:
    table.rename_column("k", "key")
    fresh = wh.table("db.t")
    assert wh.metastore.get_table("db.t").bucket_by == ("key",)
    fresh.insert(pa.table({"id": [6], "a": ["a6"], "b": [60], "c": [3.0],
                           "key": pa.array([0], pa.int32()), "p": ["x"]}))
    assert [r["id"] for r in _read(fresh, filter="key = 0")] == [3, 6]
    assert sorted(r["id"] for r in merge_read(fresh).to_pylist()) == [1, 2, 3, 4, 5, 6]


def merge_read(t: Table) -> pa.Table:
    """The table through the streaming merge reader (``to_arrow`` uses the vectorized one)."""
    handle = handle_of(t)
    txns, write_ids = handle.read_snapshot()
    info = handle.info
    return Scan(handle.filesystem, handle.partition_dirs(), write_ids, txns,
                schema=info.row_schema, partition_schema=info.partition_schema,
                reader="merge").to_table()


def test_drop_hides_the_column_and_a_readded_one_reads_null(table: Table,
                                                            wh: Warehouse) -> None:
    files = _file_digests(table)
    table.drop_columns(["b", "c"])
    assert table.schema.names == ["id", "a", "k", "p"]
    assert _file_digests(table) == files
    assert _read(table, columns=["id", "a"]) == [{"id": i, "a": f"a{i}"} for i in range(1, 6)]
    for name in ("b", "c"):
        with pytest.raises(InvalidInputError, match=f"unknown column '{name}'"):
            table.to_arrow(columns=[name])
    with pytest.raises(InvalidInputError):
        table.to_arrow(filter="b = 10")
    # written after the drop: no value for b
    table.insert(pa.table({"id": [6], "a": ["a6"], "k": pa.array([0], pa.int32()),
                           "p": ["x"]}))
    # re-added under the same name: a new column, NULL for every row written before
    table.add_columns(pa.schema([("b", pa.string())]))
    table.insert(pa.table({"id": [7], "a": ["a7"], "k": pa.array([1], pa.int32()),
                           "p": ["y"], "b": ["seven"]}))
    expected = {i: None for i in range(1, 7)} | {7: "seven"}
    for reader_table in (table, wh.table("db.t")):
        assert {r["id"]: r["b"] for r in _read(reader_table)} == expected
        assert [r["id"] for r in _read(reader_table, filter="b is null")] == list(range(1, 7))
    assert {r["id"]: r["b"] for r in merge_read(table).to_pylist()} == expected
    assert {r["id"]: r["b"] for r in _read(table, as_of=1)} == {1: None, 2: None, 3: None}
    # compaction neither brings the old values back nor loses the new one
    for kind in ("minor", "major"):
        table.optimize(kind)
        assert {r["id"]: r["b"] for r in _read(table)} == expected


def test_statements_after_changes_keep_every_value(table: Table) -> None:
    table.rename_column("a", "name")
    table.drop_columns(["c"])
    table.update("id = 2", new_values={"name": "two", "b": 22})
    table.delete("id = 4")
    table.merge(pa.table({"id": [1, 9], "name": ["one", "nine"], "b": [11, 99],
                          "k": pa.array([1, 0], pa.int32()), "p": ["x", "y"]}),
                "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    expected: list[dict[str, Any]] = [
        {"id": 1, "name": "one", "b": 11, "k": 1, "p": "x"},
        {"id": 2, "name": "two", "b": 22, "k": 2, "p": "x"},
        {"id": 3, "name": "a3", "b": 30, "k": 0, "p": "x"},
        {"id": 5, "name": "a5", "b": 50, "k": 2, "p": "y"},
        {"id": 9, "name": "nine", "b": 99, "k": 0, "p": "y"},
    ]
    assert _read(table) == expected
    assert sorted(merge_read(table).to_pylist(), key=lambda r: r["id"]) == expected
    assert _read(table, filter="b >= 22") == [r for r in expected if r["b"] >= 22]
    table.optimize("minor")
    assert _read(table) == expected
    table.optimize("major")
    assert _read(table) == expected


def test_refusals_name_the_table_and_column_and_change_nothing(table: Table,
                                                              wh: Warehouse) -> None:
    before = wh.metastore.get_table("db.t")
    cases: list[tuple[Callable[[], None], str]] = [
        (lambda: table.rename_column("p", "q"), "partition column"),
        (lambda: table.rename_column("nope", "q"), "has no such column"),
        (lambda: table.rename_column("a", "B"), "already has a column"),
        (lambda: table.rename_column("a", "p"), "already has a column"),
        (lambda: table.rename_column("a", "__acid_x"), "reserved"),
        (lambda: table.rename_column("a", "row__id"), "reserved"),
        (lambda: table.rename_column("a", "bad name"), "letters, digits"),
        (lambda: table.drop_columns(["p"]), "partition column"),
        (lambda: table.drop_columns(["k"]), "bucketed by it"),
        (lambda: table.drop_columns(["a", "A"]), "names a column twice"),
        (lambda: table.drop_columns([]), "non-empty list"),
        (lambda: table.drop_columns("a"), "not the string"),
        (lambda: table.drop_columns(["nope"]), "has no such column"),
    ]
    for call, message in cases:
        with pytest.raises(InvalidInputError, match=message) as caught:
            call()
        assert "db.t" in str(caught.value)
    assert wh.metastore.get_table("db.t") == before


def test_every_user_column_cannot_be_dropped(wh: Warehouse) -> None:
    t = wh.create_table("db.small", pa.schema([("id", pa.int64()), ("p", pa.string())]),
                        partition_by=["p"])
    with pytest.raises(InvalidInputError, match=r"cannot drop every column of db\.small"):
        t.drop_columns(["id"])


def test_a_renamed_column_can_take_a_dropped_columns_name(table: Table) -> None:
    table.drop_columns(["b"])
    table.rename_column("c", "b")  # b is free again: c's values, under the name b
    assert {r["id"]: r["b"] for r in _read(table)} == {i: i / 2 for i in range(1, 6)}
    table.rename_column("A", "a_renamed")  # any case names the old column
    assert "a_renamed" in table.schema.names


def test_a_writer_planned_before_a_change_fails_with_nothing_landed(table: Table,
                                                                    wh: Warehouse) -> None:
    changes: list[Callable[[], None]] = [lambda: table.rename_column("a", "z"),
                                         lambda: table.drop_columns(["c"])]
    for change in changes:
        txn = wh.transaction()
        stale = txn.table("db.t")
        stale.insert(pa.table({"id": [50], "k": pa.array([0], pa.int32()), "p": ["x"]}))
        change()
        with pytest.raises(MetadataChangedError):
            txn.commit()
        assert 50 not in [r["id"] for r in _read(table)]


def test_changes_inside_a_transaction_are_refused(table: Table, wh: Warehouse) -> None:
    with wh.transaction() as txn:
        with pytest.raises(InvalidInputError, match="metastore transaction of its own"):
            txn.table("db.t").rename_column("a", "z")
        with pytest.raises(InvalidInputError, match="metastore transaction of its own"):
            txn.table("db.t").drop_columns(["c"])
