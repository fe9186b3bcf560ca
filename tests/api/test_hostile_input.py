"""Inputs that used to be accepted silently (or failed with a raw Python error) and now get a
typed error naming what is wrong, before anything is written (issue 13, points 10 and 11)."""

from __future__ import annotations

import importlib
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from acidstore import Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import InvalidInputError, SchemaMismatchError

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("at", pa.timestamp("us"))])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"schema": {"id": "bigint"}}, "schema must be a pyarrow.Schema"),
    ({"bucket_by": "id", "buckets": 2}, r"bucket_by is a list of column names; write "
                                        r"bucket_by=\['id'\]"),
    ({"partition_by": "k"}, r"partition_by=\['k'\]"),
    ({"bucket_by": ["id", "ID"], "buckets": 2}, "bucket_by names a column twice"),
    ({"buckets": 4}, "buckets=4 needs bucket_by"),
    ({"properties": {"orc.compress": "BOGUS"}}, "orc.compress='BOGUS' is not one of"),
    ({"partition_by": 5}, "partition_by must be a list of column names or None, got int"),
    ({"partition_by": [1]}, "partition_by must name columns by non-empty strings, got 1"),
    ({"bucket_by": [None], "buckets": 2}, "bucket_by must name columns by non-empty strings"),
    ({"bucket_by": ["id"], "buckets": None}, r"bucketed by \('id',\); give buckets > 0"),
    ({"bucket_by": ["id"], "buckets": "2"}, "buckets must be an int, got str"),
    ({"properties": ["x"]}, "properties must be a mapping"),
])
def test_create_table_refuses_what_it_used_to_accept(wh: Warehouse, kwargs: dict[str, Any],
                                                      message: str) -> None:
    args = {"schema": SCHEMA, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        wh.create_table("db.t", args.pop("schema"), **args)
    assert wh.metastore.list_tables() == []


def test_none_means_no_columns_and_an_iterator_is_read_once(wh: Warehouse,
                                                             tmp_path: Path) -> None:
    """``partition_by=None`` / ``bucket_by=None`` raised TypeError where the defaults mean
    none; an iterator was read twice, so its columns vanished and the table was created
    unpartitioned without a word."""
    plain = wh.create_table("db.n", SCHEMA, partition_by=None, bucket_by=None, buckets=None)
    info = handle_of(plain).info
    assert (info.partition_schema.names, info.bucket_by, info.buckets) == ([], (), 0)
    once = wh.create_table("db.i", SCHEMA, partition_by=iter(["k"]), bucket_by=iter(["id"]),
                           buckets=2)
    info = handle_of(once).info
    assert (info.partition_schema.names, info.bucket_by) == (["k"], ("id",))
    source = tmp_path / "lake"
    source.mkdir()
    pq.write_table(pa.table({"id": [1]}), source / "part-0.parquet")
    adopted = wh.adopt_table("db.a", source, partition_by=None)
    assert adopted.to_arrow().column("id").to_pylist() == [1]
    source.mkdir()
    pq.write_table(pa.table({"id": [1]}), source / "part-0.parquet")
    for bad, message in (("dt", r"write partition_by=\['dt'\]"), (5, "got int 5")):
        with pytest.raises(InvalidInputError, match=message):
            wh.adopt_table("db.b", source, partition_by=bad)  # type: ignore[arg-type]
    assert (source / "part-0.parquet").exists()


def test_as_of_after_the_latest_write_id_is_refused(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1], "k": ["a"], "at": [None]}, schema=SCHEMA))
    assert t.to_arrow(as_of=1).num_rows == 1
    for point in (2, 2**63):
        with pytest.raises(InvalidInputError, match="after its latest write id 1"):
            t.to_arrow(as_of=point)


def test_zoned_timestamps_into_a_local_column_are_refused(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA)
    zoned = pa.array([datetime(2024, 1, 1, 12)], pa.timestamp("us", tz="Europe/Paris"))
    data = pa.table({"id": [1], "k": ["a"], "at": zoned})
    for write in (t.insert, t.insert_overwrite):
        with pytest.raises(SchemaMismatchError, match=r"'at' of table db.t .*zone Europe/Paris"):
            write(data)
    assert t.to_arrow().num_rows == 0
    local = data.set_column(2, "at", pa.compute.local_timestamp(zoned))
    t.insert(local)
    # 12:00 UTC is 13:00 in Paris: the local date-time the caller chose is what is stored
    assert t.to_arrow().column("at").to_pylist() == [datetime(2024, 1, 1, 13)]


LONE = "x\udc80"  # a lone surrogate: what bytes decoded with errors="surrogateescape" hold


def test_text_no_storage_can_hold_is_refused_before_anything_is_created(
        wh: Warehouse, tmp_path: Path) -> None:
    import acidstore
    from acidstore.errors import InvalidPartitionValueError
    from compaction import compact

    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    table = wh.create_table("db.t", schema, partition_by=["p"])
    with pytest.raises(InvalidInputError, match="is too long"):
        wh.create_table("db." + "t" * 129, schema)
    with pytest.raises(InvalidInputError, match="no valid text"):
        wh.create_table("db.u", schema, properties={"k": LONE})
    with pytest.raises(InvalidInputError, match=r"column 'p' of the DataFrame holds text"):
        table.insert(importlib.import_module("pandas").DataFrame({"id": [1], "p": [LONE]}))
    with pytest.raises(InvalidPartitionValueError, match="no valid text"):
        wh.streaming_connection("db.t", partition={"p": LONE})
    with pytest.raises(InvalidPartitionValueError, match="no valid text"):
        compact(table, "major", partition={"p": LONE})
    with pytest.raises(InvalidInputError, match="no valid text"):
        acidstore.connect(str(tmp_path / LONE))
    assert wh.tables() == ["db.t"] and table.history().num_rows == 0
    assert not (tmp_path / LONE).exists()
