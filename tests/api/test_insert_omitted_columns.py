"""An insert may leave out nullable columns that are not partition columns: they read NULL.

Hive's INSERT with a column list and pyiceberg's optional fields do the same. A NOT NULL
column and a partition column (which would send every row to the NULL partition) are still
refused, naming the column and why, with nothing written. Runs on both metastores, through
``insert``, ``insert_overwrite`` and streaming ingest; ``tests/spark/test_spark_write.py``
covers Spark's writers.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from acidstore import Table, Warehouse
from acidstore.errors import SchemaMismatchError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                    ("tags", pa.list_(pa.string())), ("v", pa.int32()), ("dt", pa.string())])


@pytest.fixture
def wh(store_wh: Warehouse) -> Warehouse:
    """A warehouse on each metastore (tests/api/conftest.py)."""
    return store_wh


@pytest.fixture
def table(wh: Warehouse) -> Table:
    return wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["v"], buckets=2)


def _rows(t: Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in t.to_arrow().to_pylist())


def test_left_out_nullable_columns_read_null(table: Table) -> None:
    table.insert(pa.table({"id": [1, 2], "dt": ["a", "a"]}))
    table.insert(pa.table({"DT": ["b"], "name": ["x"], "ID": [3]}))  # any order and case
    assert _rows(table) == [(1, None, None, None, "a"), (2, None, None, None, "a"),
                            (3, "x", None, None, "b")]
    table.insert_overwrite(pa.table({"id": [4], "v": [7], "dt": ["a"]}))
    assert _rows(table) == [(3, "x", None, None, "b"), (4, None, None, 7, "a")]


@pytest.mark.parametrize(("data", "column", "why"), [
    (pa.table({"name": ["x"], "dt": ["a"]}), "id", "NOT NULL"),
    (pa.table({"id": [1], "name": ["x"]}), "dt", "a partition column"),
])
def test_not_null_and_partition_columns_cannot_be_left_out(
        table: Table, data: pa.Table, column: str, why: str) -> None:
    with pytest.raises(SchemaMismatchError, match=f"column '{column}' .*missing.*{why}"):
        table.insert(data)
    assert table.to_arrow().num_rows == 0
    assert table.history().num_rows == 0


def test_streaming_writes_fill_left_out_columns(wh: Warehouse, table: Table) -> None:
    with wh.streaming_connection("db.t", batch_size=2) as conn:
        conn.begin()
        conn.write(pa.table({"id": [1], "dt": ["a"]}))
        conn.write(pa.table({"id": [2], "tags": [["p", "q"]], "dt": ["b"]}))
        assert conn.commit().rows_inserted == 2
        conn.begin()
        with pytest.raises(SchemaMismatchError, match=r"'id'.*NOT NULL"):
            conn.write(pa.table({"name": ["x"], "dt": ["a"]}))
        conn.abort()
    assert _rows(table) == [(1, None, None, None, "a"), (2, None, ["p", "q"], None, "b")]
