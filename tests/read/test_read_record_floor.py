"""A read loads only the record its selected base has not replaced (``read.recorded``).

A table keeps every committed write's record forever; a read once loaded all of it, so a
compacted table's reads and DML statements cost its whole history (964 ms at 30,000 commits).
Now each partition loads the writes from its base's write id up: the work must stay flat
as the history grows, and every missing directory above the base (or, for a snapshot older
than the base, above whatever it selects) must still stop the read. A stray directory is
not read nor compacted (both plan from the record), and fsck reports it.
Work is counted in SQLite virtual-machine steps (deterministic), never in time.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from metastore_support import sqlite_steps
from stray_support import assert_compaction_ignores

from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import MissingDataError
from acidstore.fsck import fsck
from acidstore.metastore import Metastore, WriteComponent
from compaction import Cleaner, compact

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def rows(ids: list[int], dt: str = "a") -> pa.Table:
    return pa.table({"id": ids, "dt": [dt] * len(ids)}, schema=SCHEMA)


def ids(t: Table, **read: object) -> list[int]:
    return sorted(t.to_arrow(**read).column("id").to_pylist())  # type: ignore[arg-type]


def children(path: str) -> list[str]:
    return sorted(n for n in os.listdir(path) if not n.startswith((".", "_")))


def empty_commits(store: Metastore, table: str, partition: str, count: int) -> None:
    """``count`` committed writes that recorded no directory, as a Serializable statement
    that changed nothing records its partition: real history rows, with no files to make
    (a real insert costs ~25 ms here; these keep the test to seconds)."""
    for _ in range(count):
        txn = store.open_transaction(user="u", host="h").txn_id
        write_id = store.allocate_write_id(txn, table)
        store.commit(txn, [WriteComponent(table, partition, "delete", write_id, (), read=True)])


def steps(wh: Warehouse, action: Callable[[], object]) -> int:
    """SQLite VM steps (in units of 10) the action makes on this thread's connection."""
    return sqlite_steps(wh.metastore._connection(), action)  # type: ignore[attr-defined]


def test_a_compacted_tables_reads_cost_the_same_after_a_thousand_commits(
        wh: Warehouse) -> None:
    wh.metastore._connection().execute(  # type: ignore[attr-defined]
        "PRAGMA synchronous = OFF")  # only to fill the history quickly
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    read, dml = [], []
    made = 0
    for history in (50, 1000):
        empty_commits(wh.metastore, t.name, "dt=a", history - made)
        t.insert(rows([history]))
        t.insert(rows([history + 1]))
        uncompacted = steps(wh, t.to_arrow)
        compact(t, "major")
        Cleaner(wh, retention_seconds=0).run()
        assert [n[:5] for n in children(os.path.join(t.location, "dt=a"))] == ["base_"]
        read.append(steps(wh, t.to_arrow))
        dml.append(steps(wh, lambda: t.delete("id = -1")))
        made = len(t.history())
    assert made >= 1000 and ids(t) == [50, 51, 1000, 1001]
    # the counter does see the record: before the compaction the read loaded all of it
    assert uncompacted > 5 * read[1]
    assert read[1] <= read[0] * 1.2, read
    assert dml[1] <= dml[0] * 1.2, dml


@pytest.fixture
def compacted(wh: Warehouse) -> Table:
    """Write ids 1-3 compacted into base_3 and cleaned, then write 4 (a delta above it)."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    for i in range(3):
        t.insert(rows([i]))
    compact(t, "major")
    Cleaner(wh, retention_seconds=0).run()
    t.insert(rows([3]))
    return t


def reported(t: Table, path: Path) -> set[str]:
    """The fsck checks naming ``path``: reads plan from the record and never see a stray."""
    found = fsck(handle_of(t).core, t.name).to_pylist()
    return {f["check"] for f in found if f["path"] == str(path)}


def test_a_delta_copied_in_above_the_base_is_a_stray(compacted: Table) -> None:
    part = Path(compacted.location) / "dt=a"
    shutil.copytree(part / "delta_0000004_0000004_0000", part / "delta_0000004_0000004_0007")
    assert ids(compacted) == [0, 1, 2, 3]
    assert reported(compacted, part / "delta_0000004_0000004_0007") == {"unknown_write"}
    compacted.insert(rows([5]))  # work for the minor compaction too
    assert_compaction_ignores(compacted, part / "delta_0000004_0000004_0007", ("minor", "major"))
    assert ids(compacted) == [0, 1, 2, 3, 5]


def test_a_write_copied_in_as_a_base_is_a_stray(compacted: Table) -> None:
    """``base_4`` made of write 4's delta: the base's own write id is checked (the floor
    includes it), and write 4 recorded a delta, not a base."""
    part = Path(compacted.location) / "dt=a"
    shutil.copytree(part / "delta_0000004_0000004_0000", part / "base_0000004")
    assert ids(compacted) == [0, 1, 2, 3]
    assert reported(compacted, part / "base_0000004") == {"unknown_write"}
    assert_compaction_ignores(compacted, part / "base_0000004")
    assert ids(compacted) == [0, 1, 2, 3]


def test_a_missing_delta_above_the_base_stops_the_read(compacted: Table) -> None:
    part = Path(compacted.location) / "dt=a"
    shutil.rmtree(part / "delta_0000004_0000004_0000")
    with pytest.raises(MissingDataError, match="is not there") as caught:
        compacted.to_arrow()
    assert caught.value.path == str(part / "delta_0000004_0000004_0000" / "bucket_00000")
    with pytest.raises(MissingDataError):
        compacted.delete("id = 0")


def test_a_missing_file_of_an_insert_overwrite_base_stops_the_read(wh: Warehouse) -> None:
    """An INSERT OVERWRITE's ``base_W`` is write W's own directory: its files are counted
    against W's record, which the floor (W) includes."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    for i in range(3):
        t.insert(rows([i]))
    t.insert_overwrite(rows([7, 8]))
    base = Path(t.location) / "dt=a" / "base_0000004"
    assert ids(t) == [7, 8]
    t.insert(rows([9]))
    for bucket in base.iterdir():
        if bucket.name.startswith("bucket_"):
            bucket.write_bytes(b"")  # 0 bytes: the record knows it had rows
    with pytest.raises(MissingDataError, match=r"base_0000004/bucket_00000 of \d+ bytes, but "
                       "it holds 0"):
        t.to_arrow()


