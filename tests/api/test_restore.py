"""``Table.restore(version)``: Delta's RESTORE, as a new commit through the write pipeline.

After each kind of write across partitions and buckets, restoring to every earlier version
gives exactly the rows ``to_arrow(as_of=...)`` reads there; rows in both versions keep their
ROW__IDs (nothing is rewritten); the restore is one atomic statement (in a transaction that
aborts, nothing of it is seen), conflicts with a concurrent writer of the same rows as an
UPDATE does, and refuses versions it cannot restore with typed errors. Runs on both
metastores.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import acidstore
from acidstore import Table, Warehouse
from acidstore.errors import InvalidInputError, NotEnoughHistoryError, WriteConflictError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
LAYOUTS: dict[str, dict[str, Any]] = {
    "bucketed": {"partition_by": ["dt"], "bucket_by": ["id"], "buckets": 3},
    "partitioned": {"partition_by": ["dt"]},
    "plain": {},
}


@pytest.fixture
def wh(store_wh: Warehouse) -> Warehouse:
    """A warehouse on each metastore (tests/api/conftest.py)."""
    return store_wh


@pytest.fixture
def other(wh: Warehouse, store: str | None, tmp_path: Path) -> Iterator[Warehouse]:
    """A second client of the same warehouse (another process's connection)."""
    with acidstore.connect(tmp_path / "wh", metastore=store) as warehouse:
        yield warehouse


def rows(ids: list[int], dt: str, v: str = "v") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt] * len(ids)},
                    schema=SCHEMA)


def content(t: Table, **read: Any) -> list[dict[str, Any]]:
    """The rows, sorted by id (ids are unique in every version these tests make)."""
    return sorted(t.to_arrow(**read).to_pylist(), key=lambda r: r["id"])


