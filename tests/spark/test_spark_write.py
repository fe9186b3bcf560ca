"""Spark writes (``AcidTable.insert`` and ``df.write.format("acidstore")``) land exactly the
rows, in Hive's layout and Hive's buckets, and land nothing when they fail.

Every check compares with what the embedded API reads back, or with what an embedded write of
the same rows produced: bucket of each row (its ROW__ID's bucket property and the ``bucket_N``
file holding it), ``delta_w_w_s`` / ``base_w`` directories, the staging area emptied at commit,
aborted transactions after a failed Spark job, and no duplicates from a retried task attempt.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.orc as po
import pytest
from pyspark.sql import DataFrameWriter
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import (
    TABLE,
    arrow_rows,
    make_rows,
    new_table,
    spark_rows,
    staging_files,
    table_files,
    to_spark,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import TableHandle, handle_of
from acidstore.engine.task_writes import (
    publish_tasks,
    remove_staging_of,
    task_plan,
    write_task,
)
from acidstore.errors import InvalidInputError, SchemaMismatchError
from acidstore.format.layout import STAGING_DIR
from acidstore.format.orc.codec import decode
from acidstore.spark import AcidTable
from acidstore.spark.typed_errors import typed_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with acidstore.connect(tmp_path / "wh") as warehouse:
        yield warehouse


def spark_table(spark: SparkSession, t: Table) -> AcidTable:
    return AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))


def original_save(writer: DataFrameWriter, path: str) -> None:
    """Spark's own ``DataFrameWriter.save``, without acidstore.spark's wrapper."""
    inspect.unwrap(DataFrameWriter.save)(writer, path)


def save(df: DataFrame, t: Table, mode: str) -> None:
    df.write.format("acidstore").option("warehouse", str(handle_of(t).core.location)) \
        .mode(mode).save(t.name)


def buckets_of(t: Table) -> dict[tuple[Any, ...], int]:
    """(id, dt) of each row -> the Hive bucket its ROW__ID names."""
    out: dict[tuple[Any, ...], int] = {}
    for row in t.to_arrow(with_row_id=True).to_pylist():
        key = (row["id"], row.get("dt"))
        assert key not in out, key
        out[key] = decode(row["row__id"]["bucketid"])[0]
    return out


def check_bucket_files(t: Table) -> None:
    """Every event of a ``bucket_N`` file carries bucket (writer) id N."""
    for relative in table_files(t):
        name = Path(relative).name
        if name.startswith("bucket_"):
            events = po.read_table(str(Path(t.location) / relative), columns=["bucket"])
            writers = {decode(b)[0] for b in events.column("bucket").to_pylist()}
            assert writers == {int(name.removeprefix("bucket_"))}, relative


HIVE_DIR = re.compile(r"^(base_\d{7}(_v\d{7})?|(delete_)?delta_\d{7}_\d{7}(_\d{4})?)$")
HIVE_FILE = re.compile(r"^(bucket_\d{5}|_orc_acid_version)$")


def check_hive_layout(t: Table, partitioned: bool) -> None:
    """Only Hive's directories and files outside the (emptied) staging area."""
    assert staging_files(t) == []
    for relative in table_files(t):
        parts = Path(relative).parts
        if partitioned:
            assert re.fullmatch(r"dt=[^/]+", parts[0]), relative
            parts = parts[1:]
        assert len(parts) == 2, relative
        assert HIVE_DIR.match(parts[0]), relative
        assert HIVE_FILE.match(parts[1]), relative


@pytest.mark.parametrize(("partitioned", "buckets"), [(True, 4), (False, 0)],
                         ids=["partitioned-bucketed", "plain"])
def test_inserts_land_exactly_the_rows(spark: SparkSession, wh: Warehouse, partitioned: bool,
                                       buckets: int) -> None:
    spark_t = new_table(wh, "db.s", partitioned=partitioned, buckets=buckets)
    embedded = new_table(wh, "db.e", partitioned=partitioned, buckets=buckets)
    first, second = (make_rows(range(0, 40), partitioned=partitioned),
                     make_rows(range(40, 55), name="w", partitioned=partitioned))

    result = spark_table(spark, spark_t).insert(to_spark(spark, first).repartition(3))
    assert (result.write_id, result.rows_inserted, result.committed) == (1, 40, True)
    embedded.insert(first)
    assert arrow_rows(spark_t.to_arrow()) == arrow_rows(embedded.to_arrow())

    save(to_spark(spark, second).repartition(2), spark_t, "append")
    embedded.insert(second)
    expected = arrow_rows(embedded.to_arrow())
    assert len(expected) == 55
    assert arrow_rows(spark_t.to_arrow()) == expected
    assert spark_rows(spark_table(spark, spark_t).toDF()) == expected
    assert spark_t.history().column("operation").to_pylist() == ["insert", "insert"]
    check_hive_layout(spark_t, partitioned)


