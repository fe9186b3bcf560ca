"""``AcidTable.restore`` (and delta-spark's ``restoreToVersion``/``restoreToTimestamp``): the
embedded RESTORE's engine, its units run by Spark, with the same rows, ROW__IDs and history;
and ``AcidTable.history()`` with its compaction rows (a null write id stays a long).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import InvalidInputError
from acidstore.spark import AcidTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with acidstore.connect(tmp_path / "wh") as warehouse:
        yield warehouse


def rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": [dt] * len(ids)},
                    schema=SCHEMA)


def content(t: Table, **read: Any) -> list[dict[str, Any]]:
    return sorted(t.to_arrow(**read).to_pylist(), key=lambda r: r["id"])


def test_restore_runs_through_the_engine_on_spark(spark: SparkSession, wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    t.insert(pa.concat_tables([rows([1, 2, 3], "a"), rows([4, 5], "b")]))
    at = AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))
    at.update("id = 2", {"v": "'x'"})
    at.delete("id = 4")
    at.insert(spark.createDataFrame([(6, "v6", "c")], "id bigint, v string, dt string"))
    wanted = {v: content(t, as_of=v) for v in (1, 2, 3, 4)}
    moment = t.history().column("commit_time").to_pylist()[1]

    result = at.restore(1)
    assert content(t) == wanted[1]
    assert (result.operation, result.committed, result.rows_inserted, result.rows_deleted) == (
        "restore", True, 2, 2)  # 2 and 4 written again; 2' and 6 deleted
    back = at.restoreToVersion(3)  # 2 and 4 deleted again, 2' written again
    assert (back.rows_inserted, back.rows_deleted) == (1, 2) and content(t) == wanted[3]
    assert at.restoreToTimestamp(moment + timedelta(microseconds=1)).write_id == 7
    assert content(t) == wanted[2]
    # the rows written back are new rows (new ROW__IDs): the version holds the old ones
    at.restoreToTimestamp((moment + timedelta(microseconds=1)).isoformat())
    assert content(t) == wanted[2]
    with pytest.raises(InvalidInputError, match="not an ISO date-time"):
        at.restoreToTimestamp("yesterday")
    with pytest.raises(InvalidInputError, match="write id 99 is not a committed version"):
        at.restore(99)

    t.optimize()
    history = at.history()
    assert dict(history.dtypes)["write_id"] == "bigint"
    got = [(r["write_id"], r["operation"], r["rows_inserted"], r["rows_updated"],
            r["rows_deleted"]) for r in history.collect()]
    assert got == [(1, "insert", 5, 0, 0), (2, "update", 0, 1, 0), (3, "delete", 0, 0, 1),
                   (4, "insert", 1, 0, 0), (5, "restore", 2, 0, 2), (6, "restore", 1, 0, 2),
                   (7, "restore", 2, 0, 1), (8, "restore", 2, 0, 2),
                   (None, "compaction_major", 0, 0, 0)]