def test_time_travel_before_a_compaction_checks_what_it_reads(wh: Warehouse) -> None:
    """A snapshot older than the base reads the deltas the base replaced (the cleaner has
    not run): its floor is its own selection's, so a delta it needs is still checked."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    for i in range(4):
        t.insert(rows([i]))
    compact(t, "major")
    part = Path(t.location) / "dt=a"
    assert ids(t, as_of=2) == [0, 1]
    shutil.rmtree(part / "delta_0000002_0000002_0000")
    assert ids(t) == [0, 1, 2, 3]  # the current snapshot reads the base
    with pytest.raises(MissingDataError, match="delta_0000002_0000002_0000/bucket_00000 is "
                       "not there"):
        t.to_arrow(as_of=2)


def test_partitions_with_different_bases_each_get_their_own_check(wh: Warehouse) -> None:
    """One scan: dt=a's base (write 4) is read first and loads the writes from 4 up; dt=b
    has no base, so the record is loaded again from write 0, and its write 1 is checked."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(rows([0], "b"))
    for i in range(3):
        t.insert(rows([i]))
    compact(t, "major", partition="dt=a")
    Cleaner(wh, retention_seconds=0).run()
    assert children(str(Path(t.location) / "dt=a"))[0].startswith("base_0000004")
    assert ids(t) == [0, 0, 1, 2]
    shutil.rmtree(Path(t.location) / "dt=b" / "delta_0000001_0000001_0000")
    with pytest.raises(MissingDataError, match="delta_0000001_0000001_0000/bucket_00000 is "
                       "not there"):
        t.to_arrow()


def _compacted_one_by_one(wh: Warehouse, order: str) -> Table:
    """Partitions a, b, c, each compacted by its own compaction txn (the Worker's way), in
    ``order``: a scan of all three loads two compactions' outputs, then all of the table's."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    for i in range(2):
        t.insert(pa.concat_tables([rows([i], dt) for dt in "abc"]))
    for dt in order:
        compact(t, "major", partition=f"dt={dt}")
    Cleaner(wh, retention_seconds=0).run()
    assert ids(t) == [0, 0, 0, 1, 1, 1]
    return t


def test_an_emptied_file_of_a_compaction_output_is_missing_in_any_partition(
        wh: Warehouse) -> None:
    t = _compacted_one_by_one(wh, "abc")
    base = Path(t.location) / "dt=c"
    (bucket,) = (f for d in base.iterdir() for f in d.iterdir() if f.name.startswith("bucket_"))
    bucket.write_bytes(b"")
    with pytest.raises(MissingDataError, match=r"of \d+ bytes, but it holds 0"):
        t.to_arrow()
    t.insert(rows([5], "c"))  # work for a major compaction, which reads the base
    with pytest.raises(MissingDataError, match=r"of \d+ bytes, but it holds 0") as caught:
        compact(t, "major")
    assert caught.value.path == str(bucket)
    assert not [d for d in base.iterdir() if d.name.startswith("base_0000003")]  # no output


def test_another_partitions_compaction_output_copied_in_is_a_stray(wh: Warehouse) -> None:
    """dt=a's base (of the later compaction, so it sorts after and is selected) copied into
    dt=c: that compaction recorded outputs, none of them in dt=c."""
    t = _compacted_one_by_one(wh, "cba")
    (a_base,) = (Path(t.location) / "dt=a").iterdir()
    shutil.copytree(a_base, Path(t.location) / "dt=c" / a_base.name)
    assert ids(t) == [0, 0, 0, 1, 1, 1]
    assert reported(t, Path(t.location) / "dt=c" / a_base.name) == {"unknown_write"}
    t.insert(rows([5], "c"))  # work for a compaction of dt=c
    assert_compaction_ignores(t, Path(t.location) / "dt=c" / a_base.name)
    assert ids(t) == [0, 0, 0, 1, 1, 1, 5]
