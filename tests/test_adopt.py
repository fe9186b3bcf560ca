"""Adopting plain ORC/Parquet files as a transactional table (``Warehouse.adopt_table``): the
files' rows read as Hive's pre-ACID originals and take DML and compaction like any rows; a
directory that cannot be adopted is refused, naming the path, before anything moves."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

from acidstore import Warehouse
from acidstore.errors import (
    InvalidInputError,
    InvalidPartitionValueError,
    LocationNotEmptyError,
    SchemaMismatchError,
    TableNotFoundError,
)
from compaction import Cleaner, compact

USER = pa.schema([("id", pa.int64()), ("v", pa.string()), ("ts", pa.timestamp("us"))])


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids],
                     "ts": pa.array([i * 1_000_000 for i in ids], pa.timestamp("us"))},
                    schema=USER)


def lake(root: Path) -> dict[str, list[int]]:
    """A Spark-style directory: ORC and Parquet files in dt= partitions (one value escaped,
    one the default partition), a _SUCCESS marker; returns the ids per dt."""
    layout = {"2026-11-01": [("part-0.orc", [1, 2, 3]), ("part-1.parquet", [4, 5])],
              "a/b": [("part-0.zstd.orc", [6])],
              "__HIVE_DEFAULT_PARTITION__": [("part-9.parquet", [7, 8])]}
    for dt, files in layout.items():
        directory = root / ("dt=" + dt.replace("/", "%2F"))
        directory.mkdir(parents=True)
        for name, ids in files:
            if name.endswith(".orc"):
                po.write_table(rows(ids), str(directory / name))
            else:
                pq.write_table(rows(ids), str(directory / name))
    (root / "_SUCCESS").write_text("")
    return {dt: [i for _, ids in files for i in ids] for dt, files in layout.items()}


def test_adopted_files_read_change_and_compact(wh: Warehouse, tmp_path: Path) -> None:
    source = tmp_path / "lake"
    by_dt = lake(source)
    t = wh.adopt_table("db.events", source, partition_by=["dt"])
    got = t.to_arrow(with_row_id=True)
    expected = {(i, None if dt == "__HIVE_DEFAULT_PARTITION__" else dt)
                for dt, ids in by_dt.items() for i in ids}
    assert set(zip(got.column("id").to_pylist(), got.column("dt").to_pylist(),
                   strict=True)) == expected
    assert {r["writeid"] for r in got.column("row__id").to_pylist()} == {0}  # originals
    assert got.schema.field("ts").type == pa.timestamp("us")
    assert not any(p.is_file() and not p.name.startswith("_") for p in source.rglob("*"))
    names = sorted(p.name for p in Path(t.location).rglob("*") if p.is_file())
    assert names == ["000000_0", "000000_0", "000000_0", "000001_0"]
    # the rows take DML like any rows, then a major compaction folds them into a base
    t.delete("id = 2")
    t.update("id = 7", {"v": "'seven'"})
    t.insert(rows([9]).append_column("dt", pa.array(["a/b"])))
    after = sorted(t.to_arrow().select(["id", "v"]).to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in after] == [1, 3, 4, 5, 6, 7, 8, 9]
    assert after[5]["v"] == "seven"
    for partition in ("dt=2026-11-01", "dt=a%2Fb", "dt=__HIVE_DEFAULT_PARTITION__"):
        compact(t, "major", partition=partition)
    Cleaner(wh, retention_seconds=0).run()
    assert sorted(t.to_arrow().select(["id", "v"]).to_pylist(), key=lambda r: r["id"]) == after
    assert not [p for p in Path(t.location).rglob("00000*_0")]  # originals cleaned
    assert wh.fsck().num_rows == 0


def test_given_schema_types_the_partition_column(wh: Warehouse, tmp_path: Path) -> None:
    source = tmp_path / "lake"
    for day in (1, 2):
        (source / f"day={day}").mkdir(parents=True)
        po.write_table(rows([day]), str(source / f"day={day}" / "x.orc"))
    schema = pa.schema([*USER, pa.field("day", pa.int32())])
    t = wh.adopt_table("db.days", source, partition_by=["day"], schema=schema)
    assert t.to_arrow(filter="day = 2").column("id").to_pylist() == [2]
    assert not source.exists()  # emptied and removed


@pytest.mark.parametrize("case", ["mixed-schema", "given-schema", "stray-file", "acid-dir",
                                  "wrong-column", "bad-value", "deep-file", "no-files"])
def test_what_cannot_be_adopted_is_refused_before_anything_moves(
        wh: Warehouse, tmp_path: Path, case: str) -> None:
    source = tmp_path / "lake"
    (source / "dt=a").mkdir(parents=True)
    po.write_table(rows([1]), str(source / "dt=a" / "ok.orc"))
    schema = None
    error: type[Exception] = InvalidInputError
    culprit = None
    if case == "mixed-schema":
        culprit = source / "dt=a" / "other.parquet"
        pq.write_table(rows([2]).drop_columns(["ts"]), str(culprit))
        error = SchemaMismatchError
    elif case == "given-schema":
        schema = pa.schema([("id", pa.int32()), ("v", pa.string()), ("ts", pa.timestamp("us")),
                            ("dt", pa.string())])
        error = SchemaMismatchError
    elif case == "stray-file":
        culprit = source / "dt=a" / "notes.txt"
        culprit.write_text("hello")
    elif case == "acid-dir":
        culprit = source / "dt=a" / "delta_0000001_0000001_0000"
        culprit.mkdir()
    elif case == "wrong-column":
        culprit = source / "day=1"
        culprit.mkdir()
    elif case == "bad-value":
        schema = pa.schema([*USER, pa.field("dt", pa.int64())])
        error = InvalidPartitionValueError
    elif case == "deep-file":
        culprit = source / "loose.orc"
        po.write_table(rows([3]), str(culprit))
    else:
        (source / "dt=a" / "ok.orc").unlink()
    before = sorted(str(p) for p in source.rglob("*"))
    with pytest.raises(error) as caught:
        wh.adopt_table("db.t", source, partition_by=["dt"], schema=schema)
    if culprit is not None:
        assert str(culprit) in str(caught.value)
    assert sorted(str(p) for p in source.rglob("*")) == before  # nothing moved
    with pytest.raises(TableNotFoundError):
        wh.table("db.t")


def test_create_table_over_files_points_at_adopt(wh: Warehouse, tmp_path: Path) -> None:
    location = Path(wh.location) / "db.db" / "t"
    location.mkdir(parents=True)
    po.write_table(rows([1]), str(location / "part-0.orc"))
    with pytest.raises(LocationNotEmptyError, match="adopt_table"):
        wh.create_table("db.t", USER)
