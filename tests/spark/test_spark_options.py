"""Spark options of ``format("acidstore")`` (issue 15): Delta's ``versionAsOf`` and
``timestampAsOf`` read the past as ``asOf`` does, and an option the source does not know is
refused (``UnknownOptionError``) on reads and writes, whatever its case, instead of being
ignored (a silently ignored ``versionAsOf`` would return today's rows)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import pytest
from spark_support import (
    TABLE,
    arrow_rows,
    make_rows,
    spark_rows,
    three_writes,
    to_spark,
)

import acidstore
from acidstore import Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE, METASTORE_ENV
from acidstore.errors import InvalidInputError, MetastoreMismatchError, UnknownOptionError
from acidstore.spark import AcidTable, register
from acidstore.spark.read_tasks import READ_OPTIONS, read_options
from acidstore.spark.typed_errors import typed_error

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import DataFrameReader, SparkSession

    from benchmarks.postgres_server import PostgresServer


def source(spark: SparkSession, wh: Warehouse) -> DataFrameReader:
    register(spark)
    return spark.read.format("acidstore").option("warehouse", str(wh.location))


def test_options_parse_case_insensitively_with_delta_aliases() -> None:
    assert read_options({"VERSIONASOF": "2"}).as_of == 2
    assert read_options({"timestampasof": "2026-01-02"}).as_of == datetime(2026, 1, 2)
    assert read_options({"asof": "2026-01-02T03:04:05"}).as_of == datetime(2026, 1, 2, 3, 4, 5)
    with pytest.raises(InvalidInputError, match="versionAsOf='2026-01-02' is not a write id"):
        read_options({"versionAsOf": "2026-01-02"})
    with pytest.raises(InvalidInputError, match="timestampAsOf='3' is not an ISO date-time"):
        read_options({"timestampAsOf": "3"})
    with pytest.raises(InvalidInputError, match="give one of the options"):
        read_options({"asOf": "1", "versionAsOf": "2"})
    with pytest.raises(UnknownOptionError) as unknown:
        read_options({"path": "db.t", "mergeschema": "true"})
    assert "['mergeschema']" in str(unknown.value)
    assert all(name in str(unknown.value) for name in READ_OPTIONS)


def test_version_and_timestamp_as_of_read_the_past(spark: SparkSession, wh: Warehouse) -> None:
    t = three_writes(wh)
    for write_id in (1, 2):
        expected = arrow_rows(t.to_arrow(as_of=write_id))
        assert expected != arrow_rows(t.to_arrow())
        got = source(spark, wh).option("versionAsOf", str(write_id)).load(TABLE)
        assert spark_rows(got) == expected, write_id
    moment = t.history().column("commit_time").to_pylist()[1]
    got = source(spark, wh).option("timestampAsOf", moment.isoformat()).load(TABLE)
    assert spark_rows(got) == arrow_rows(t.to_arrow(as_of=2))
    with pytest.raises(Exception) as bad:
        source(spark, wh).option("versionAsOf", "yesterday").load(TABLE).collect()
    assert isinstance(typed_error(bad.value), InvalidInputError)


def test_unknown_read_options_are_refused(spark: SparkSession, wh: Warehouse) -> None:
    three_writes(wh)
    for key in ("versionAsof2", "mergeSchema", "FILTERS"):
        with pytest.raises(Exception) as bad:
            source(spark, wh).option(key, "1").load(TABLE).collect()
        error = typed_error(bad.value)
        assert isinstance(error, UnknownOptionError), bad.value
        assert key.lower() in str(error) and "versionAsOf" in str(error)
    # every documented option, in any case, is accepted
    df = (source(spark, wh).option("COLUMNS", "id").option("Filter", "id > 3")
          .option("withrowid", "false").option("READER", "merge").load(TABLE))
    assert sorted(r.id for r in df.collect()) == [4, 5, 10, 11]


def test_unknown_write_options_are_refused(spark: SparkSession, wh: Warehouse) -> None:
    t = three_writes(wh)
    rows = to_spark(spark, make_rows(range(20, 22)))
    register(spark)
    for key in ("overwriteSchema", "asOf"):  # a read option is no write option
        writer = rows.write.format("acidstore").option("warehouse", str(wh.location))
        with pytest.raises(Exception) as bad:
            writer.option(key, "true").mode("append").save(TABLE)
        error = typed_error(bad.value)
        # named as given (the driver checks the options before Spark lower-cases them)
        assert isinstance(error, UnknownOptionError) and key in str(error)
    assert t.to_arrow().num_rows == 6  # nothing written
    writer = rows.write.format("acidstore").option("warehouse", str(wh.location))
    writer.option("METASTORE", f"sqlite:///{wh.location}/_acidstore_metastore.db") \
        .mode("append").save(TABLE)
    assert t.to_arrow().num_rows == 8


def test_acid_table_reads_still_pass_their_own_options(spark: SparkSession,
                                                       wh: Warehouse) -> None:
    t = three_writes(wh)
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    assert spark_rows(at.toDF(as_of=2, with_row_id=True, columns=["id"])) == \
        arrow_rows(t.to_arrow(["id"], as_of=2, with_row_id=True))
    at.update("id = 10", {"amount": "0"})  # pins its snapshot through snapshot* options
    assert t.to_arrow(filter="id = 10").column("amount").to_pylist() == [0]


def test_the_warehouse_and_metastore_options_go_through_the_pairing_check(
        spark: SparkSession, tmp_path: Path, postgres_server: PostgresServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver opens a pair only if it belongs together (``acidstore.api.pairing``), from
    ``AcidTable`` and the data source's options alike; ``ACIDSTORE_METASTORE`` supplies a
    missing metastore in the driver, which hands it to the tasks as an option (their
    environment need not have it)."""
    url = postgres_server.new_store()
    shared1, shared2 = tmp_path / "shared1", tmp_path / "shared2"
    with acidstore.connect(shared1, metastore=url) as wh:
        t = three_writes(wh)
        expected = arrow_rows(t.to_arrow())
    shared2.mkdir()  # another warehouse's directory
    with pytest.raises(MetastoreMismatchError):
        AcidTable.forName(spark, TABLE, warehouse=str(shared2), metastore=url)
    register(spark)
    with pytest.raises(Exception) as bad:
        (spark.read.format("acidstore").option("warehouse", str(shared2))
         .option("metastore", url).load(TABLE).collect())
    assert isinstance(typed_error(bad.value), MetastoreMismatchError)
    with pytest.raises(MetastoreMismatchError):  # the warehouse's catalogue is elsewhere
        AcidTable.forName(spark, TABLE, warehouse=str(shared1))
    assert list(shared2.iterdir()) == [] and not (shared1 / DEFAULT_METASTORE_FILE).exists()
    monkeypatch.setenv(METASTORE_ENV, url)
    table = AcidTable.forName(spark, TABLE, warehouse=str(shared1))
    assert spark_rows(table.toDF()) == expected
    table.insert(to_spark(spark, make_rows(range(20, 22))))  # tasks heartbeat its txn
    with acidstore.connect(shared1, metastore=url) as wh:
        assert wh.table(TABLE).to_arrow().num_rows == len(expected) + 2
