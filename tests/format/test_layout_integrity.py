"""Wrong answers become typed errors: a committed directory or file that is gone or changed
stops every read and compaction with an error naming it; a stray entry nobody recorded is
never read by a read, DML statement or compaction of a warehouse table (they plan from the
metastore's record), is left where it is by the cleaner, and is reported by fsck; reserved
column names are refused at create."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from stray_support import assert_compaction_ignores

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    DataError,
    InvalidInputError,
    MetastoreError,
    MissingDataError,
    SchemaMismatchError,
)
from acidstore.fsck import fsck as check
from compaction import compact
from compaction.plan import Kind

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string()),
                    ("h", pa.int32())])


@pytest.fixture
def table(wh: Warehouse) -> Table:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt", "h"])
    t.insert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"],
                       "h": pa.array([1, 2, 1], pa.int32())}))
    return t


def stray_cases(location: Path) -> list[Path]:
    return [location / "base_0000001",  # issue 13.2: made the whole table read as empty
            location / "dt=x" / "delta_0000001_0000001_0000",  # above the last level
            location / "other=1",  # a column the table does not have
            location / "dt=x" / "h=1" / "k=2"]  # below the last level: not a partition dir


def reported(table: Table, path: Path) -> set[str]:
    """The fsck checks that name ``path``: where a stray is reported now that reads of a
    warehouse table no longer see it."""
    found = check(handle_of(table).core, table.name).to_pylist()
    return {f["check"] for f in found if f["path"] == str(path)}


@pytest.mark.parametrize("case", range(4))
def test_a_stray_directory_is_not_read_nor_compacted_and_fsck_reports_it(
        table: Table, case: int) -> None:
    stray = stray_cases(Path(table.location))[case]
    rows = table.to_arrow()
    assert rows.num_rows == 3
    stray.mkdir(parents=True)
    if case == 3:  # an extra level inside a leaf partition is a partition's own content
        stray.rmdir()
        stray = stray.parent / "stray.txt"
        stray.write_text("x")  # read as an original file when the partition was listed
    assert table.to_arrow().sort_by("id").equals(rows.sort_by("id"))
    assert table.to_arrow(filter="dt = 'x'").num_rows == 2
    assert reported(table, stray) & {"stray_directory", "foreign_file"}
    table.delete("id = 1")
    table.update("id = 2", {"v": "'z'"})
    assert table.to_arrow().sort_by("id").column("v").to_pylist() == ["z", "c"]
    # planned from the record, as reads are: the compaction neither folds the stray nor
    # stops on it, the cleaner leaves it, fsck still names it
    assert_compaction_ignores(table, stray, ("minor", "major"))
    assert table.to_arrow().sort_by("id").column("v").to_pylist() == ["z", "c"]


def test_a_stray_file_at_the_root_is_not_read_and_fsck_names_it(table: Table) -> None:
    stray = Path(table.location) / "part-00000.orc"
    stray.write_bytes(b"not ours")
    assert table.to_arrow().num_rows == 3
    assert reported(table, stray) == {"stray_directory"}
    (Path(table.location) / "_SUCCESS").write_text("")  # hidden names are skipped
    stray.unlink()
    assert table.to_arrow().num_rows == 3
    assert check(handle_of(table).core, table.name).num_rows == 0


def test_inserts_into_a_table_with_a_stray_base_do_not_vanish(table: Table) -> None:
    (Path(table.location) / "base_0000001").mkdir()
    table.insert(pa.table({"id": [9], "v": ["n"], "dt": ["x"], "h": pa.array([1], pa.int32())}))
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 9]
    assert reported(table, Path(table.location) / "base_0000001") == {"stray_directory"}
    (Path(table.location) / "base_0000001").rmdir()
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 9]


@pytest.mark.parametrize("name", ["row__id", "ROW__ID", "__acid_pos", "__ACID_x"])
def test_reserved_column_names_are_refused_at_create(wh: Warehouse, name: str) -> None:
    schema = pa.schema([("id", pa.int64()), (name, pa.string())])
    with pytest.raises(InvalidInputError, match="reserved"):
        wh.create_table("db.r", schema)
    assert "db.r" not in wh.tables()


def test_an_emptied_metastore_file_beside_tables_is_refused(tmp_path: Path) -> None:
    """Issue 13.1: a 0-byte metastore file opened silently as an empty catalogue; the next
    table there reused write id 1 over the old table's files."""
    root = tmp_path / "wh"
    with acidstore.connect(root) as wh:
        wh.create_table("db.t", SCHEMA, partition_by=["dt", "h"]).insert(pa.table({
            "id": [1], "v": ["a"], "dt": ["x"], "h": pa.array([1], pa.int32())}))
    metastore = root / "_acidstore_metastore.db"
    for extra in root.glob("_acidstore_metastore.db-*"):
        extra.unlink()
    metastore.write_bytes(b"")
    with pytest.raises(MetastoreError, match=r"empty \(0 bytes\).*db\.db"):
        acidstore.connect(root)
    assert metastore.stat().st_size == 0  # refused before SQLite wrote a fresh schema
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "_acidstore_metastore.db").write_bytes(b"")  # nothing else: a new warehouse
    with acidstore.connect(fresh) as wh:
        assert wh.tables() == []


