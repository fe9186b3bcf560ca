"""Schema evolution (issue 15): ``Table.add_columns`` appends nullable columns; files written
before read them as NULL on every reader (vectorized, merge, Spark) and through compaction;
a writer that planned against the old schema fails at commit with ``MetadataChangedError``."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from spark_support import arrow_rows, spark_rows, to_spark

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    InvalidInputError,
    MetadataChangedError,
    SchemaMismatchError,
    WriteConflictError,
)
from acidstore.read.scan import Scan, table_partitions
from compaction import compact

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])
NEW = pa.schema([("score", pa.float64()), ("tags", pa.list_(pa.string()))])


def rows(ids: range, **extra: list[Any]) -> pa.Table:
    data: dict[str, Any] = {"id": list(ids), "name": [f"n{i}" for i in ids],
                            "dt": ["a" if i % 2 else "b" for i in ids], **extra}
    return pa.table(data)


def evolved(wh: Warehouse, *, buckets: int = 2) -> Table:
    """Write ids 1-2 before the new columns (an insert, an update), 3-4 after."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=buckets)
    t.insert(rows(range(6)))
    t.update("id = 1", {"name": "'one'"})
    t.add_columns(NEW)
    t.insert(rows(range(10, 12), score=[1.5, None], tags=[["x"], []]))
    t.update("id IN (2, 10)", {"score": "score + 1", "tags": "['u']"})
    return t


EXPECTED = {0: ("n0", None, None), 1: ("one", None, None), 2: ("n2", None, ["u"]),
            3: ("n3", None, None), 4: ("n4", None, None), 5: ("n5", None, None),
            10: ("n10", 2.5, ["u"]), 11: ("n11", None, [])}


def by_id(table: pa.Table) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: (r["name"], r["score"], r["tags"]) for r in table.to_pylist()}


def merge_read(t: Table) -> pa.Table:
    txns, write_ids = handle_of(t).read_snapshot()
    partitions = table_partitions(handle_of(t).filesystem, t.location, ["dt"])
    info = handle_of(t).info
    return Scan(handle_of(t).filesystem, partitions, write_ids, txns, schema=info.schema,
                partition_schema=info.partition_schema, reader="merge").to_table()


def test_old_files_read_the_new_columns_as_nulls(wh: Warehouse) -> None:
    t = evolved(wh)
    assert t.schema.names == ["id", "name", "score", "tags", "dt"]
    assert by_id(t.to_arrow()) == EXPECTED
    assert by_id(merge_read(t)) == EXPECTED  # the streaming merge reader agrees
    again = acidstore.connect(wh.location).table("db.t")  # a fresh client sees them too
    assert by_id(again.to_arrow(filter="score IS NULL")) == {
        k: v for k, v in EXPECTED.items() if v[1] is None}
    # the past reads with today's schema: the columns did not exist, so NULL
    past = t.to_arrow(as_of=2)
    assert past.schema.names == t.schema.names
    assert set(past.column("score").to_pylist()) == {None}
    assert history_operations(t) == ["insert", "update", "insert", "update"]


def history_operations(t: Table) -> list[str]:
    return [str(op) for op in t.history().column("operation").to_pylist()]


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_compaction_after_add_columns_keeps_rows_and_nulls(wh: Warehouse, kind: str) -> None:
    t = evolved(wh)
    compact(t, kind)  # type: ignore[arg-type]
    assert by_id(t.to_arrow()) == EXPECTED
    t.delete("id = 0")
    compact(t, "major")
    assert by_id(t.to_arrow()) == {k: v for k, v in EXPECTED.items() if k}