def test_rows_go_to_their_hive_bucket_files(spark: SparkSession, wh: Warehouse) -> None:
    spark_t = new_table(wh, "db.s", buckets=4)
    embedded = new_table(wh, "db.e", buckets=4)
    rows = make_rows(range(-20, 60), dts=("a", "b", "c"))
    spark_table(spark, spark_t).insert(to_spark(spark, rows).repartition(3))
    embedded.insert(rows)
    assert buckets_of(spark_t) == buckets_of(embedded)
    assert len(set(buckets_of(spark_t).values())) == 4
    check_bucket_files(spark_t)
    # every task wrote with a statement id of its own: one delta_1_1_s per task with rows
    deltas = {Path(f).parts[1] for f in table_files(spark_t)}
    assert deltas <= {f"delta_0000001_0000001_{s:04d}" for s in range(3)}
    assert len(deltas) > 1

    # INSERT OVERWRITE of a bucketed table: one task per bucket, base_w, Hive's buckets
    more = make_rows(range(100, 130), dts=("b",))
    spark_table(spark, spark_t).insert(to_spark(spark, more).repartition(3), overwrite=True)
    embedded.insert_overwrite(more)
    assert arrow_rows(spark_t.to_arrow()) == arrow_rows(embedded.to_arrow())
    assert buckets_of(spark_t) == buckets_of(embedded)
    check_bucket_files(spark_t)
    assert {f.split("/")[1] for f in table_files(spark_t) if f.startswith("dt=b/base")} == \
        {"base_0000002"}
    check_hive_layout(spark_t, partitioned=True)


def test_overwrite_replaces_the_partitions_written(spark: SparkSession,
                                                   wh: Warehouse) -> None:
    spark_t = new_table(wh, "db.s", buckets=0)
    embedded = new_table(wh, "db.e", buckets=0)
    start = make_rows(range(30), dts=("a", "b", "c"))
    spark_t.insert(start)
    embedded.insert(start)
    replacement = make_rows(range(200, 210), name="o", dts=("b",))
    save(to_spark(spark, replacement).repartition(2), spark_t, "overwrite")
    embedded.insert_overwrite(replacement)
    expected = arrow_rows(embedded.to_arrow())
    assert arrow_rows(spark_t.to_arrow()) == expected
    assert sorted(r[3] for r in expected).count("b") == 10
    check_hive_layout(spark_t, partitioned=True)

    # an unpartitioned table: every row is replaced, also by an empty DataFrame
    plain = new_table(wh, "db.plain", partitioned=False, buckets=0)
    plain.insert(make_rows(range(5), partitioned=False))
    spark_table(spark, plain).insert(to_spark(spark, make_rows(range(7, 9), partitioned=False)),
                                     overwrite=True)
    assert arrow_rows(plain.to_arrow()) == arrow_rows(make_rows(range(7, 9), partitioned=False))
    empty = to_spark(spark, make_rows([], partitioned=False))
    spark_table(spark, plain).insert(empty, overwrite=True)
    assert plain.to_arrow().num_rows == 0
    check_hive_layout(plain, partitioned=False)

    # Spark's writer cannot route each bucket to one task: the data source refuses it, and
    # the save wrapper of acidstore.spark (acidstore.spark.saving) takes AcidTable.insert's
    # shuffle instead, with the files AcidTable.insert(overwrite=True) writes
    bucketed = new_table(wh, "db.bucketed", buckets=2)
    bucketed.insert(make_rows(range(30, 34)))
    with pytest.raises(Exception) as refused:
        original_save(to_spark(spark, start).write.format("acidstore").option(
            "warehouse", str(wh.location)).mode("overwrite"), bucketed.name)
    assert isinstance(typed_error(refused.value), InvalidInputError)
    assert bucketed.history().num_rows == 1
    twin = new_table(wh, "db.twin", buckets=2)
    twin.insert(make_rows(range(30, 34)))
    save(to_spark(spark, start), bucketed, "overwrite")
    spark_table(spark, twin).insert(to_spark(spark, start), overwrite=True)
    assert arrow_rows(bucketed.to_arrow(with_row_id=True)) == \
        arrow_rows(twin.to_arrow(with_row_id=True))
    assert sorted(bucketed.to_arrow().column("id").to_pylist()) == sorted(
        start.column("id").to_pylist())
    check_hive_layout(bucketed, partitioned=True)