# --- committed directories and files that went missing (issue 13.5) ---------------------------


@pytest.fixture
def flat(wh: Warehouse) -> Table:
    t = wh.create_table("db.f", SCHEMA, partition_by=["dt", "h"], bucket_by=["id"], buckets=2)
    t.insert(pa.table({"id": list(range(10)), "v": ["a"] * 10, "dt": ["x"] * 10,
                       "h": pa.array([1] * 10, pa.int32())}))
    t.delete("id < 3")
    t.insert(pa.table({"id": [20, 21], "v": ["b", "b"], "dt": ["x", "x"],
                       "h": pa.array([1, 1], pa.int32())}))
    return t


def only(location: str, prefix: str) -> Path:
    (found,) = [p for p in Path(location, "dt=x", "h=1").iterdir() if p.name.startswith(prefix)]
    return found


@pytest.mark.parametrize("prefix", ["delete_delta_0000002", "delta_0000001", "delta_0000003"])
def test_a_removed_committed_directory_is_named_not_read_around(flat: Table, prefix: str) -> None:
    """Removing the delete delta brought deleted rows back; removing a delta dropped rows."""
    assert flat.to_arrow().num_rows == 9
    gone = only(flat.location, prefix)
    shutil.rmtree(gone)
    for action in (flat.to_arrow, lambda: flat.delete("id = 5")):
        with pytest.raises(MissingDataError) as caught:
            action()
        assert (caught.value.path or "").startswith(str(gone) + "/")  # its first file


@pytest.mark.parametrize("how", ["removed", "truncated"])
def test_a_removed_or_emptied_bucket_file_is_named(flat: Table, how: str) -> None:
    """Issue 13.9: a committed bucket file truncated to 0 bytes read as no rows."""
    file = only(flat.location, "delta_0000001") / "bucket_00001"
    if how == "removed":
        file.unlink()
    else:
        file.write_bytes(b"")
    before = sorted(p.name for p in file.parent.parent.iterdir())
    for action in (flat.to_arrow, lambda: compact(flat, "minor"),
                   lambda: compact(flat, "major")):
        with pytest.raises(MissingDataError, match=r"bucket_00001 is not there|bucket_00001 "
                           "of \\d+ bytes, but it holds 0") as caught:
            action()
        assert caught.value.path == str(file)
    # neither compaction left an output behind: the table is as it was
    assert sorted(p.name for p in file.parent.parent.iterdir()) == before


