"""Adopting plain ORC/Parquet files as a transactional table (``Warehouse.adopt_table``): the
files' rows read as Hive's pre-ACID originals and take DML and compaction like any rows; a
directory that cannot be adopted is refused, naming the path, before anything moves."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import acidstore
from acidstore import Warehouse
from acidstore.errors import (
    CorruptFileError,
    InvalidInputError,
    InvalidPartitionValueError,
    LocationNotEmptyError,
    SchemaMismatchError,
    TableNotFoundError,
)
from acidstore.metastore import NewTable
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


def files_below(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*"))


def adopted_first(wh: Warehouse, tmp_path: Path) -> acidstore.Table:
    """Table ``db.first``, adopted from one ORC file in two partitions' worth of rows."""
    source = tmp_path / "lake"
    for dt in ("a", "b"):
        (source / f"dt={dt}").mkdir(parents=True)
        po.write_table(rows([1, 2]), str(source / f"dt={dt}" / "part-0.orc"))
    return wh.adopt_table("db.first", source, partition_by=["dt"])


@pytest.mark.parametrize("case", ["table", "table-relative", "table-symlink", "partition",
                                  "database", "warehouse-subdir", "warehouse-parent",
                                  "outside-table", "metastore-file"])
def test_a_source_sharing_files_with_the_warehouse_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    metastore = f"sqlite:///{tmp_path / 'catalogue' / 'm.db'}" if case == "metastore-file" \
        else None
    (tmp_path / "catalogue").mkdir()
    wh = acidstore.connect(tmp_path / "wh", metastore=metastore)
    first = adopted_first(wh, tmp_path)
    location = Path(first.location)
    source: str | Path = location
    if case == "table-relative":
        monkeypatch.chdir(location.parent)
        source = "../db.db/./first"
    elif case == "table-symlink":
        (tmp_path / "link").symlink_to(location)
        source = tmp_path / "link"
    elif case == "partition":
        source = location / "dt=a"
    elif case == "database":
        source = location.parent
    elif case == "warehouse-subdir":  # plain files parked in the warehouse's own tree
        source = Path(wh.location) / "staging"
        source.mkdir()
        po.write_table(rows([9]), str(source / "x.orc"))
    elif case == "warehouse-parent":
        source = tmp_path
    elif case == "outside-table":  # a table placed outside the warehouse, through the metastore
        outside = tmp_path / "elsewhere" / "t"
        outside.mkdir(parents=True)
        wh.metastore.create_table(NewTable("db", "outside", USER, pa.schema([]), (), 0, {},
                                           str(outside)))
        po.write_table(rows([9]), str(outside / "000000_0"))
        source = tmp_path / "elsewhere"
    elif case == "metastore-file":  # a SQLite catalogue outside the warehouse
        source = tmp_path / "catalogue"
        po.write_table(rows([9]), str(source / "x.orc"))
    before = files_below(tmp_path)
    with pytest.raises(InvalidInputError) as caught:
        wh.adopt_table("db.second", source)
    assert f"adopting {os.path.abspath(source)} as table db.second: refused" \
        in str(caught.value)
    assert files_below(tmp_path) == before  # nothing moved
    with pytest.raises(TableNotFoundError):
        wh.table("db.second")
    assert first.to_arrow().num_rows == 4
    wh.close()


def test_a_partition_column_the_files_hold_too_is_refused(wh: Warehouse,
                                                           tmp_path: Path) -> None:
    source = tmp_path / "lake"
    (source / "id=1").mkdir(parents=True)
    culprit = source / "id=1" / "part-0.orc"
    po.write_table(rows([1]), str(culprit))
    before = files_below(source)
    with pytest.raises(SchemaMismatchError, match="partition column 'ID' is also a column") \
            as caught:
        wh.adopt_table("db.t", source, partition_by=["ID"])
    assert str(culprit) in str(caught.value)
    assert files_below(source) == before
    with pytest.raises(TableNotFoundError):
        wh.table("db.t")


@pytest.mark.parametrize("case", ["parquet-late", "parquet-early", "parquet-fraction",
                                  "orc-late"])
def test_timestamps_no_reader_can_read_back_are_refused_before_anything_moves(
        wh: Warehouse, tmp_path: Path, case: str) -> None:
    moment = {"parquet-late": datetime(3000, 1, 1), "parquet-early": datetime(1500, 1, 1),
              "parquet-fraction": datetime(1969, 12, 31, 23, 59, 59, 500_000),
              "orc-late": datetime(3000, 1, 1)}[case]
    source = tmp_path / "lake"
    source.mkdir()
    po.write_table(rows([1]), str(source / "a-fine.orc"))
    bad = rows([2]).set_column(2, "ts", pa.array([moment], pa.timestamp("us")))
    culprit = source / ("b.orc" if case.startswith("orc") else "b.parquet")
    if case.startswith("orc"):
        po.write_table(bad, str(culprit))
    else:
        pq.write_table(bad, str(culprit))
    before = files_below(source)
    with pytest.raises(SchemaMismatchError, match="'ts'") as caught:
        wh.adopt_table("db.t", source)
    assert str(culprit) in str(caught.value)
    assert files_below(source) == before
    with pytest.raises(TableNotFoundError):
        wh.table("db.t")


