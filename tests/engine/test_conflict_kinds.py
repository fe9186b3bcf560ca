"""Each write-write conflict raises the WriteConflictError subclass that says what the other
transaction did, naming both transactions, the table and the partition (as Delta's
ConcurrentAppend / ConcurrentDeleteRead / ConcurrentDeleteDelete exceptions do).

Transactions here are interleaved by hand (one opened, another committed, then the first
commits), which is the only order in which a conflict can arise; the multi-process races are in
test_table_concurrency.py and test_commit_safety.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pytest

import acidstore
from acidstore import Table, Warehouse
from acidstore.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    InvalidInputError,
    WriteConflictError,
)

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.int64()),
                    pa.field("dt", pa.string())])


@pytest.fixture(params=["sqlite", "postgresql"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Warehouse]:
    """A warehouse with its metastore on each backend: the conflict rules live in the shared
    SQL of both (conftest ``postgres_server``)."""
    store = (request.getfixturevalue("postgres_server").new_store()
             if request.param == "postgresql" else None)
    return lambda: acidstore.connect(tmp_path / "wh", metastore=store)


@pytest.fixture
def table(connect: Callable[[], Warehouse]) -> tuple[Warehouse, Table]:
    wh = connect()
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(pa.table({"id": [1, 2, 3], "v": [0, 0, 0], "dt": ["a", "a", "b"]}))
    return wh, t


def rows(t: Table) -> list[tuple[int, int, str]]:
    data = t.to_arrow().sort_by("id")
    return list(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt")), strict=True))


def check(caught: pytest.ExceptionInfo[WriteConflictError], kind: type[WriteConflictError],
          txn_id: int, other_txn_id: int, letters: str) -> None:
    error = caught.value
    assert type(error) is kind
    assert (error.txn_id, error.other_txn_id, error.table, error.partition) == (
        txn_id, other_txn_id, "db.t", "dt=a")
    assert f"[txnid:{txn_id}" in str(error) and f"[txnid:{other_txn_id}," in str(error)
    assert "db/t/dt=a" in str(error) and letters in str(error)


Statement = Callable[[Table], object]


def overwrite(row_id: int) -> Statement:
    return lambda t: t.insert_overwrite(pa.table({"id": [row_id], "v": [row_id], "dt": ["a"]}))


def update(row_id: int) -> Statement:
    return lambda t: t.update(f"id = {row_id}", {"v": "v + 1"})


Race = tuple[Statement, Statement, type[WriteConflictError], str, list[tuple[int, int, str]]]
#: slow statement, fast statement (commits first), error, Hive's letters, rows after
RACES: dict[str, Race] = {
    "update/delete one row": (update(1), lambda t: t.delete("id = 1"),
                              ConcurrentDeleteDeleteError, "u/d", [(2, 0, "a"), (3, 0, "b")]),
    "update under an overwrite": (update(1), overwrite(9), ConcurrentDeleteReadError, "u/o",
                                  [(3, 0, "b"), (9, 9, "a")]),
    "insert under an overwrite": (
        lambda t: t.insert(pa.table({"id": [7], "v": [7], "dt": ["a"]})), overwrite(9),
        ConcurrentDeleteReadError, "i/o", [(3, 0, "b"), (9, 9, "a")]),
    "overwrite after an update": (overwrite(9), update(2), ConcurrentAppendError, "o/u",
                                  [(1, 0, "a"), (2, 1, "a"), (3, 0, "b")]),
    "two overwrites": (overwrite(8), overwrite(9), ConcurrentDeleteDeleteError, "o/o",
                       [(3, 0, "b"), (9, 9, "a")]),
}


@pytest.mark.parametrize("race", list(RACES))
def test_each_conflict_has_its_kind(table: tuple[Warehouse, Table], race: str) -> None:
    slow_statement, fast_statement, kind, letters, after = RACES[race]
    wh, t = table
    slow = wh.transaction()
    slow_statement(slow.table("db.t"))
    fast = wh.transaction()
    fast_statement(fast.table("db.t"))
    fast.commit()
    with pytest.raises(WriteConflictError) as caught:
        slow.commit()
    check(caught, kind, slow.txn_id, fast.txn_id, letters)
    assert rows(t) == after


def test_updates_of_different_rows_do_not_conflict(table: tuple[Warehouse, Table]) -> None:
    wh, t = table
    slow = wh.transaction()
    slow.table("db.t").update("id = 1", {"v": "v + 1"})
    t.update("id = 2", {"v": "v + 5"})
    slow.commit()
    assert rows(t) == [(1, 1, "a"), (2, 5, "a"), (3, 0, "b")]


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_a_conflict_is_found_after_the_cleaner_removed_the_winners_delete_delta(
        table: tuple[Warehouse, Table], kind: Literal["minor", "major"]) -> None:
    """A compaction and the cleaner ran between the two commits: the winner's delete events
    are then only in the compaction's output. Reading its removed directory as "no deletes"
    used to let both updates of row 1 commit (two versions of it visible)."""
    wh, t = table
    slow = wh.transaction()  # its snapshot; its write id (taken by its first write) is
    t.update("id = 1", {"v": "v + 5"})  # above the winner's, so compaction can cover that
    slow.table("db.t").update("id = 1", {"v": "v + 1"})
    t.optimize(kind)
    t.vacuum(retention_seconds=0)
    with pytest.raises(ConcurrentDeleteDeleteError):
        slow.commit()
    assert rows(t) == [(1, 5, "a"), (2, 0, "a"), (3, 0, "b")]
    if kind == "minor":  # the compaction's delete delta still tells different rows apart
        other = wh.transaction()
        t.update("id = 1", {"v": "v + 1"})
        other.table("db.t").update("id = 2", {"v": "v + 1"})
        t.optimize("minor")
        t.vacuum(retention_seconds=0)
        other.commit()
        assert rows(t) == [(1, 6, "a"), (2, 1, "a"), (3, 0, "b")]


# --- isolation levels ----------------------------------------------------------------------------


def serializable(connect: Callable[[], Warehouse], level: str) -> tuple[Warehouse, Table]:
    wh = connect()
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"],
                        properties={"acidstore.isolationLevel": level})
    t.insert(pa.table({"id": [1, 2, 3], "v": [0, 0, 0], "dt": ["a", "a", "b"]}))
    return wh, t


@pytest.mark.parametrize("level", ["WriteSerializable", "Serializable"])
def test_an_update_and_an_append_conflict_only_when_serializable(
        connect: Callable[[], Warehouse], level: str) -> None:
    wh, t = serializable(connect, level)
    slow = wh.transaction()
    slow.table("db.t").update("v = 0", {"v": "v + 1"})  # reads partitions a and b
    fast = wh.transaction()
    fast.table("db.t").insert(pa.table({"id": [4], "v": [0], "dt": ["a"]}))
    fast.commit()
    if level == "WriteSerializable":
        slow.commit()  # blind appends never conflict
        assert rows(t) == [(1, 1, "a"), (2, 1, "a"), (3, 1, "b"), (4, 0, "a")]
        return
    with pytest.raises(WriteConflictError, match="Serializable") as caught:
        slow.commit()  # its read missed row 4, which its WHERE names: not serializable
    check(caught, ConcurrentAppendError, slow.txn_id, fast.txn_id, "u/i")
    assert rows(t) == [(1, 0, "a"), (2, 0, "a"), (3, 0, "b"), (4, 0, "a")]


@pytest.mark.parametrize("level", ["WriteSerializable", "Serializable"])
def test_two_merges_inserting_one_key(connect: Callable[[], Warehouse], level: str) -> None:
    """The classic lost-uniqueness race: each MERGE's read finds no id 9 and inserts it."""
    wh, t = serializable(connect, level)
    source = pa.table({"id": [9], "v": [9], "dt": ["a"]})
    merges = [wh.transaction(), wh.transaction()]
    for txn in merges:
        (txn.table("db.t").merge(source, "t.id = s.id", source_alias="s", target_alias="t")
         .when_not_matched_insert_all().execute())
    merges[0].commit()
    if level == "WriteSerializable":
        merges[1].commit()
        assert [r for r in rows(t) if r[0] == 9] == [(9, 9, "a"), (9, 9, "a")]
        return
    with pytest.raises(WriteConflictError) as caught:
        merges[1].commit()
    check(caught, ConcurrentAppendError, merges[1].txn_id, merges[0].txn_id, "i/i")
    assert [r for r in rows(t) if r[0] == 9] == [(9, 9, "a")]


