"""Structured Streaming out of a table: ``spark.readStream.format("acidstore")``.

Each query runs with ``Trigger.AvailableNow`` into ``foreachBatch``, which records every
micro-batch's rows. A new stream emits the table's rows first (its snapshot), then the rows of
each later write; ``maxWritesPerTrigger`` caps the write ids one batch covers; restarted from
its checkpoint, a query emits only what was committed since. A write that updated or deleted
rows stops a plain stream with a typed error, unless ``skipChangeCommits``; with
``readChangeFeed`` the batches are the change feed ``Table.changes`` returns. A stream whose
next write ids a compaction folded away and the cleaner removed fails with
``NotEnoughHistoryError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from spark_support import make_rows, new_table, sorted_rows

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    InvalidInputError,
    NotEnoughHistoryError,
    UnknownOptionError,
    UnsupportedOperationError,
)
from acidstore.spark import typed_error
from compaction import Cleaner, compact

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamReader

Batch = list[tuple[Any, ...]]


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with acidstore.connect(tmp_path / "wh") as warehouse:
        yield warehouse


def reader(spark: SparkSession, t: Table, **options: str) -> DataStreamReader:
    stream = spark.readStream.format("acidstore").option("warehouse",
                                                         str(handle_of(t).core.location))
    for key, value in options.items():
        stream = stream.option(key, value)
    return stream


def batches(spark: SparkSession, t: Table, checkpoint: Path, **options: str) -> list[Batch]:
    """The rows of each micro-batch of a query of ``t`` run until nothing is left."""
    got: list[Batch] = []

    def record(df: DataFrame, _: int) -> None:
        got.append(sorted_rows(instants(r.asDict(recursive=True)) for r in df.collect()))

    reader(spark, t, **options).load(t.name).writeStream.foreachBatch(record) \
        .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True) \
        .start().awaitTermination()
    return got


def instants(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its timestamps as POSIX seconds: Spark collects a TIMESTAMP as a naive
    local time, a pyarrow table as an aware one."""
    return {k: v.timestamp() if isinstance(v, datetime) else v for k, v in row.items()}


class Inserts:
    """Inserts into a table, remembering each row by id for the expected batches."""

    def __init__(self, t: Table, *, partitioned: bool = True) -> None:
        self.t, self.partitioned = t, partitioned
        self.written: dict[int, dict[str, Any]] = {}

    def __call__(self, ids: range | list[int]) -> None:
        data = make_rows(ids, partitioned=self.partitioned)
        self.t.insert(data)
        self.written.update((row["id"], row) for row in data.to_pylist())

    def rows(self, ids: range | list[int]) -> Batch:
        return sorted_rows(self.written[i] for i in ids)


def test_snapshot_then_new_writes_batched_by_write_ids(spark: SparkSession, wh: Warehouse,
                                                       tmp_path: Path) -> None:
    t = new_table(wh)
    insert = Inserts(t)
    insert(range(3))                           # write id 1
    t.delete("id = 0")                         # 2: before the stream, part of its snapshot
    insert([10, 11])                           # 3
    checkpoint = tmp_path / "ck"
    # the snapshot as of write id 3, by the write that wrote each row: 1..2, then 3
    assert batches(spark, t, checkpoint, maxWritesPerTrigger="2") == [
        insert.rows([1, 2]), insert.rows([10, 11])]
    for ids in ([20], [21], [22]):             # 4, 5, 6
        insert(ids)
    assert batches(spark, t, checkpoint, maxWritesPerTrigger="2") == [
        insert.rows([20, 21]), insert.rows([22])]

    latest = tmp_path / "latest"
    # (Spark runs a first, empty, batch when a new query finds no data)
    assert batches(spark, t, latest, startingVersion="latest") in ([], [[]])
    insert([30])                               # 7
    assert batches(spark, t, latest, startingVersion="latest") == [insert.rows([30])]


