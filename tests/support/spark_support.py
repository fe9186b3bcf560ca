"""Helpers shared by the Spark tests: a small table, the same rows as a Spark DataFrame, and
order-free row comparisons between Spark reads and embedded reads.

Every Spark test uses the session-scoped ``spark`` fixture of conftest.py (one JVM per run).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from acidfiles import record_placed_originals, write_original

from acidstore import Table, Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.format.layout import STAGING_DIR
from acidstore.write.bucketing import bucket_ids

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TABLE = "db.t"
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()),
                    pa.field("amount", pa.int64()), pa.field("dt", pa.string())])
USER = SCHEMA.remove(3)
SPARK_DDL = "id bigint, name string, amount bigint, dt string"
Row = tuple[Any, ...]


def make_rows(ids: Iterable[int], *, name: str = "n", dts: tuple[str | None, ...] = ("a", "b"),
              partitioned: bool = True) -> pa.Table:
    """Rows ``id, name<id>, amount = id * 10, dt`` (dt cycles through ``dts``)."""
    items: list[dict[str, Any]] = []
    for n, i in enumerate(ids):
        row: dict[str, Any] = {"id": i, "name": f"{name}{i}", "amount": i * 10}
        if partitioned:
            row["dt"] = dts[n % len(dts)]
        items.append(row)
    return pa.Table.from_pylist(items, schema=SCHEMA if partitioned else USER)


def new_table(wh: Warehouse, name: str = TABLE, *, partitioned: bool = True,
              buckets: int = 3) -> Table:
    """``id, name, amount[, dt]``: partitioned by dt and/or bucketed by id (0 buckets: not)."""
    return wh.create_table(name, SCHEMA if partitioned else USER,
                           partition_by=["dt"] if partitioned else [],
                           bucket_by=["id"] if buckets else [], buckets=buckets)


def three_writes(wh: Warehouse) -> Table:
    """Write ids 1..3: insert ids 0..5, delete ids 0 and 1, insert ids 10 and 11."""
    t = new_table(wh)
    t.insert(make_rows(range(6)))
    t.delete("id < 2")
    t.insert(make_rows(range(10, 12)))
    return t


def to_spark(spark: SparkSession, rows: pa.Table) -> DataFrame:
    """The same rows as a Spark DataFrame (Spark's types for the Arrow schema)."""
    return spark.createDataFrame(rows)


def sorted_rows(rows: Iterable[dict[str, Any]]) -> list[Row]:
    """Rows as tuples in a canonical order (``repr`` orders None and mixed values too)."""
    return sorted((tuple(r.values()) for r in rows), key=repr)


def arrow_rows(table: pa.Table) -> list[Row]:
    return sorted_rows(table.to_pylist())


def spark_rows(df: DataFrame) -> list[Row]:
    return sorted_rows(r.asDict(recursive=True) for r in df.collect())


def staging_files(table: Table) -> list[str]:
    """Every file left below the table's staging area."""
    root = Path(table.location) / STAGING_DIR
    return sorted(str(Path(d) / f) for d, _, files in os.walk(root) for f in files)


def table_files(table: Table) -> list[str]:
    """Every file of the table (relative paths), staging included."""
    root = Path(table.location)
    return sorted(str((Path(d) / f).relative_to(root)) for d, _, files in os.walk(root)
                  for f in files)


def add_originals(t: Table, rows: pa.Table, *, buckets: int) -> None:
    """``rows`` (with ``dt``) as pre-ACID ORC files of their partitions of ``t``, as a Hive
    table converted to ACID holds them: each in the file of its Hive bucket (``00000<b>_0``;
    its second half as ``00000<b>_0_copy_1``), read with synthetic ROW__IDs of write id 0."""
    for dt in sorted(set(rows.column("dt").to_pylist())):
        part = rows.filter(pc.equal(rows.column("dt"), dt)).select(USER.names)
        of_row = bucket_ids(part, ["id"], buckets)
        for bucket in sorted(set(of_row.tolist())):
            mine = part.filter(pa.array(of_row == bucket)).to_pylist()
            half = (len(mine) + 1) // 2
            for name, chunk in ((f"{bucket:06d}_0", mine[:half]),
                                (f"{bucket:06d}_0_copy_1", mine[half:])):
                if chunk:
                    write_original(Path(t.location) / f"dt={dt}" / name, chunk, schema=USER)
    record_placed_originals(t)


def reads_on_jvm(df: DataFrame) -> bool:
    """Whether acidstore's Java reader reads the event files (``acidstore.spark.jvm_read``)."""
    return "acidstore_jvm(" in str(df._jdf.queryExecution().executedPlan().toString())


def reads_natively(df: DataFrame) -> bool:
    """Whether Spark's own ORC reader reads the event files (``acidstore.spark.native``)."""
    return "FileScan orc" in str(df._jdf.queryExecution().executedPlan().toString())


def forget_recorded_sizes(wh: Warehouse) -> None:
    """Make the record of every committed write and compaction one from before metastore
    schema 11, which kept no file sizes: a test that rewrites a committed file by hand to
    corrupt it then reaches the reader's own checks, which planning's size check (the first
    line of defence, tests/format/test_layout_integrity.py) would otherwise never let it see."""
    with sqlite3.connect(Path(wh.location) / DEFAULT_METASTORE_FILE) as db:
        db.execute("UPDATE components SET bucket_files = NULL")
        db.execute("UPDATE compaction_outputs SET bytes = 0")


#: the session setting that routes SQL by table name to a warehouse
WAREHOUSE_CONF = "spark.acidstore.warehouse"


@contextmanager
def session_warehouse(spark: SparkSession, location: str, *also_unset: str) -> Iterator[str]:
    """The session routed to the warehouse at ``location`` while the block runs; afterwards
    the setting (and each of ``also_unset``, settings the test may change) is unset, so the
    shared session's next test sees Spark's own name resolution."""
    spark.conf.set(WAREHOUSE_CONF, location)
    try:
        yield location
    finally:
        for name in (WAREHOUSE_CONF, *also_unset):
            spark.conf.unset(name)