@pytest.mark.parametrize("prefix", ["delta_0000001", "delete_delta_0000002"])
def test_a_bucket_file_removed_after_planning_is_missing_not_corrupt(flat: Table,
                                                                    prefix: str) -> None:
    """A file gone between a scan's planning and its reading (a racing ``rm``; a cleaner
    never removes what a planned reader needs) is MissingDataError naming it, as the Spark
    readers report it."""
    scan = handle_of(flat).scan()
    gone = sorted(only(flat.location, prefix).glob("bucket_*"))[0]
    gone.unlink()
    with pytest.raises(MissingDataError) as caught:
        list(scan.to_batches())
    assert caught.value.path == str(gone)


def test_an_emptied_delete_delta_file_is_named(flat: Table) -> None:
    """A committed delete event file truncated to 0 bytes brought deleted rows back."""
    files = sorted(only(flat.location, "delete_delta_0000002").glob("bucket_*"))
    files[0].write_bytes(b"")
    with pytest.raises(MissingDataError, match=r"of \d+ bytes, but it holds 0") as caught:
        flat.to_arrow()
    assert caught.value.path == str(files[0])
    for kind in ("minor", "major"):  # each opens the file with the bytes recorded
        with pytest.raises(MissingDataError, match=r"of \d+ bytes, but it holds 0") as caught:
            compact(flat, kind)
        assert caught.value.path == str(files[0])


def every_consumer(table: Table) -> list[Callable[[], object]]:
    """Every way rows are read: scans, DML, both compactions, the change feed."""
    return [table.to_arrow, lambda: table.to_arrow(columns=["id"], filter="id = 1"),
            lambda: list(handle_of(table).scan().to_batches()), lambda: table.changes(1, 3),
            lambda: table.delete("id = 5"), lambda: table.update("id = 6", {"v": "'z'"}),
            lambda: compact(table, "minor"), lambda: compact(table, "major")]


#: the consumers of ``every_consumer`` pruned to the bucket of one id: planned from the
#: record, they open no file of another bucket, so neither need nor notice a missing one
PRUNED = (1, 4, 5)


def whole_consumers(table: Table) -> list[Callable[[], object]]:
    """``every_consumer`` but those pruned to one bucket: each opens every file it reads."""
    return [c for i, c in enumerate(every_consumer(table)) if i not in PRUNED]


@pytest.mark.parametrize("how", ["renamed", "swapped"])
def test_a_renamed_delete_delta_file_is_missing_not_a_deleted_row_back(flat: Table,
                                                                       how: str) -> None:
    """Delete files meet rows by the bucket id in their name: one renamed kept the count
    and the bytes the record had, so deleted rows came back without a word. The commit
    records each file's name and bytes (schema 11), and the planner's listing has both."""
    assert sorted(flat.to_arrow().column("id").to_pylist()) == [3, 4, 5, 6, 7, 8, 9, 20, 21]
    directory = only(flat.location, "delete_delta_0000002")
    zero, one = directory / "bucket_00000", directory / "bucket_00001"
    if how == "renamed":
        one.rename(directory / "bucket_00003")
        message = "which this snapshot must read, but it is not there"
        victim = one
    else:  # both names still there, each holding the other's events
        zero.rename(directory / "tmp")
        one.rename(zero)
        (directory / "tmp").rename(one)
        message = r"of \d+ bytes, but it holds \d+"
        victim = zero
    planned = rf"{directory.name}/{victim.name} (is not there|of \d+ bytes, but it holds)"
    for action in whole_consumers(flat):
        with pytest.raises(MissingDataError, match=f"write id 2 committed bucket file "
                           f"dt=x/h=1/{directory.name}/{victim.name}.*{message}|{planned}"
                           ) as caught:
            action()
        assert caught.value.path == str(victim)
    fsck = check(handle_of(flat).core)
    wanted = {"missing_file", "foreign_file"} if how == "renamed" else {"missing_file"}
    assert wanted <= set(fsck.column("check").to_pylist())