def test_updates_and_deletes_stop_a_plain_stream(spark: SparkSession, wh: Warehouse,
                                                 tmp_path: Path) -> None:
    t = new_table(wh, partitioned=False, buckets=0)
    insert = Inserts(t, partitioned=False)
    insert(range(3))                                         # 1
    checkpoint = tmp_path / "ck"
    assert len(batches(spark, t, checkpoint)) == 1
    insert([5])                                              # 2
    t.update("id = 1", {"amount": "0"})                      # 3
    t.delete("id = 2")                                       # 4
    insert([6])                                              # 5
    with pytest.raises(StreamingQueryException) as caught:
        batches(spark, t, checkpoint)
    error = typed_error(caught.value)
    assert isinstance(error, UnsupportedOperationError)
    assert "write id 3" in str(error) and "skipChangeCommits" in str(error)
    # write 2 went out before the stream stopped; 3 and 4 pass in one empty batch
    assert batches(spark, t, checkpoint, skipChangeCommits="true") == [[], insert.rows([6])]


def test_change_feed_batches_are_the_tables_feed(spark: SparkSession, wh: Warehouse,
                                                 tmp_path: Path) -> None:
    t = new_table(wh)
    t.insert(make_rows(range(6)))                            # 1
    t.update("id = 1", {"amount": "amount + 1"})             # 2
    t.delete("id in (2, 3)")                                 # 3
    t.insert(make_rows([9]))                                 # 4
    got = batches(spark, t, tmp_path / "ck", readChangeFeed="true", startingVersion="2",
                  maxWritesPerTrigger="2")
    feed = t.changes(2, 4)
    assert len(got) == 2
    assert sorted([r for batch in got for r in batch], key=repr) == sorted_rows(
        instants(r) for r in feed.to_pylist())
    assert {r[4] for r in got[0]} == {"update_preimage", "update_postimage", "delete"}

    # without a starting version: the snapshot's rows as inserts, each of the write that
    # wrote it (the rows write 2 updated, of write 2)
    first = batches(spark, t, tmp_path / "all", readChangeFeed="true")
    assert [(r[0], r[4], r[5]) for r in first[0]] == sorted(
        [(i, "insert", 2 if i == 1 else 4 if i == 9 else 1) for i in (0, 1, 4, 5, 9)],
        key=repr)


def test_history_gone_under_the_stream_is_a_typed_error(spark: SparkSession, wh: Warehouse,
                                                        tmp_path: Path) -> None:
    t = new_table(wh, partitioned=False, buckets=0)
    t.insert(make_rows(range(3), partitioned=False))
    checkpoint = tmp_path / "ck"
    assert len(batches(spark, t, checkpoint)) == 1
    t.insert(make_rows([5], partitioned=False))              # 2
    t.delete("id = 0")                                       # 3
    compact(t, "major")
    Cleaner(wh, retention_seconds=0).run()
    with pytest.raises(StreamingQueryException) as caught:
        batches(spark, t, checkpoint)
    error = typed_error(caught.value)
    assert isinstance(error, NotEnoughHistoryError)
    assert f"the stream of {t.name} cannot read write ids 2 to 2" in str(error)


def test_stream_options_are_checked(spark: SparkSession, wh: Warehouse) -> None:
    t = wh.create_table("db.t", pa.schema([("id", pa.int64())]))
    read = spark.read.format("acidstore").option("warehouse", str(wh.location))
    with pytest.raises(Exception) as caught:  # a batch read, refused when it runs
        read.option("maxWritesPerTrigger", "2").load(t.name).collect()
    assert isinstance(typed_error(caught.value), UnsupportedOperationError)
    assert "spark.readStream" in str(typed_error(caught.value))
    for key, value in (("maxWritesPerTrigger", "0"), ("startingVersion", "soon"),
                       ("readChangeFeed", "maybe")):
        with pytest.raises(InvalidInputError, match=key):
            reader(spark, t, **{key: value}).load(t.name)
    with pytest.raises(InvalidInputError, match="do not go together"):
        reader(spark, t, readChangeFeed="true", skipChangeCommits="true").load(t.name)
    with pytest.raises(UnknownOptionError, match="asof"):
        reader(spark, t, startingVersion="1", asOf="1").load(t.name)