def readme_flow(root: Path) -> tuple[Warehouse, acidstore.Table]:
    """The README's example: a Spark-like Parquet file adopted, then an update."""
    (root / "lake" / "dt=2026-11-01").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"]}),
                   str(root / "lake" / "dt=2026-11-01" / "part-0.parquet"))
    wh = acidstore.connect(root / "warehouse")
    t = wh.adopt_table("db.events", root / "lake", partition_by=["dt"])
    t.update("id = 2", {"v": "'B'"})
    return wh, t


def test_fsck_accepts_the_originals_adoption_placed_after_a_reconnect(tmp_path: Path) -> None:
    wh, _ = readme_flow(tmp_path)
    wh.close()
    with acidstore.connect(tmp_path / "warehouse", create=False) as again:  # the record lasts
        assert again.fsck().to_pylist() == []


@pytest.mark.parametrize("case", ["copied-in", "replaced"])
def test_fsck_still_reports_an_original_nobody_placed(tmp_path: Path, case: str) -> None:
    wh, t = readme_flow(tmp_path)
    partition = Path(t.location) / "dt=2026-11-01"
    if case == "copied-in":  # a copy of an adopted file under the next original name
        culprit = partition / "000001_0"
        shutil.copy(partition / "000000_0", culprit)
    else:  # the adopted file's name, other contents
        culprit = partition / "000000_0"
        po.write_table(pa.table({"id": [7, 8, 9], "v": ["x", "y", "z"]}), str(culprit))
    found = wh.fsck().to_pylist()
    assert [(f["path"], f["check"], f["severity"]) for f in found] == [
        (str(culprit), "foreign_file", "error")]
    wh.close()


def test_fsck_reports_an_adopted_original_gone_before_any_base(tmp_path: Path) -> None:
    wh, t = readme_flow(tmp_path)
    lost = Path(t.location) / "dt=2026-11-01" / "000000_0"
    lost.unlink()
    found = {(f["path"], f["check"]) for f in wh.fsck().to_pylist()}
    assert found == {(str(lost), "missing_file"),  # and the update's delete lost its row
                     (next(str(p) for p in lost.parent.glob("delete_delta_*/bucket_*")),
                      "dangling_delete")}
    wh.close()


def test_fsck_reports_an_adopted_partition_removed_as_a_whole(tmp_path: Path) -> None:
    """A partition nothing wrote to since adoption is known only by its originals' record:
    its directory removed (``rm -r dt=...``), fsck listed the partitions left and found
    nothing. The record of the originals now records their partitions too, so fsck visits
    the missing one and names each original lost."""
    lake = tmp_path / "lake"
    for day in ("2026-11-01", "2026-11-02"):
        (lake / f"dt={day}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"]}),
                       str(lake / f"dt={day}" / "part-0.parquet"))
    with acidstore.connect(tmp_path / "warehouse") as wh:
        t = wh.adopt_table("db.events", lake, partition_by=["dt"])
        assert wh.metastore.list_partitions("db.events") == ["dt=2026-11-01", "dt=2026-11-02"]
        gone = Path(t.location) / "dt=2026-11-02"
        shutil.rmtree(gone)
        found = [(f["path"], f["check"], f["severity"]) for f in wh.fsck().to_pylist()]
        assert found == [(str(gone / "000000_0"), "missing_file", "error")]


def test_fsck_stays_clean_through_compaction_and_cleaning(tmp_path: Path) -> None:
    wh, t = readme_flow(tmp_path)
    compact(t, "major", partition="dt=2026-11-01")
    assert wh.fsck().to_pylist() == []  # the originals wait for the cleaner
    Cleaner(wh, retention_seconds=0).run()
    assert not list(Path(t.location).rglob("00000*_0"))
    assert wh.fsck().to_pylist() == []
    assert sorted(t.to_arrow().column("v").to_pylist()) == ["B", "a"]
    wh.close()


def test_a_source_on_another_filesystem_is_refused(tmp_path: Path) -> None:
    """Adoption renames files, which works within one filesystem only; a URI of another one
    used to be looked up as a path on the warehouse's filesystem instead."""
    (tmp_path / "lake").mkdir()
    po.write_table(rows([1]), str(tmp_path / "lake" / "x.orc"))
    with acidstore.connect(tmp_path / "wh") as wh:
        with pytest.raises(InvalidInputError, match="must be on the warehouse's filesystem"):
            wh.adopt_table("db.t", "mock:///lake")
        assert wh.tables() == []
        assert wh.adopt_table("db.t", f"file://{tmp_path / 'lake'}").to_arrow().num_rows == 1