def test_a_bucket_file_copied_over_another_is_missing(flat: Table) -> None:
    """delta_1's bucket file copied over delta_3's of the same name read the wrong rows:
    the count matched; the bytes the commit recorded do not."""
    source = only(flat.location, "delta_0000001") / "bucket_00001"
    victim = only(flat.location, "delta_0000003") / "bucket_00001"
    assert victim.exists() and source.stat().st_size != victim.stat().st_size
    shutil.copyfile(source, victim)
    for action in whole_consumers(flat):
        with pytest.raises(MissingDataError, match=r"committed bucket file .* of \d+ bytes, "
                           r"but it holds \d+") as caught:
            action()
        assert caught.value.path == str(victim)
    assert "missing_file" in reported(flat, victim)


def test_a_bucket_file_no_record_names_is_a_stray(flat: Table) -> None:
    """A file copied into a committed directory under a name its write did not make would be
    read as that write's rows: reads, the change feed and compactions plan from the record
    and never open it, and fsck reports it."""
    directory = only(flat.location, "delta_0000003")
    rows, feed = flat.to_arrow().sort_by("id"), flat.changes(1, 3)
    shutil.copyfile(directory / "bucket_00001", directory / "bucket_00000")
    assert flat.to_arrow().sort_by("id").equals(rows)
    assert flat.to_arrow(columns=["id"], filter="id = 1").num_rows == 0
    assert "foreign_file" in reported(flat, directory / "bucket_00000")
    assert flat.changes(1, 3).equals(feed)  # the feed plans from the record too
    assert_compaction_ignores(flat, directory / "bucket_00000", ("minor", "major"),
                              clean=False)  # (the cleaner removes the compacted delta)


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_a_renamed_file_of_a_compacted_directory_is_missing(flat: Table, kind: Kind) -> None:
    """A compaction records its files' names (schema 6): a renamed one is named, not read
    under another bucket id."""
    directory = compacted(flat, kind, "delete_delta_" if kind == "minor" else "base_")
    victim = sorted(directory.glob("bucket_*"))[0]
    victim.rename(directory / "bucket_00005")
    more = pa.table({"id": [30, 31], "v": ["n", "n"], "dt": ["x", "x"],
                     "h": pa.array([1, 1], pa.int32())})
    flat.insert(more)  # two more deltas: work for both compactions
    flat.insert(more)
    consumers = whole_consumers(flat)
    del consumers[2]  # the change feed cannot start below a base (NotEnoughHistoryError)
    if kind == "major":  # a minor compaction does not read the base: it compacts around it
        del consumers[-2]
    for action in consumers:
        with pytest.raises(MissingDataError, match=r"compaction txn \d+ committed bucket "
                           f"file|{victim.name} is not there") as caught:
            action()
        assert caught.value.path == str(victim)


def test_compacted_and_cleaned_directories_are_not_missing(wh: Warehouse, flat: Table) -> None:
    from compaction import Cleaner

    before = flat.to_arrow().sort_by("id")
    assert compact(flat, "minor").compacted
    Cleaner(wh, retention_seconds=0).run()
    assert flat.to_arrow().sort_by("id").equals(before)
    assert compact(flat, "major").compacted
    Cleaner(wh, retention_seconds=0).run()
    assert not only(flat.location, "base_").name.startswith("delta")
    assert flat.to_arrow().sort_by("id").equals(before)
    flat.insert_overwrite(pa.table({"id": [7], "v": ["o"], "dt": ["x"],
                                    "h": pa.array([1], pa.int32())}))
    assert flat.to_arrow().column("id").to_pylist() == [7]


def test_compaction_does_not_fold_a_missing_directory_into_a_base(flat: Table) -> None:
    gone = only(flat.location, "delete_delta_0000002")
    shutil.rmtree(gone)
    for kind in ("minor", "major"):  # planned from the record: its first file is not there
        with pytest.raises(MissingDataError, match="is not there") as caught:
            compact(flat, kind)
        assert (caught.value.path or "").startswith(str(gone) + "/")
    assert not [p for p in Path(flat.location, "dt=x", "h=1").iterdir() if "_v" in p.name]


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00:00", "9999-12-31T23:59:59",
                                   "1677-09-21T00:12:43", "2262-04-11T23:47:17"])