def last_transaction_state(wh: Warehouse) -> str:
    states = wh.show_transactions().sort_by("txn_id").column("state").to_pylist()
    state: str = states[-1]
    return state


def failing(spark: SparkSession, rows: pa.Table) -> DataFrame:
    """``rows`` through a Python UDF that raises for the row with amount 70 (id 7)."""
    def checked(value: int) -> int:  # nested: pickled by value for Spark's Python workers
        if value == 70:
            raise ValueError("row 7 is bad")
        return value

    with warnings.catch_warnings():  # "cannot infer the eval type from type hints"
        warnings.simplefilter("ignore", UserWarning)
        udf = F.udf(checked, "bigint")
    return to_spark(spark, rows).repartition(2).withColumn("amount", udf("amount"))


@pytest.mark.parametrize("how", ["AcidTable.insert", "df.write"])
def test_failing_job_writes_nothing(spark: SparkSession, wh: Warehouse, how: str) -> None:
    t = new_table(wh)
    t.insert(make_rows(range(100, 110)))
    before = arrow_rows(t.to_arrow())
    bad = failing(spark, make_rows(range(12)))
    with pytest.raises(Exception, match="row 7 is bad"):
        if how == "df.write":
            save(bad, t, "append")
        else:
            spark_table(spark, t).insert(bad)
    assert arrow_rows(t.to_arrow()) == before
    assert t.history().num_rows == 1
    assert staging_files(t) == []
    assert last_transaction_state(wh) == "aborted"
    assert all("0000002" not in f for f in table_files(t))  # no file of write id 2
    # the table still takes writes
    spark_table(spark, t).insert(to_spark(spark, make_rows([1])))
    assert t.to_arrow().num_rows == 11


def test_retried_task_attempt_never_duplicates_rows(wh: Warehouse) -> None:
    t = new_table(wh)
    rows = make_rows(range(20))
    with wh.transaction() as public:
        txn = public._core
        table = TableHandle.open(txn.core, TABLE, txn)
        plan = task_plan(table, txn, "insert")
        # attempt 1 of task 0 fails after writing its files; Spark retries as attempt 2
        lost = write_task(plan, rows.to_batches(max_chunksize=7), 0, 1)
        assert lost.outcomes
        assert staging_files(t)
        kept = write_task(plan, rows.to_batches(max_chunksize=7), 0, 2)
        assert kept.root != lost.root
        publish_tasks(table, txn, plan, [kept])
        remove_staging_of(table.filesystem, table.location, txn.txn_id)
        assert staging_files(t) == []
    assert arrow_rows(t.to_arrow()) == arrow_rows(rows)
    assert t.history().column("rows_inserted").to_pylist() == [20]
    check_hive_layout(t, partitioned=True)


def test_columns_that_do_not_fit_the_table(spark: SparkSession, wh: Warehouse) -> None:
    t = new_table(wh)
    rows = make_rows(range(5))
    at = spark_table(spark, t)
    df = to_spark(spark, rows)
    cases = [(df.drop("dt"), rows.drop_columns(["dt"])),  # a partition column cannot be left out
             (df.withColumn("extra", F.lit(1)), rows.append_column("extra", pa.array([1] * 5)))]
    for spark_df, arrow_table in cases:
        with pytest.raises(SchemaMismatchError):
            t.insert(arrow_table)
        with pytest.raises(SchemaMismatchError):
            at.insert(spark_df)
        with pytest.raises(Exception) as through_write:
            save(spark_df, t, "append")
        assert isinstance(typed_error(through_write.value), SchemaMismatchError)
    # a type that cannot be cast is refused as embedded
    with pytest.raises(SchemaMismatchError):
        t.insert(rows.set_column(0, "id", pa.array(["x"] * 5)))
    with pytest.raises(SchemaMismatchError):
        at.insert(df.withColumn("id", F.lit("x")))
    assert t.to_arrow().num_rows == 0
    assert staging_files(t) == []
    # columns in another order and case are matched by name
    at.insert(df.select("DT", "amount", "Name", "id"))
    assert arrow_rows(t.to_arrow()) == arrow_rows(rows)


