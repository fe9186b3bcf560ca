"""Spark failures arrive as acidstore's typed errors, and a failed write leaves nothing.

A Python worker is killed (SIGKILL) while it runs a task of an UPDATE, a MERGE and a
``df.write``: the task holds on a barrier file until the worker is dead, so the kill always
lands while the job runs, after the job's other task has staged its files where it has one.
Each time the driver survives, the error is ``SparkJobFailedError`` (a ``CommitFailedError``)
naming the aborted transaction with Spark's exception as its cause, the table is what it was,
no staging directory is left, the next write works, and after the cleaner ``fsck`` finds
nothing. An acidstore error raised inside a task arrives as its own class, with its
attributes; ``load()`` raises it too, while a DataFrame's actions raise Spark's exception,
from which ``typed_error`` rebuilds it. ``tests/spark/test_spark_storage_faults.py`` fills the
disk under Spark's tasks.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import pytest
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_kill_support import WorkerKiller, held
from spark_support import arrow_rows, make_rows, new_table, spark_rows, table_files, to_spark

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    AcidStoreError,
    CommitFailedError,
    InvalidExpressionError,
    MissingDataError,
    SchemaMismatchError,
    SparkJobFailedError,
    StorageFullError,
    TableNotFoundError,
    WriteConflictError,
)
from acidstore.format.layout import STAGING_DIR
from acidstore.fsck import fsck
from acidstore.spark import AcidTable, typed_error
from acidstore.spark.typed_errors import is_spark_failure, reported_errors
from compaction import Cleaner

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

@pytest.fixture
def table(tmp_path: Path) -> Iterator[Table]:
    """ids 0-19 in dt a and b, 2 buckets: two Spark tasks read (and write) it."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh, buckets=2)
        t.insert(make_rows(range(20)))
        yield t


def _acid(spark: SparkSession, t: Table) -> AcidTable:
    return AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))


def _staged(t: Table) -> Callable[[], bool]:
    """Whether some task has staged a file of the write (the other task holds)."""
    root = Path(t.location) / STAGING_DIR
    return lambda: any(path.is_file() for path in root.rglob("*"))


def _write(df: DataFrame, t: Table) -> None:
    df.write.format("acidstore").option("warehouse", str(handle_of(t).core.location)) \
        .mode("append").save(t.name)


def _killed(killer: WorkerKiller, write: Callable[[], object]) -> tuple[SparkJobFailedError, int]:
    """Runs ``write`` while ``killer`` waits for its task; the killer's own account comes first,
    so a kill that never landed says why instead of "DID NOT RAISE"."""
    killer.start()
    try:
        write()
    except SparkJobFailedError as error:
        return error, killer.finish()
    killed = killer.finish()
    raise AssertionError(f"the write succeeded although worker {killed} was killed")


def _lost(spark: SparkSession, t: Table, error: SparkJobFailedError,
          killed: int, before: tuple[list[str], list[Any]]) -> None:
    """What a write lost to a killed worker must leave: the typed error naming its aborted
    transaction, the worker gone and the driver's session working, the table unchanged with
    no staging area."""
    assert isinstance(error, CommitFailedError)
    assert is_spark_failure(error.__cause__), repr(error.__cause__)  # type: ignore[arg-type]
    assert "Python worker exited unexpectedly" in error.reason, error.reason
    txns = handle_of(t).metastore.show_transactions()
    assert [(x.txn_id, x.state) for x in txns if x.txn_id == error.txn_id] == \
        [(error.txn_id, "aborted")]
    assert f"transaction {error.txn_id} was aborted" in str(error)
    assert error.table == t.name
    assert not psutil.pid_exists(killed) or \
        psutil.Process(killed).status() == psutil.STATUS_ZOMBIE
    assert (table_files(t), arrow_rows(t.to_arrow(with_row_id=True))) == before
    assert not (Path(t.location) / STAGING_DIR).exists()
    assert spark_rows(_acid(spark, t).toDF(with_row_id=True)) == before[1]