def test_timestamps_no_reader_can_decode_are_refused_at_write(wh: Warehouse, unit: str,
                                                              value: str) -> None:
    """Issue 13.3: they were written, then every read of the table failed."""
    t = wh.create_table("db.ts", pa.schema([("id", pa.int64()), ("at", pa.timestamp(unit))]))
    t.insert(pa.table({"id": [0], "at": pa.array([0], pa.timestamp(unit))}))
    bad = pa.array([None, dt.datetime.fromisoformat(value)], pa.timestamp(unit))
    with pytest.raises(SchemaMismatchError, match=r"'at' holds .*outside 1677-09-21"):
        t.insert(pa.table({"id": [1, 2], "at": bad}))
    assert t.to_arrow().column("id").to_pylist() == [0]  # nothing written, still readable


@pytest.mark.parametrize("unit", ["s", "ms"])
@pytest.mark.parametrize("value", [10**12 * 1000, -(10**12) * 1000])
def test_timestamps_past_year_9999_are_refused_with_their_raw_value(
        wh: Warehouse, unit: str, value: int) -> None:
    """Python's datetime cannot show them: the refusal names the raw count instead of
    failing with OverflowError while building its message."""
    t = wh.create_table("db.ts", pa.schema([("id", pa.int64()), ("at", pa.timestamp(unit))]))
    with pytest.raises(SchemaMismatchError, match=rf"'at' holds {value} {unit} from 1970"):
        t.insert(pa.table({"id": [1], "at": pa.array([value], pa.timestamp(unit))}))
    assert t.to_arrow().num_rows == 0


# --- compacted directories are checked against the compaction's record ----------------------


def compacted(table: Table, kind: Kind, prefix: str) -> Path:
    """Compact ``table`` (and clean, so only the output holds the rows), then its output
    directory starting with ``prefix``."""
    from compaction import Cleaner

    assert compact(table, kind).compacted
    Cleaner(handle_of(table).core, retention_seconds=0).run()
    found = only(table.location, prefix)
    assert "_v" in found.name
    return found


@pytest.mark.parametrize(("kind", "prefix"), [("major", "base_"), ("minor", "delta_"),
                                              ("minor", "delete_delta_")])
@pytest.mark.parametrize("how", ["removed", "truncated"])
def test_a_bucket_file_gone_from_a_compacted_directory_is_named(
        flat: Table, kind: Kind, prefix: str, how: str) -> None:
    """A base_N_vT or delta_x_y_vT that lost a bucket file read as fewer rows (or brought
    deleted rows back): the compaction's commit records its files now."""
    directory = compacted(flat, kind, prefix)
    assert flat.to_arrow().num_rows == 9
    flat.insert(pa.table({"id": [30], "v": ["n"], "dt": ["x"], "h": pa.array([1], pa.int32())}))
    victim = sorted(directory.glob("bucket_*"))[0]
    if how == "removed":
        victim.unlink()
    else:
        victim.write_bytes(b"")
    for action in [flat.to_arrow]:  # planned from the record: the file fails as it is opened
        with pytest.raises(DataError) as caught:  # gone, or 0 bytes of a share of them
            action()
        assert caught.value.path == str(victim)
    before = sorted(p.name for p in directory.parent.iterdir())
    # a compaction opens it too, and names it missing: it would fold no events of it
    kinds: list[Kind] = ["major"] if kind == "major" else ["minor", "major"]
    for compaction in kinds:
        with pytest.raises(MissingDataError, match=r"is not there|is empty") as caught:
            compact(flat, compaction)
        assert caught.value.path == str(victim)
    assert sorted(p.name for p in directory.parent.iterdir()) == before


def test_a_removed_compacted_directory_is_named(flat: Table) -> None:
    base = compacted(flat, "major", "base_")
    flat.insert(pa.table({"id": [30], "v": ["n"], "dt": ["x"], "h": pa.array([1], pa.int32())}))
    shutil.rmtree(base)
    for action in (flat.to_arrow, lambda: compact(flat, "major")):
        with pytest.raises(MissingDataError, match="is not there") as caught:
            action()
        assert (caught.value.path or "").startswith(str(base) + "/")


