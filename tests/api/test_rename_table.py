"""``Warehouse.rename_table``: the rows, every version and the files stay with the table; the
old name is free and fails everywhere with ``TableNotFoundError`` (a new ``wh.table``, a
``Table`` object opened before, the command line); a rename under a writer is refused; the
old name can be used again for a new table with a directory of its own. On both metastores.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import acidstore
from acidstore import Table, Warehouse
from acidstore.cli.main import main
from acidstore.errors import (
    InvalidInputError,
    TableBusyError,
    TableExistsError,
    TableNotFoundError,
)
from compaction import Worker

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


@pytest.fixture
def wh(store_wh: Warehouse) -> Warehouse:
    """A warehouse on each metastore (tests/api/conftest.py)."""
    return store_wh


def rows(t: Table, **read: Any) -> list[tuple[Any, ...]]:
    """The table's rows, sorted: exact comparisons."""
    return sorted(tuple(r.values()) for r in t.to_arrow(**read).to_pylist())


def data(ids: list[int], dt: str = "a", v: str = "x") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt] * len(ids)})


def history(t: Table) -> list[tuple[int, str]]:
    return [(h["write_id"], h["operation"]) for h in t.history().to_pylist()]


def files_under(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, names in os.walk(path) for f in names)


def test_rows_history_and_time_travel_stay_with_the_table(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=4)
    t.insert(data([1, 2, 3]))
    t.update("id = 2", {"v": "'two'"})
    t.delete("id = 3")
    t.insert(data([4], dt="b"))
    before = rows(t, with_row_id=True)
    times = [h["commit_time"] for h in t.history().to_pylist()]
    location, files = t.location, files_under(t.location)
    u = wh.rename_table("db.t", "db.u")
    assert (u.name, u.location, u.schema) == ("db.u", location, t.schema)
    assert files_under(location) == files  # nothing moved
    assert rows(u, with_row_id=True) == before
    assert rows(u) == [(1, "x1", "a"), (2, "two", "a"), (4, "x4", "b")]
    assert history(u) == [(1, "insert"), (2, "update"), (3, "delete"), (4, "insert")]
    assert rows(u, as_of=1) == [(1, "x1", "a"), (2, "x2", "a"), (3, "x3", "a")]
    assert rows(u, as_of=times[2]) == [(1, "x1", "a"), (2, "two", "a")]
    assert u.changes(1, 2).num_rows == 5  # 3 inserts, an update's pre- and postimage
    assert wh.tables() == ["db.u"] and wh.table("DB.U").name == "db.u"
    # the table goes on writing under its new name, bucketed as before
    u.insert(data([5, 6], dt="b"))
    u.update("id = 1", new_values={"v": "one"})
    assert rows(u) == [(1, "one", "a"), (2, "two", "a"), (4, "x4", "b"), (5, "x5", "b"),
                       (6, "x6", "b")]
    assert history(u)[-2:] == [(5, "insert"), (6, "update")]
    assert wh.fsck().num_rows == 0