def test_nullable_columns_left_out_are_null_on_every_path(spark: SparkSession,
                                                           wh: Warehouse) -> None:
    """As an embedded insert: a DataFrame without the nullable ``name`` and ``amount``
    writes NULL through ``AcidTable.insert``, ``df.write`` and an overwrite (the tasks fill
    them); without the partition column ``dt`` it is refused."""
    t = new_table(wh, buckets=2)
    at = spark_table(spark, t)
    ids = to_spark(spark, make_rows(range(6))).select("id", "dt")
    at.insert(ids.where("id < 2"))
    save(ids.where("id BETWEEN 2 AND 3"), t, "append")
    at.insert(ids.where("id >= 4").select("dt", "id"), overwrite=True)  # replaces dt a, b
    t.insert(pa.table({"id": [9], "dt": ["c"]}))
    got = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["name"], r["amount"]) for r in got] == [
        (4, None, None), (5, None, None), (9, None, None)]
    with pytest.raises(SchemaMismatchError, match=r"missing column\(s\) \['dt'\].*not partition"):
        at.insert(ids.drop("dt"))
    assert staging_files(t) == []


def test_idempotent_writes_through_options_and_acid_table(spark: SparkSession,
                                                         wh: Warehouse) -> None:
    """``option("txnAppId", ...).option("txnVersion", ...)`` (Delta's spelling) and
    ``AcidTable.insert(app_id=, version=)``: a version the table holds, or a lower one, lands
    nothing; a higher one commits; the option pair is checked like every option."""
    t = new_table(wh, "db.s", buckets=0)  # df.write overwrites only unbucketed tables
    acid = spark_table(spark, t)  # (registers the data source)

    def idempotent_save(rows: pa.Table, version: str, mode: str = "append") -> None:
        to_spark(spark, rows).repartition(2).write.format("acidstore") \
            .option("warehouse", str(wh.location)).option("txnAppId", "nightly") \
            .option("TXNVERSION", version).mode(mode).save(t.name)

    first = make_rows(range(10))
    idempotent_save(first, "3")
    idempotent_save(make_rows(range(10)), "3")  # the retried job
    idempotent_save(make_rows(range(100, 105)), "2")  # a late retry of an older run
    assert arrow_rows(t.to_arrow()) == arrow_rows(first)
    assert t.history().num_rows == 1
    assert staging_files(t) == []

    skipped = acid.insert(to_spark(spark, make_rows(range(10))), app_id="nightly", version=3)
    assert (skipped.skipped, skipped.committed, skipped.write_id) == (True, False, None)
    assert skipped.txn_id == t.history().column("txn_id").to_pylist()[0]
    later = make_rows(range(20, 26))
    done = acid.insert(to_spark(spark, later), app_id="nightly", version=4)
    assert (done.skipped, done.committed, done.rows_inserted) == (False, True, 6)
    idempotent_save(make_rows(range(20, 26)), "4", mode="overwrite")
    assert arrow_rows(t.to_arrow()) == arrow_rows(pa.concat_tables([first, later]))
    [recorded] = wh.metastore.app_versions(t.name)
    assert (recorded.version, recorded.txn_id) == (4, done.txn_id)

    for options in ({"txnAppId": "nightly"}, {"txnVersion": "5"},
                    {"txnAppId": "nightly", "txnVersion": "five"}):
        writer = to_spark(spark, later).write.format("acidstore").option(
            "warehouse", str(wh.location)).mode("append")
        for key, value in options.items():
            writer = writer.option(key, value)
        with pytest.raises(Exception) as refused:
            writer.save(t.name)
        assert isinstance(typed_error(refused.value), InvalidInputError), options
    assert t.history().num_rows == 2


def test_successful_writes_leave_no_staging_directory(spark: SparkSession,
                                                      wh: Warehouse) -> None:
    """Each Spark write removes its staging area when it commits, not only when it fails:
    ``df.write`` (committed by the data source's commit worker), ``AcidTable.insert`` and a
    DML statement whose rows Spark computes all leave no ``_acidstore_staging`` behind."""
    t = new_table(wh, buckets=2)
    staging = Path(t.location) / STAGING_DIR
    save(to_spark(spark, make_rows(range(10))).repartition(2), t, "append")
    assert not staging.exists()
    spark_table(spark, t).insert(to_spark(spark, make_rows(range(10, 20))).repartition(2))
    assert not staging.exists()
    spark_table(spark, t).update(F.col("id") < 5, {"amount": F.col("amount") + 1})
    assert not staging.exists()
    assert t.to_arrow().num_rows == 20
