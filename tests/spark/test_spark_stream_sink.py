"""Structured Streaming into a table: ``df.writeStream.format("acidstore")``.

A file stream (JSON files the test writes) goes into a bucketed table. Each micro-batch is one
transaction with one write id, named ``streaming_insert`` in history, and an idempotent write
of the query (application ``spark-stream-<query id>``, version the batch id). Restarted from
its checkpoint, the query writes only the new input; a batch Spark runs again after a crash
that came between the table's commit and Spark's own record of it commits nothing. A commit
that fails after the tasks staged their files, and a Python worker killed under a task, leave
nothing visible and no staged file, and the restarted query lands every row exactly once.
Refused writes fail at ``start()`` with acidstore's typed errors.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_kill_support import WAIT_SECONDS, WorkerKiller, held
from spark_support import arrow_rows, new_table

import acidstore
from acidstore import Table, Warehouse
from acidstore.errors import (
    InvalidInputError,
    MetadataChangedError,
    SchemaMismatchError,
    TableNotFoundError,
    UnknownOptionError,
    UnsupportedOperationError,
)
from acidstore.format.layout import STAGING_DIR
from acidstore.spark import typed_error
from acidstore.spark.stream_sink import APP_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

INPUT = "id bigint, name string, amount bigint"


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with acidstore.connect(tmp_path / "wh") as warehouse:
        yield warehouse


def put(directory: Path, name: str, ids: Iterable[int]) -> None:
    """One input file of rows ``id, n<id>, id * 10``, renamed into place whole (the file
    source must never list it half-written)."""
    directory.mkdir(exist_ok=True)
    partial = directory / f".{name}.tmp"
    partial.write_text("".join(json.dumps({"id": i, "name": f"n{i}", "amount": i * 10}) + "\n"
                               for i in ids))
    partial.rename(directory / f"{name}.json")


def expected(ids: Iterable[int]) -> list[tuple[Any, ...]]:
    return sorted(((i, f"n{i}", i * 10) for i in ids), key=repr)


def stream(spark: SparkSession, source: Path, *, per_batch: int = 1) -> DataFrame:
    return spark.readStream.schema(INPUT).option("maxFilesPerTrigger", per_batch) \
        .json(str(source))


def start(df: DataFrame, wh: Warehouse, checkpoint: Path, table: str = "db.t",
          **options: str) -> StreamingQuery:
    return (df.writeStream.format("acidstore").option("warehouse", str(wh.location))
            .option("checkpointLocation", str(checkpoint)).options(**options)
            .trigger(availableNow=True).start(table))


def no_staging(t: Table) -> bool:
    return not (Path(t.location) / STAGING_DIR).exists()


def history(t: Table) -> list[tuple[Any, ...]]:
    return [(r["write_id"], r["operation"], r["rows_inserted"])
            for r in t.history().to_pylist()]


def states(wh: Warehouse) -> dict[str, int]:
    counts: dict[str, int] = {}
    for txn in wh.show_transactions().to_pylist():
        counts[txn["state"]] = counts.get(txn["state"], 0) + 1
    return counts


def test_each_batch_commits_once_across_restarts_and_replays(
        spark: SparkSession, wh: Warehouse, tmp_path: Path) -> None:
    t = new_table(wh, partitioned=False, buckets=2)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    put(source, "a", range(5))
    put(source, "b", range(5, 8))
    query = start(stream(spark, source), wh, checkpoint)
    query.awaitTermination()
    app = APP_PREFIX + query.id
    assert arrow_rows(t.to_arrow()) == expected(range(8))
    assert history(t) == [(1, "streaming_insert", 5), (2, "streaming_insert", 3)]
    assert [(a.app_id, a.version) for a in wh.metastore.app_versions(t.name)] == [(app, 1)]
    assert no_staging(t)

    put(source, "c", range(8, 10))  # restarted (through toTable): only the new file
    again = stream(spark, source).writeStream.format("acidstore") \
        .option("warehouse", str(wh.location)).option("checkpointLocation", str(checkpoint)) \
        .trigger(availableNow=True).toTable(t.name)
    again.awaitTermination()
    assert again.id == query.id
    assert arrow_rows(t.to_arrow()) == expected(range(10))
    assert history(t)[-1] == (3, "streaming_insert", 2)

    # the driver died after the table committed batch 2 and before Spark recorded it: the
    # restarted query runs batch 2 again, and the table holds its version already
    for record in ("2", ".2.crc"):  # Spark's record of batch 2, and its checksum
        (checkpoint / "commits" / record).unlink(missing_ok=True)
    before = states(wh)
    start(stream(spark, source), wh, checkpoint).awaitTermination()
    assert arrow_rows(t.to_arrow()) == expected(range(10))
    assert [(a.app_id, a.version) for a in wh.metastore.app_versions(t.name)] == [(app, 2)]
    assert len(history(t)) == 3
    assert states(wh) == {**before, "aborted": before.get("aborted", 0) + 1}
    assert no_staging(t)


def _attempt_staged(t: Table) -> Callable[[], bool]:
    """Whether a task attempt of the batch has staged a file (not only the batch's marker)."""
    root = Path(t.location) / STAGING_DIR
    return lambda: any(p.is_file() for p in root.glob("txn_*/attempt_*/**/*"))


def _held_stream(spark: SparkSession, source: Path, barrier: Path, value: int, *,
                 tasks: int) -> DataFrame:
    """``tasks`` tasks; the one with row ``value`` waits at ``barrier`` (``held``)."""
    return stream(spark, source).repartition(tasks) \
        .withColumn("id", held(barrier, value, F.col("id")))


def _held_setup(wh: Warehouse, tmp_path: Path, rows: int) -> tuple[Table, Path, Path]:
    """A bucketed table, an input file of ``rows`` rows, and a barrier directory."""
    t = new_table(wh, partitioned=False, buckets=2)
    source, barrier = tmp_path / "in", tmp_path / "barrier"
    barrier.mkdir()
    put(source, "a", range(rows))
    return t, source, barrier


def _failed(query: StreamingQuery) -> BaseException:
    with pytest.raises(StreamingQueryException) as caught:
        query.awaitTermination()
    return caught.value


def test_commit_failing_after_staging_leaves_nothing(spark: SparkSession, wh: Warehouse,
                                                     tmp_path: Path) -> None:
    t, source, barrier = _held_setup(wh, tmp_path, 10)

    def change_the_table() -> None:  # while a task holds, after the other one staged
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not (
                list(barrier.glob("held_*")) and _attempt_staged(t)()):
            time.sleep(0.02)
        t.add_columns(pa.schema([("note", pa.string())]))
        (barrier / "released").touch()

    changer = threading.Thread(target=change_the_table, daemon=True)
    changer.start()
    error = _failed(start(_held_stream(spark, source, barrier, 3, tasks=2), wh,
                          tmp_path / "ck"))
    changer.join(WAIT_SECONDS)
    assert isinstance(typed_error(error), MetadataChangedError)
    assert t.to_arrow().num_rows == 0
    assert no_staging(t)
    assert states(wh) == {"aborted": 1}

    start(stream(spark, source), wh, tmp_path / "ck").awaitTermination()
    assert arrow_rows(t.to_arrow(columns=["id", "name", "amount"])) == expected(range(10))
    assert t.to_arrow(columns=["note"]).column("note").null_count == 10


def test_killed_worker_mid_batch_then_restart(spark: SparkSession, wh: Warehouse,
                                              tmp_path: Path) -> None:
    t, source, barrier = _held_setup(wh, tmp_path, 12)
    killer = WorkerKiller(spark, barrier)  # the batch's one task: no message names its
    killer.start()  # transaction, whose marker in the staging area does
    _failed(start(_held_stream(spark, source, barrier, 4, tasks=1), wh, tmp_path / "ck"))
    killer.finish()
    assert t.to_arrow().num_rows == 0
    assert no_staging(t)
    assert states(wh) == {"aborted": 1}

    start(stream(spark, source), wh, tmp_path / "ck").awaitTermination()
    assert arrow_rows(t.to_arrow()) == expected(range(12))
    assert [r[1] for r in history(t)] == ["streaming_insert"]


@pytest.mark.parametrize(("change", "error"), [
    (lambda w: w.outputMode("update"), UnsupportedOperationError),
    (lambda w: w.outputMode("complete"), UnsupportedOperationError),
    (lambda w: w.option("txnAppId", "a").option("txnVersion", "1"), UnknownOptionError),
    (lambda w: w.option("mergeschema", "maybe"), InvalidInputError),
    (lambda w: w.partitionBy("name"), InvalidInputError),
], ids=["update", "complete", "txn-options", "bad-flag", "partitionBy"])
def test_refused_at_start(spark: SparkSession, wh: Warehouse, tmp_path: Path,
                          change: Callable[[Any], Any], error: type[Exception]) -> None:
    new_table(wh, partitioned=False, buckets=0)
    put(tmp_path / "in", "a", range(2))
    writer = stream(spark, tmp_path / "in").writeStream.format("acidstore") \
        .option("warehouse", str(wh.location)).option("checkpointLocation",
                                                      str(tmp_path / "ck"))
    with pytest.raises(error):
        change(writer).start("db.t")
    assert not spark.streams.active


def test_table_and_columns_checked_at_start(spark: SparkSession, wh: Warehouse,
                                            tmp_path: Path) -> None:
    t = new_table(wh, partitioned=False, buckets=0)
    put(tmp_path / "in", "a", range(2))
    with pytest.raises(TableNotFoundError):
        start(stream(spark, tmp_path / "in"), wh, tmp_path / "ck", "db.nothing")
    extra = stream(spark, tmp_path / "in").withColumn("other", F.lit(1))
    with pytest.raises(SchemaMismatchError, match="mergeSchema"):
        start(extra, wh, tmp_path / "ck")
    assert not spark.streams.active
    start(extra, wh, tmp_path / "ck", mergeSchema="true").awaitTermination()
    now = wh.table(t.name)  # the columns as they are now
    assert now.schema.names == ["id", "name", "amount", "other"]
    assert sorted(now.to_arrow().to_pylist(), key=repr) == [
        {"id": i, "name": f"n{i}", "amount": i * 10, "other": 1} for i in range(2)]