def test_bad_new_columns_are_refused(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    for columns, error, message in [
        (pa.schema([pa.field("x", pa.int32(), nullable=False)]), InvalidInputError,
         "must be nullable"),
        (pa.schema([("DT", pa.string())]), InvalidInputError, "already a column"),
        (pa.schema([("row__id", pa.string())]), InvalidInputError, "reserved"),
        (pa.table({"x": pa.nulls(1)}), SchemaMismatchError, "cannot tell the type"),
        ({"x": "int"}, InvalidInputError, "schema must be a pyarrow.Schema"),
    ]:
        with pytest.raises(error, match=message):
            t.add_columns(columns)
    assert t.schema == SCHEMA and handle_of(t).info.metadata_version == 0
    t.add_columns([pa.field("x", pa.int32())])  # a list of fields is a schema too
    t.add_columns(pa.table({"y": ["a"]}))       # as is data's
    assert t.schema.names == ["id", "name", "x", "y", "dt"]
    assert handle_of(t).info.metadata_version == 2
    with wh.transaction() as txn, pytest.raises(InvalidInputError, match="of its own"):
        txn.table("db.t").add_columns(pa.schema([("z", pa.int8())]))


def test_a_stale_table_object_writes_with_the_new_schema(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    other = acidstore.connect(wh.location)
    other.table("db.t").add_columns(NEW)
    # ``t`` was loaded before: its next statement takes the table's current schema, so
    # old-shaped rows commit with the new (nullable) columns NULL, never MetadataChangedError
    t.insert(rows(range(2)))
    t.insert(rows(range(2, 4), score=[1.0, 2.0], tags=[None, ["t"]]))
    assert t.schema.names[-3:] == ["score", "tags", "dt"]
    got = by_id(other.table("db.t").to_arrow())
    assert (got[1], got[3]) == (("n1", None, None), ("n3", 2.0, ["t"]))
    other.close()


@pytest.mark.parametrize("statement", ["insert", "update", "delete"])
def test_a_writer_that_raced_add_columns_fails_and_leaves_nothing(
        wh: Warehouse, statement: str) -> None:
    """Two clients: a transaction writes, another client adds a column, the commit fails."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(rows(range(4)))
    other = acidstore.connect(wh.location)
    with pytest.raises(MetadataChangedError, match="metadata changed") as caught, \
            wh.transaction() as txn:
        mine = txn.table("db.t")
        if statement == "insert":
            mine.insert(rows(range(10, 12)))
        elif statement == "update":
            mine.update("id = 1", {"name": "'x'"})
        else:
            mine.delete("id = 1")
        other.table("db.t").add_columns(NEW)
    assert isinstance(caught.value, WriteConflictError)  # did not land: retry
    assert by_id(t.to_arrow()) == {i: (f"n{i}", None, None) for i in range(4)}
    assert history_operations(t) == ["insert"]
    other.close()


def _add_columns_when_told(location: str, ready: Any, go: Any) -> None:
    ready.set()
    go.wait(60)
    with acidstore.connect(location) as wh:
        wh.table("db.t").add_columns(pa.schema([("extra", pa.int32())]))


def test_add_columns_from_another_process_fails_an_open_writer(tmp_path: Path) -> None:
    """The race across processes: the schema change commits while a write is in flight."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
        context = multiprocessing.get_context("spawn")
        ready, go = context.Event(), context.Event()
        process = context.Process(target=_add_columns_when_told,
                                  args=(str(tmp_path / "wh"), ready, go))
        process.start()
        try:
            assert ready.wait(60)
            with pytest.raises(MetadataChangedError), wh.transaction() as txn:
                txn.table("db.t").insert(rows(range(3)))
                go.set()
                process.join(60)
                assert process.exitcode == 0
        finally:
            go.set()
            process.join(60)
        assert t.to_arrow().num_rows == 0
        t.insert(rows(range(3), extra=[1, 2, 3]))  # a retry with the new schema lands
        assert sorted(t.to_arrow().column("extra").to_pylist()) == [1, 2, 3]


def test_spark_reads_old_files_with_nulls_and_updates_them(spark: SparkSession,
                                                          wh: Warehouse) -> None:
    from acidstore.spark import AcidTable

    t = evolved(wh)
    at = AcidTable.forName(spark, "db.t", warehouse=str(wh.location))
    assert spark_rows(at.toDF()) == arrow_rows(t.to_arrow())
    assert spark_rows(at.toDF(as_of=2)) == arrow_rows(t.to_arrow(as_of=2))
    at.update("id = 3", {"score": "7.0"})
    assert by_id(t.to_arrow(filter="id = 3")) == {3: ("n3", 7.0, None)}
    new = rows(range(20, 21), score=[0.5], tags=pa.array([None], pa.list_(pa.string())))
    to_spark(spark, new).write.format("acidstore").option("warehouse", str(wh.location)) \
        .mode("append").save("db.t")
    assert by_id(t.to_arrow(filter="id = 20")) == {20: ("n20", 0.5, None)}