def _recovered(t: Table) -> None:
    """After a later write: no staging area, and the cleaner leaves a table fsck finds
    sound."""
    assert not (Path(t.location) / STAGING_DIR).exists()
    Cleaner(handle_of(t).core, retention_seconds=0).run()
    assert fsck(handle_of(t).core).to_pylist() == []


def _before(t: Table) -> tuple[list[str], list[Any]]:
    return table_files(t), arrow_rows(t.to_arrow(with_row_id=True))


def test_update_lost_to_a_killed_worker(spark: SparkSession, table: Table,
                                        tmp_path: Path) -> None:
    """A Column UPDATE: Spark evaluates the SET value (the holding UDF, at id 3) in the
    job's first stage, before the changed rows are routed to the tasks that write each
    unit's files (``df.write`` below dies with another task's files staged)."""
    at = _acid(spark, table)
    before = _before(table)
    error, killed = _killed(WorkerKiller(spark, tmp_path), lambda: at.update(
        F.lit(True), {"amount": held(tmp_path, 30, F.col("amount")) + 1}))
    _lost(spark, table, error, killed, before)

    at.update("id = 3", {"amount": "amount + 1"})
    assert table.to_arrow(filter="id = 3").column("amount").to_pylist() == [31]
    _recovered(table)


def test_merge_lost_to_a_killed_worker(spark: SparkSession, table: Table,
                                       tmp_path: Path) -> None:
    """A MERGE whose source Spark joins (larger than ``maxSourceBytes``): the source's rows
    pass the holding UDF in the MERGE's first job, inside its transaction."""
    at = _acid(spark, table)
    before = _before(table)
    rows = make_rows([1, 2, 50, 51], name="s")
    source = to_spark(spark, rows).filter(held(tmp_path, 50, F.col("id")) >= 0)
    spark.conf.set("spark.acidstore.merge.maxSourceBytes", "0")
    try:
        error, killed = _killed(WorkerKiller(spark, tmp_path), lambda: at.alias("t").merge(
            source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll()
            .execute())
        _lost(spark, table, error, killed, before)

        at.alias("t").merge(to_spark(spark, rows).alias("s"), "t.id = s.id") \
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    finally:
        spark.conf.unset("spark.acidstore.merge.maxSourceBytes")
    assert sorted(table.to_arrow(filter="name LIKE 's%'").column("id").to_pylist()) == \
        [1, 2, 50, 51]
    _recovered(table)


def test_df_write_lost_to_a_killed_worker(spark: SparkSession, table: Table,
                                          tmp_path: Path) -> None:
    """``df.write``: its transaction is the driver's (acidstore's save hook), which aborts
    it and removes its staging area once the job's tasks have ended."""
    before = _before(table)
    rows = to_spark(spark, make_rows(range(100, 110))).repartition(2)
    holding = rows.withColumn("amount", held(tmp_path, 1000, F.col("amount")))
    error, killed = _killed(WorkerKiller(spark, tmp_path, ready=_staged(table)),
                            lambda: _write(holding, table))
    _lost(spark, table, error, killed, before)

    _write(holding, table)  # released: the same DataFrame writes now
    assert sorted(table.to_arrow(filter="id >= 100").column("id").to_pylist()) == \
        list(range(100, 110))
    _recovered(table)


def test_errors_raised_in_tasks_arrive_as_their_type(spark: SparkSession,
                                                     table: Table) -> None:
    """A value ``df.write``'s task cannot cast, and a SET value that fails when the
    statement core's task evaluates it, raise what the embedded engine raises; the writes
    that fail and the one that succeeds leave no staging directory."""
    before = _before(table)
    bad = to_spark(spark, make_rows([100, 101])).withColumn("id", F.lit("x"))
    with pytest.raises(SchemaMismatchError, match="column 'id'") as caught:
        _write(bad, table)
    assert is_spark_failure(caught.value.__cause__)  # type: ignore[arg-type]
    assert handle_of(table).metastore.show_transactions()[-1].state == "aborted"

    at = _acid(spark, table)
    value = "CAST(CASE WHEN id = 12 THEN name ELSE '1' END AS BIGINT)"
    with pytest.raises(InvalidExpressionError) as embedded:
        table.update("TRUE", {"amount": value})
    with pytest.raises(InvalidExpressionError) as on_spark:
        at.update("TRUE", {"amount": value})
    assert type(on_spark.value) is InvalidExpressionError
    assert str(on_spark.value) == str(embedded.value)
    assert _before(table) == before
    assert not (Path(table.location) / STAGING_DIR).exists()

    at.insert(to_spark(spark, make_rows([100, 101])))
    assert table.to_arrow(filter="id >= 100").num_rows == 2
    assert not (Path(table.location) / STAGING_DIR).exists()


def test_reads_are_typed_where_acidstore_runs_them(spark: SparkSession, table: Table) -> None:
    """``load()`` raises acidstore's error; an action is Spark's and raises Spark's exception,
    whose acidstore error ``typed_error`` rebuilds with its attributes."""
    source = spark.read.format("acidstore").option("warehouse", str(handle_of(table).core.location))
    with pytest.raises(TableNotFoundError):
        source.load("db.nope")
    df = source.load(table.name)
    next(Path(table.location).rglob("bucket_*")).unlink()
    with pytest.raises(Exception) as caught:  # Spark's own class
        df.collect()
    assert not isinstance(caught.value, AcidStoreError)
    error = typed_error(caught.value)
    assert type(error) is MissingDataError, caught.value
    assert error.path is not None and error.path.startswith(table.location), error.path


# --- no Spark job -------------------------------------------------------------------------


def _worker_text(raise_it: Callable[[], None]) -> str:
    """What a Python worker sends the driver when ``raise_it`` raises inside
    ``reported_errors`` (PySpark formats the exception with ``TracebackException``)."""
    try:
        with reported_errors():
            raise_it()
    except Exception as exc:
        return "An exception was thrown from the Python worker:\n" + "".join(
            traceback.TracebackException(type(exc), exc, exc.__traceback__).format())
    raise AssertionError("nothing raised")


def test_typed_error_rebuilds_class_message_and_attributes(tmp_path: Path) -> None:
    def full() -> None:
        raise StorageFullError("cannot write an ORC file: [Errno 28] No space left on device",
                               path="/wh/db.db/t/delta_1_1_0/bucket_00000", retry_safe=True,
                               errno=28)

    def conflict() -> None:
        raise WriteConflictError("first committer wins", txn_id=7, other_txn_id=5,
                                 table="db.t", partition="dt=a")

    def disk() -> None:
        open(tmp_path / "no" / "such" / "dir", "rb")  # noqa: SIM115  (raises)

    text = _worker_text(full)
    rebuilt = typed_error(Exception(text))
    assert type(rebuilt) is StorageFullError
    assert str(rebuilt) == "cannot write an ORC file: [Errno 28] No space left on device " \
        "(path: /wh/db.db/t/delta_1_1_0/bucket_00000)"
    assert (rebuilt.path, rebuilt.retry_safe, rebuilt.errno) == (
        "/wh/db.db/t/delta_1_1_0/bucket_00000", True, 28)
    other = typed_error(Exception(_worker_text(conflict)))
    assert type(other) is WriteConflictError
    assert (other.txn_id, other.other_txn_id, other.table, other.partition) == (
        7, 5, "db.t", "dt=a")
    # a missing file is the caller's to judge: not made a storage error in the task
    assert typed_error(Exception(_worker_text(disk))) is None
    # text of a worker that added no note: class and message from its last line
    plain = typed_error(Exception("...\nacidstore.errors.StorageFullError: disk full\n"))
    assert type(plain) is StorageFullError and str(plain) == "disk full"
    assert (plain.path, plain.retry_safe, plain.errno) == (None, True, None)