def test_compacted_directories_without_a_record_read_as_before(wh: Warehouse,
                                                               flat: Table) -> None:
    """Hive's compactor (or one before metastore schema 6) records nothing: its directories
    are read unchecked, as before."""
    import sqlite3

    base = compacted(flat, "major", "base_")
    rows = flat.to_arrow().sort_by("id")
    with sqlite3.connect(Path(wh.location) / "_acidstore_metastore.db") as conn:
        conn.execute("DELETE FROM compaction_outputs")
        # a table of before metastore schema 12, whose reads list (``read.record_plan``)
        conn.execute("UPDATE tables SET originals_recorded = 0")
    handle = handle_of(flat)
    handle.info = dataclasses.replace(handle.info, originals_recorded=False)
    conn.close()
    sorted(base.glob("bucket_*"))[0].unlink()  # undetectable without the record
    assert flat.to_arrow().num_rows < rows.num_rows


# --- directories no write recorded (copied under a committed write id) ----------------------


@pytest.mark.parametrize(("source", "copy"), [
    ("delta_0000003_0000003_0000", "delta_0000003_0000003_0007"),  # a new statement id
    ("delta_0000003_0000003_0000", "delta_0000002_0000002_0003"),  # write 2 only deleted
    ("delete_delta_0000002_0000002_0000", "delete_delta_0000003_0000003_0000"),
])
def test_a_directory_copied_under_a_committed_write_id_is_not_read(
        flat: Table, source: str, copy: str) -> None:
    rows = flat.to_arrow().sort_by("id")
    feed = flat.changes(1, 3)
    partition = Path(flat.location, "dt=x", "h=1")
    shutil.copytree(partition / source, partition / copy)
    assert flat.to_arrow().sort_by("id").equals(rows)  # planned from the record: not read
    assert reported(flat, partition / copy) == {"unknown_write"}
    assert flat.changes(1, 3).equals(feed)  # the feed plans from the record too
    assert_compaction_ignores(flat, partition / copy, ("minor", "major"))
    shutil.rmtree(partition / copy)
    assert flat.to_arrow().sort_by("id").equals(rows)


def test_a_ranged_delta_copied_in_is_not_compacted(flat: Table) -> None:
    """A ranged delta without ``_v`` (a streaming batch's, or an old compactor's shape) that
    no write recorded: a listing selects it in place of the deltas it spans, while reads of
    a warehouse table never see it, so a compaction that lists takes it for those writes'
    rows (the record check does not judge a ranged delta's origin). Planned from the record,
    the compaction keeps exactly the rows reads return."""
    partition = Path(flat.location, "dt=x", "h=1")
    copy = partition / "delta_0000001_0000003"
    shutil.copytree(only(flat.location, "delta_0000001"), copy)
    rows = flat.to_arrow().sort_by("id")
    assert sorted(rows.column("id").to_pylist()) == [3, 4, 5, 6, 7, 8, 9, 20, 21]
    assert reported(flat, copy) == {"unknown_write"}
    assert_compaction_ignores(flat, copy, ("minor", "major"))
    assert flat.to_arrow().sort_by("id").equals(rows)