def test_the_old_name_is_gone_everywhere(wh: Warehouse, tmp_path: Path,
                                         store: str | None,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(data([1]))
    wh.rename_table("db.t", "db.u")
    with pytest.raises(TableNotFoundError, match=r"db\.t"):
        wh.table("db.t")
    for use in (t.to_arrow, t.history, t.snapshot, lambda: t.insert(data([2])),
                lambda: t.delete("id = 1"), lambda: t.to_batches().read_all()):
        with pytest.raises(TableNotFoundError, match=r"table db\.t does not exist any more"):
            use()
    with wh.transaction() as txn, pytest.raises(TableNotFoundError, match=r"db\.t"):
        txn.table("db.t")
    with pytest.raises(TableNotFoundError):
        wh.rename_table("db.t", "db.v")
    with pytest.raises(TableNotFoundError):
        wh.drop_table("db.t")
    where = ["--warehouse", str(tmp_path / "wh"), *(["--metastore", store] if store else [])]
    assert main(["history", "db.t", *where]) == 2
    assert "TableNotFoundError" in capsys.readouterr().err
    assert main(["history", "db.u", "--json", *where]) == 0
    assert '"write_id": 1' in capsys.readouterr().out
    assert rows(wh.table("db.u")) == [(1, "x1", "a")]


def test_refusals_change_nothing(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA)
    t.insert(data([1]))
    wh.create_table("db.taken", SCHEMA)
    with pytest.raises(TableExistsError, match=r"db\.taken"):
        wh.rename_table("db.t", "db.taken")
    with pytest.raises(TableExistsError):
        wh.rename_table("db.t", "DB.T")
    for bad in ("db.1t", "a.b.c", "t/../x", "db.t-2", ""):
        with pytest.raises(InvalidInputError, match="table name"):
            wh.rename_table("db.t", bad)
    with pytest.raises(TableNotFoundError):
        wh.rename_table("db.missing", "db.v")
    assert wh.tables() == ["db.t", "db.taken"]
    assert rows(t) == [(1, "x1", "a")]


def test_a_rename_into_another_database(wh: Warehouse) -> None:
    t = wh.create_table("db1.t", SCHEMA, partition_by=["dt"])
    t.insert(data([1, 2]))
    moved = wh.rename_table("db1.t", "db2.t")
    assert wh.tables() == ["db2.t"] and wh.tables("db1") == []
    assert moved.location == t.location  # still below db1.db/: no file moves
    moved.delete("id = 1")
    assert rows(wh.table("db2.t")) == [(2, "x2", "a")]
    assert rows(moved, as_of=1) == [(1, "x1", "a"), (2, "x2", "a")]


@pytest.mark.parametrize("dropped", ["renamed", "recreated"])
def test_the_old_name_again_is_a_new_table_with_its_own_directory(
        wh: Warehouse, dropped: str) -> None:
    old = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    old.insert(data([1, 2]))
    old.delete("id = 2")
    renamed = wh.rename_table("db.t", "db.u")
    fresh = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    assert fresh.location == renamed.location + "-2"
    fresh.insert(data([7], v="new"))
    with pytest.raises(TableNotFoundError, match=r"db\.t is now another table"):
        old.to_arrow()  # never the new table's rows through the old object
    assert rows(fresh) == [(7, "new7", "a")] and history(fresh) == [(1, "insert")]
    assert rows(renamed) == [(1, "x1", "a")] and history(renamed) == [(1, "insert"),
                                                                      (2, "delete")]
    kept_files = files_under(renamed.location if dropped == "recreated" else fresh.location)
    if dropped == "renamed":
        wh.drop_table("db.u")
        assert not os.path.exists(renamed.location)
        assert rows(wh.table("db.t")) == [(7, "new7", "a")]
        assert files_under(fresh.location) == kept_files
        wh.drop_table("db.t")
        again = wh.create_table("db.t", SCHEMA)  # db.db/t is free again
        assert again.location == renamed.location and rows(again) == []
    else:
        wh.drop_table("db.t")
        assert not os.path.exists(fresh.location)
        assert rows(wh.table("db.u")) == [(1, "x1", "a")]
        assert files_under(renamed.location) == kept_files
        third = wh.create_table("db.t", SCHEMA)  # t-2 is free again; db.db/t is db.u's
        assert third.location == fresh.location and rows(third) == []
    assert wh.fsck().num_rows == 0


def test_a_transaction_writing_the_table_holds_a_rename_off(
        wh: Warehouse, tmp_path: Path, store: str | None) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(data([1]))
    with acidstore.connect(tmp_path / "wh", metastore=store) as other:
        with wh.transaction() as txn:
            txn.table("db.t").insert(data([2]))
            txn.table("db.t").delete("id = 1")
            with pytest.raises(TableBusyError, match=f"txnid:{txn.txn_id}") as busy:
                other.rename_table("db.t", "db.u")
            assert busy.value.txn_ids == (txn.txn_id,)
            assert other.tables() == ["db.t"]
        assert rows(wh.table("db.t")) == [(2, "x2", "a")]
        renamed = other.rename_table("db.t", "db.u")
        assert rows(renamed) == [(2, "x2", "a")]
        # a transaction that began before the rename and writes after it finds the table
        # under its new name only, and reads it as of its snapshot
        with wh.transaction() as txn:
            assert rows(txn.table("db.u")) == [(2, "x2", "a")]
            other.rename_table("db.u", "db.w")
            with pytest.raises(TableNotFoundError, match=r"db\.u"):
                txn.table("db.u").insert(data([3]))
            txn.abort()
        w = wh.table("db.w")
        w.insert(data([4]))
        assert rows(w) == [(2, "x2", "a"), (4, "x4", "a")]
        assert [write_id for write_id, _ in history(w)] == [1, 2, 3]
    assert wh.fsck().num_rows == 0


def test_an_aborted_write_never_removes_files_of_the_table_in_its_names_directory(
        wh: Warehouse, tmp_path: Path, store: str | None) -> None:
    """A write whose table is dropped under it removes its files at its abort; when the
    directory its name would have is a renamed table's, that table's files stay (write id 1
    names the same delta in both)."""
    renamed = wh.rename_table(_with_rows(wh, "db.t", [1, 2]).name, "db.u")
    wh.create_table("db.t", SCHEMA, partition_by=["dt"])  # at db.db/t-2, its write id 1 next
    with acidstore.connect(tmp_path / "wh", metastore=store) as other, \
            pytest.raises(TableNotFoundError, match=r"db\.t"), wh.transaction() as txn:
        txn.table("db.t").insert(data([8]))
        other.drop_table("db.t")
    assert rows(wh.table("db.u")) == [(1, "x1", "a"), (2, "x2", "a")]
    assert files_under(renamed.location) == [
        "dt=a/delta_0000001_0000001_0000/_orc_acid_version",
        "dt=a/delta_0000001_0000001_0000/bucket_00000"]
    assert wh.fsck().num_rows == 0


def _with_rows(wh: Warehouse, name: str, ids: list[int]) -> Table:
    t = wh.create_table(name, SCHEMA, partition_by=["dt"])
    t.insert(data(ids))
    return t


def test_compaction_cleaning_and_leases_after_a_rename(wh: Warehouse) -> None:
    """A compaction queued before the rename is run by a worker under the new name; the
    cleaner keeps what a reader leased before the rename (its lease names the table id)."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    for i in range(4):
        t.insert(data([2 * i, 2 * i + 1]))
    t.delete("id = 3")
    expected = rows(t)
    reader = t.to_batches()  # leases the snapshot before the rename
    queued = wh.metastore.enqueue_compaction("db.t", "dt=a", "minor", "before the rename")
    assert queued is not None
    u = wh.rename_table("db.t", "db.u")
    (done,) = Worker(wh).run()
    assert (done.compaction_id, done.table, done.state) == (
        queued.compaction_id, "db.u", "ready for cleaning")
    result = u.optimize()
    assert result.compacted and result.table == "db.u"
    kept = u.vacuum(retention_seconds=0)
    originals = [f"delta_{w:07d}_{w:07d}_0000" for w in range(1, 5)]
    assert sorted(os.path.basename(p) for p in kept.kept_for_readers) == [
        "delete_delta_0000005_0000005_0000", *originals]  # what the reader reads
    assert sorted(os.path.basename(p) for p in kept.removed) == [
        f"delete_delta_0000001_0000005_v{done.txn_id:07d}",
        f"delta_0000001_0000005_v{done.txn_id:07d}"]  # the minor's, which it does not
    assert sorted(tuple(r.values()) for r in reader.read_all().to_pylist()) == expected
    reader.close()
    assert u.vacuum(retention_seconds=0).removed
    partition = os.path.join(u.location, "dt=a")
    assert sorted(os.listdir(partition)) == [f"base_0000005_v{result.txn_id:07d}"]
    assert rows(u) == expected and rows(u, as_of=5) == expected
    entries = wh.show_compactions().to_pylist()
    assert [(e["table"], e["kind"], e["state"]) for e in entries] == [
        ("db.u", "minor", "succeeded"), ("db.u", "major", "succeeded")]
    assert wh.fsck().num_rows == 0