def row_ids(t: Table, **read: Any) -> dict[int, tuple[int, int, int]]:
    """id -> ROW__ID (write id, bucket property, row id) of each row."""
    return {r["id"]: (r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"])
            for r in t.to_arrow(columns=["id"], with_row_id=True, **read).to_pylist()}


def history(t: Table) -> list[tuple[Any, ...]]:
    return [(h["write_id"], h["operation"], h["rows_inserted"], h["rows_updated"],
             h["rows_deleted"]) for h in t.history().to_pylist()]


def changed_table(wh: Warehouse, layout: str) -> Table:
    """Write ids 1..6: inserts, an update, a delete, a MERGE and an overwrite across
    partitions (and buckets)."""
    t = wh.create_table("db.t", SCHEMA, **LAYOUTS[layout])
    t.insert(pa.concat_tables([rows([1, 2, 3, 4], "a"), rows([5, 6, 7], "b")]))
    t.update("id IN (2, 6)", {"v": "'updated'"})
    t.delete("id IN (3, 7)")
    source = pa.concat_tables([rows([1], "a", "m"), rows([6], "b", "gone"), rows([8], "c")])
    (t.merge(source, "t.id = s.id")
     .when_matched_delete(condition="s.v = 'gone6'")
     .when_matched_update({"v": "s.v"})
     .when_not_matched_insert_all().execute())
    t.insert(rows([9, 10], "b"))
    if LAYOUTS[layout]:
        t.insert_overwrite(rows([11], "a"))
    else:
        t.delete("id = 9")
    return t


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_restoring_to_each_earlier_version_reads_as_that_version(
        wh: Warehouse, layout: str) -> None:
    t = changed_table(wh, layout)
    versions = [h["write_id"] for h in t.history().to_pylist()]
    assert versions == [1, 2, 3, 4, 5, 6]
    wanted = {v: content(t, as_of=v) for v in versions}
    for v in [*reversed(versions), 3, 6, 1]:
        before, now = content(t), set(row_ids(t).items())
        then = set(row_ids(t, as_of=v).items())
        result = t.restore(v)
        assert content(t) == wanted[v], v
        assert (result.operation, result.committed) == ("restore", True)
        # rows are told apart by ROW__ID: a row written again by an earlier restore is a
        # new row, which a restore to the version before it replaces once more
        assert result.rows_deleted == len(now - then), v
        assert result.rows_inserted == len(then - now), v
        assert set(row_ids(t).items()) >= now & then
        assert history(t)[-1] == (result.write_id, "restore", result.rows_inserted, 0,
                                  result.rows_deleted)
        assert result.metrics == {"num_restored_rows": result.rows_inserted,
                                  "num_removed_rows": result.rows_deleted}
        # time travel still reads the versions before the restore as they were
        assert result.write_id is not None
        assert content(t, as_of=result.write_id - 1) == before
        assert content(t, as_of=v) == wanted[v]


def test_rows_in_both_versions_are_left_alone(wh: Warehouse) -> None:
    """Only the rows that differ are deleted and written again (with new ROW__IDs); the
    others keep theirs. Restoring the current version changes nothing (an empty restore)."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    t.insert(pa.concat_tables([rows(list(range(1, 21)), "a"), rows([21, 22], "b")]))
    t.update("id = 5", {"v": "'five'"})
    t.delete("id = 21")
    t.insert(rows([30], "c"))
    old = row_ids(t)
    result = t.restore(1)
    assert (result.rows_inserted, result.rows_deleted) == (2, 2)  # 5 and 21 back; 5', 30 gone
    assert sorted(result.partitions) == ["dt=a", "dt=b", "dt=c"]
    now = row_ids(t)
    assert {i: now[i] for i in now if i not in (5, 21)} == {
        i: old[i] for i in old if i not in (5, 30)}
    assert now[5][0] == now[21][0] == result.write_id  # written again, as new rows
    same = t.restore(result.write_id)
    assert (same.rows_inserted, same.rows_deleted, same.partitions) == (0, 0, ())
    assert row_ids(t) == now
    assert history(t)[-1] == (same.write_id, "restore", 0, 0, 0)


def test_restore_by_a_moment_and_columns_added_since(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(rows([1, 2], "a"))
    t.delete("id = 1")
    moment = t.history().column("commit_time").to_pylist()[0]
    t.add_columns(pa.schema([("score", pa.float64())]))
    t.insert(pa.table({"id": [3], "v": ["v3"], "dt": ["a"], "score": [1.5]}))
    t.update("id = 2", {"score": "2.5"})
    result = t.restore(moment + timedelta(microseconds=1))
    assert content(t) == [{"id": 1, "v": "v1", "dt": "a", "score": None},
                          {"id": 2, "v": "v2", "dt": "a", "score": None}]
    assert content(t) == content(t, as_of=1)
    assert history(t)[-1] == (result.write_id, "restore", 2, 0, 2)


def test_restore_in_a_transaction(wh: Warehouse) -> None:
    """A restore inside ``wh.transaction()`` is one of its statements: seen by the later
    ones, committed with them, or (the transaction aborting) not at all."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(rows([1, 2], "a"))
    t.insert(rows([3], "b"))
    before, versions = content(t), t.history().num_rows
    with pytest.raises(RuntimeError, match="changed my mind"), wh.transaction() as txn:
        txn.table("db.t").restore(1)
        assert [r["id"] for r in content(txn.table("db.t"))] == [1, 2]
        raise RuntimeError("changed my mind")
    assert content(t) == before and t.history().num_rows == versions
    assert not any(p.name.startswith(("delta_0000003", "delete_delta_0000003"))
                   for p in Path(t.location).rglob("*"))
    with wh.transaction() as txn:
        txn.table("db.t").insert(rows([4], "b"))
        txn.table("db.t").restore(1)
        txn.table("db.t").insert(rows([5], "c"))
    assert [r["id"] for r in content(t)] == [1, 2, 5]
    assert history(t)[-1][1:] == ("insert,restore", 2, 0, 2)


def test_a_concurrent_writer_of_the_same_rows_conflicts(wh: Warehouse,
                                                        other: Warehouse) -> None:
    """First committer wins, as for an UPDATE: a restore that deletes a row another writer
    updated meanwhile fails with nothing visible; one that wrote elsewhere does not
    conflict, and neither does an UPDATE of a row both versions hold."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(rows([1, 2], "a"))
    t.insert(rows([3], "a"))
    theirs = other.table("db.t")
    with pytest.raises(WriteConflictError), wh.transaction() as txn:
        txn.table("db.t").restore(1)  # deletes row 3
        theirs.update("id = 3", {"v": "'theirs'"})
    assert content(t) == [*content(t, as_of=1), {"id": 3, "v": "theirs", "dt": "a"}]
    assert history(t)[-1][1] == "update"
    with wh.transaction() as txn:
        txn.table("db.t").restore(1)
        theirs.insert(rows([4], "b"))
        theirs.update("id = 1", {"v": "'kept'"})
    assert content(t) == [{"id": 1, "v": "kept", "dt": "a"}, {"id": 2, "v": "v2", "dt": "a"},
                          {"id": 4, "v": "v4", "dt": "b"}]
    # versions are write ids: the restore took its write id before the others committed
    assert [h[1] for h in history(t)][-3:] == ["restore", "insert", "update"]


def test_versions_that_cannot_be_restored_are_refused(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(rows([1], "a"))
    with pytest.raises(RuntimeError), wh.transaction() as txn:
        txn.table("db.t").insert(rows([2], "a"))
        raise RuntimeError("aborted: write id 2 never commits")
    t.insert(rows([4], "a"))
    versions = history(t)
    assert [v[0] for v in versions] == [1, 3]
    for bad, what in ((2, "write id 2 is not a committed version of db.t"),
                      (7, "write id 7 is not a committed version of db.t"),
                      (0, "write id 0 is not a committed version"),
                      (None, "takes the version to restore"), (True, "got True"),
                      ("1", "got '1'")):
        with pytest.raises(InvalidInputError, match=re.escape(what)):
            t.restore(bad)  # type: ignore[arg-type]
    created = wh.metastore.get_table("db.t").created
    with pytest.raises(InvalidInputError, match=r"before db\.t was created"):
        t.restore(created - timedelta(seconds=1))
    t.update("id = 1", {"v": "'x'"})
    t.optimize()
    t.vacuum(retention_seconds=0)
    with pytest.raises(NotEnoughHistoryError):
        t.restore(1)
    assert [v[0] for v in history(t) if v[0] is not None] == [1, 3, 4]
    assert t.restore(4).rows_deleted == 0  # a version the base still holds is restored