@pytest.mark.parametrize("copy", ["base_0000004", "base_0000005"])
def test_a_compacted_base_copied_under_a_write_id_is_not_read(flat: Table, copy: str) -> None:
    """A major compaction's base copied without its ``_v`` suffix (``cp -r base_3_v5
    base_4``) carries the ``_metadata_acid`` marker of a pre-Hive-4 compactor's base, and
    reads skipped judging such a base: in a warehouse table it was read as write 4's base,
    hiding every later delete and update (fsck reported it as ``unknown_write``). Only
    Hive's own directories, which no metastore of ours records, are read that way."""
    base = compacted(flat, "major", "base_")
    flat.delete("id = 5")  # write id 4
    if copy == "base_0000005":
        flat.update("id = 6", {"v": "'u'"})  # write id 5
    rows = flat.to_arrow().sort_by("id")
    partition = base.parent
    shutil.copytree(base, partition / copy)
    assert (partition / copy / "_metadata_acid").exists()
    assert flat.to_arrow().sort_by("id").equals(rows)  # planned from the record: not read
    assert reported(flat, partition / copy) == {"unknown_write"}
    assert_compaction_ignores(flat, partition / copy)
    shutil.rmtree(partition / copy)
    assert flat.to_arrow().sort_by("id").equals(rows)


def test_a_compacted_directory_copied_into_another_partition_is_not_read(flat: Table) -> None:
    flat.insert(pa.table({"id": [30], "v": ["c"], "dt": ["x"], "h": pa.array([2], pa.int32())}))
    output = compacted(flat, "minor", "delta_")
    other = Path(flat.location, "dt=x", "h=2")
    shutil.copytree(output, other / output.name)
    assert sorted(flat.to_arrow(filter="h = 2").column("id").to_pylist()) == [30]
    assert reported(flat, other / output.name) == {"unknown_write"}
    flat.insert(pa.table({"id": [31], "v": ["c"], "dt": ["x"], "h": pa.array([2], pa.int32())}))
    assert_compaction_ignores(flat, other / output.name, ("minor", "major"))
    assert sorted(flat.to_arrow(filter="h = 2").column("id").to_pylist()) == [30, 31]


def test_multi_statement_writes_and_merges_are_not_strays(wh: Warehouse, flat: Table) -> None:
    """Every statement of a write records its own directories (a MERGE's clauses too)."""
    def rows(ids: list[int]) -> pa.Table:
        return pa.table({"id": ids, "v": ["m"] * len(ids), "dt": ["x"] * len(ids),
                         "h": pa.array([1] * len(ids), pa.int32())})

    with wh.transaction() as txn:
        t = txn.table("db.f")
        t.insert(rows([40, 41]))
        t.delete("id = 40")
        t.update("id = 41", {"v": "'w'"})
        t.insert(rows([42]))
    flat.merge(rows([41, 43]), "t.id = s.id").when_matched_update({"v": "'u'"}) \
        .when_not_matched_insert_all().execute()
    assert sorted(flat.to_arrow().column("id").to_pylist()) == [3, 4, 5, 6, 7, 8, 9, 20, 21,
                                                                41, 42, 43]
    assert wh.fsck() .num_rows == 0


@pytest.mark.parametrize("with_row_id", [False, True])
def test_an_event_copied_inside_a_compacted_base_is_refused(flat: Table,
                                                           with_row_id: bool) -> None:
    """A ROW__ID inserted twice in a base read as a duplicate row whenever the read did not
    decode ROW__IDs; the file's event count, recorded by the compaction, gives it away for
    free (its footer is read anyway)."""
    import pyarrow.fs as pafs
    import pyarrow.orc as po

    from acidstore.format.orc.file_writer import write_event_file

    victim = sorted(compacted(flat, "major", "base_").glob("bucket_*"))[-1]
    events = po.ORCFile(str(victim)).read()
    victim.unlink()  # rewritten with consistent Hive metadata: only the count gives it away
    write_event_file(pafs.LocalFileSystem(), str(victim),
                     pa.concat_tables([events.slice(0, 1), events]))
    path = str(victim)
    actions: list[Callable[[], object]] = [
        lambda: flat.to_arrow(with_row_id=with_row_id),
        lambda: flat.to_arrow(columns=["id"], filter="id > 0")]
    for action in actions:
        # the bytes the compaction recorded for the directory (schema 11's listing check)
        # give it away before the file is opened; its event count when they happen to match
        with pytest.raises(DataError, match=r"holds \d+ events, but the compaction that "
                           r"wrote it recorded \d+|committed \d+ bytes of bucket files in "
                           r".*, but they hold \d+|of \d+ bytes, but it holds \d+") as caught:
            action()
        assert caught.value.path in (path, str(victim.parent))