@pytest.mark.parametrize(("kind", "spellings", "value", "directory"), [
    (pa.int64(), ["01", "1"], 1, "p=1"),
    (pa.float64(), ["-0.0", "0", "0.0"], 0.0, "p=0"),
    (pa.bool_(), ["TRUE", "true", "1"], True, "p=true"),
    (pa.decimal128(5, 2), ["1.5", "1.50"], Decimal("1.5"), "p=1.50"),
], ids=["int", "float-zero", "bool", "decimal"])
def test_one_typed_value_spelled_several_ways_lands_in_one_directory(
        wh: Warehouse, tmp_path: Path, kind: pa.DataType, spellings: list[str], value: object,
        directory: str) -> None:
    """``p=01`` and ``p=1`` of an integer column were adopted as two directories; an INSERT
    OVERWRITE of p=1 replaced the one its write names and left the other's rows visible.
    Every file of one value moves into the directory acidstore's writes use for it."""
    source = tmp_path / "lake"
    for number, spelling in enumerate(spellings):
        (source / f"p={spelling}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [number]}), source / f"p={spelling}" / "part-0.parquet")
    schema = pa.schema([("id", pa.int64()), ("p", kind)])
    t = wh.adopt_table("db.e", source, partition_by=["p"], schema=schema)
    assert sorted(p.name for p in Path(t.location).iterdir()) == [directory]
    assert sorted(p.name for p in (Path(t.location) / directory).iterdir()) == [
        f"{n:06d}_0" for n in range(len(spellings))]
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(len(spellings)))
    t.insert_overwrite(pa.table({"id": [99], "p": pa.array([value], kind)}))
    assert t.to_arrow().column("id").to_pylist() == [99]
    assert wh.fsck().num_rows == 0


def test_nested_timestamps_no_reader_can_read_back_are_refused_before_anything_moves(
        wh: Warehouse, tmp_path: Path) -> None:
    """A Parquet file's list of timestamps is rewritten as ORC like a top-level timestamp:
    one outside pyarrow's nanosecond range used to be adopted and leave the table
    unreadable (CorruptFileError on every read)."""
    source = tmp_path / "lake"
    source.mkdir()
    culprit = source / "b.parquet"
    pq.write_table(pa.table({"id": [1], "tl": pa.array([[datetime(3000, 1, 1)]],
                                                       pa.list_(pa.timestamp("us")))}),
                   str(culprit))
    before = files_below(source)
    with pytest.raises(SchemaMismatchError, match=r"column 'tl\.\w+' holds 3000") as caught:
        wh.adopt_table("db.t", source)
    assert str(culprit) in str(caught.value)
    assert files_below(source) == before
    with pytest.raises(TableNotFoundError):
        wh.table("db.t")


def test_a_file_that_fails_while_placed_puts_every_file_back(wh: Warehouse,
                                                             tmp_path: Path) -> None:
    """A Parquet file whose schema reads but whose data does not decode fails only when its
    unit rewrites it, after other units may have moved their files: the adoption raises
    ``CorruptFileError`` naming it, every ORC file is back at its source, no rewritten file
    stays in the table's location, and the table is gone."""
    source = tmp_path / "lake"
    for dt in ("a", "b", "c"):
        (source / f"dt={dt}").mkdir(parents=True)
        po.write_table(rows([1, 2]), str(source / f"dt={dt}" / "part-0.orc"))
        pq.write_table(rows([3, 4]), str(source / f"dt={dt}" / "part-1.parquet"))
    culprit = source / "dt=b" / "part-2.parquet"
    pq.write_table(pa.table({"id": list(range(5000)), "v": [f"v{i}" for i in range(5000)],
                             "ts": pa.array([i * 1_000_000 for i in range(5000)],
                                            pa.timestamp("us"))}, schema=USER),
                   str(culprit), compression="zstd", write_statistics=False)
    data = bytearray(culprit.read_bytes())
    metadata = pq.ParquetFile(str(culprit)).metadata.row_group(0).column(1)
    middle = metadata.data_page_offset + metadata.total_compressed_size // 2
    data[middle:middle + 64] = bytes(64)  # inside the compressed pages of column v
    culprit.write_bytes(bytes(data))
    before = {str(p): p.read_bytes() for p in source.rglob("*") if p.is_file()}
    with pytest.raises(CorruptFileError) as caught:
        wh.adopt_table("db.t", source, partition_by=["dt"])
    assert str(culprit) in str(caught.value)
    after = {str(p): p.read_bytes() for p in source.rglob("*") if p.is_file()}
    assert after == before  # every file back, unchanged
    with pytest.raises(TableNotFoundError):
        wh.table("db.t")
    location = Path(wh.location) / "db.db" / "t"
    assert not location.exists() or not [p for p in location.rglob("*") if p.is_file()]