def test_serializable_statements_in_other_partitions_commit(
        connect: Callable[[], Warehouse]) -> None:
    wh, t = serializable(connect, "Serializable")
    slow = wh.transaction()
    slow.table("db.t").delete("dt = 'b'")
    t.insert(pa.table({"id": [4], "v": [0], "dt": ["a"]}))
    slow.commit()
    assert rows(t) == [(1, 0, "a"), (2, 0, "a"), (4, 0, "a")]


def test_an_unknown_isolation_level_is_refused(tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh, pytest.raises(
            InvalidInputError, match=r"acidstore\.isolationLevel='Snapshot' of db\.t"):
        wh.create_table("db.t", SCHEMA, properties={"acidstore.isolationLevel": "Snapshot"})


def test_serializable_conflicts_in_a_partition_it_read_without_changing_it(
        connect: Callable[[], Warehouse]) -> None:
    """A DELETE that matched nothing in partition a still read it: an id 9 appended there after
    its snapshot is a row its WHERE names, so it cannot commit as if it ran after the insert.
    Two statements that only read never conflict with each other."""
    wh, t = serializable(connect, "Serializable")
    slow, reader = wh.transaction(), wh.transaction()
    assert slow.table("db.t").delete("id = 9").rows_deleted == 0
    assert reader.table("db.t").update("id = 9", {"v": "1"}).rows_updated == 0
    reader.commit()  # read-only beside read-only: no conflict
    t.insert(pa.table({"id": [9], "v": [0], "dt": ["a"]}))
    with pytest.raises(WriteConflictError, match="Serializable") as caught:
        slow.commit()
    assert type(caught.value) is ConcurrentAppendError and caught.value.partition == "dt=a"
    assert [r for r in rows(t) if r[0] == 9] == [(9, 0, "a")]
    later = wh.transaction()  # with a snapshot after the insert, the same DELETE commits
    assert later.table("db.t").delete("id = 9").rows_deleted == 1
    later.commit()
    assert [r for r in rows(t) if r[0] == 9] == []