@pytest.mark.parametrize("partition", [("x", 1), ("new", 7)], ids=["old-partition",
                                                                   "new-partition"])
def test_files_of_an_aborted_write_left_after_cleaning_are_not_read(
        wh: Warehouse, table: Table, partition: tuple[str, int]) -> None:
    """A task still writing after its job failed puts files into an aborted write's
    directory after the abort removed it. Once the cleaner has forgotten that write id, the
    snapshot no longer lists it as aborted: its rows would be read as committed ones, and
    the next write's commit made them visible. No record lists that write id: reads and
    compactions plan from the record and never open them, the cleaner leaves them, fsck
    names them."""
    from compaction import Cleaner

    dt_value, h = partition
    row = pa.table({"id": [9], "v": ["ghost"], "dt": [dt_value], "h": pa.array([h], pa.int32())})
    txn = wh.transaction()
    txn.table("db.t").insert(row)
    written = sorted(Path(table.location).glob(f"dt={dt_value}/h={h}/delta_*"))[-1]
    kept = Path(wh.location).parent / "kept"
    shutil.copytree(written, kept)
    txn.abort("its job failed")
    Cleaner(wh, retention_seconds=0).run()
    assert not written.exists()
    shutil.copytree(kept, written)  # the straggler's files
    table.insert(pa.table({"id": [10], "v": ["real"], "dt": ["y"],
                           "h": pa.array([1], pa.int32())}))
    # planned from the record: the straggler's files are never read; fsck names them
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 10]
    assert reported(table, written) == {"unknown_write"}
    table.insert(row.set_column(0, "id", pa.array([11])).set_column(1, "v", pa.array(["r"])))
    assert_compaction_ignores(table, written, ("minor", "major"))
    shutil.rmtree(written)
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 10, 11]


@pytest.mark.parametrize("level", ["dt=x", "dt=x/h=1"])
def test_a_removed_partition_directory_is_named_not_read_around(wh: Warehouse, level: str
                                                                ) -> None:
    """A partition's rows lived only in its directory: with the directory gone (``rm -r
    dt=x``), reads listed the partitions left and answered without its rows, DML and
    compaction ran around it, and fsck found nothing. The metastore records every partition
    a commit wrote, so a recorded one that is not there is missing data."""
    t = wh.create_table("db.p", SCHEMA, partition_by=["dt", "h"])
    t.insert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"],
                       "h": pa.array([1, 1, 1], pa.int32())}))
    t.delete("id = 1")
    shutil.rmtree(Path(t.location, level))
    gone = str(Path(t.location, "dt=x", "h=1"))
    for action in (t.to_arrow, lambda: t.delete("id = 3"), lambda: t.changes(1, 2),
                   lambda: compact(t, "major")):
        with pytest.raises(MissingDataError) as caught:
            action()
        assert (caught.value.path or "").startswith(gone), caught.value.path
    # a read the partition filter keeps away from the missing partition is answered
    assert t.to_arrow(filter="dt = 'y'").column("id").to_pylist() == [3]
    found = wh.fsck("db.p").to_pylist()
    assert {(f["check"], f["partition"]) for f in found} == {
        ("missing_directory", "dt=x/h=1")}, found


def test_a_moved_table_directory_is_named_not_read_as_empty(wh: Warehouse) -> None:
    """The table's directory renamed away: every partition is missing, not an empty table."""
    t = wh.create_table("db.m", SCHEMA, partition_by=["dt", "h"])
    t.insert(pa.table({"id": [1], "v": ["a"], "dt": ["x"], "h": pa.array([1], pa.int32())}))
    Path(t.location).rename(Path(t.location).with_name("m_moved"))
    with pytest.raises(MissingDataError):
        t.to_arrow()
    assert wh.fsck("db.m").column("check").to_pylist() == ["missing_directory"]
