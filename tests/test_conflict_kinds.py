"""Each write-write conflict raises the WriteConflictError subclass that says what the other
transaction did, naming both transactions, the table and the partition (as Delta's
ConcurrentAppend / ConcurrentDeleteRead / ConcurrentDeleteDelete exceptions do).

Transactions here are interleaved by hand (one opened, another committed, then the first
commits), which is the only order in which a conflict can arise; the multi-process races are in
test_table_concurrency.py and test_commit_safety.py.
"""

from __future__ import annotations

from pathlib import Path

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


@pytest.fixture
def table(tmp_path: Path) -> tuple[Warehouse, Table]:
    wh = acidstore.connect(tmp_path / "wh")
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


def test_updates_of_one_row_are_a_delete_delete_conflict(table: tuple[Warehouse, Table]
                                                         ) -> None:
    wh, t = table
    slow = wh.transaction()
    slow.table("db.t").update("id = 1", {"v": "v + 1"})
    fast = wh.transaction()
    fast.table("db.t").delete("id = 1")
    fast.commit()
    with pytest.raises(WriteConflictError) as caught:
        slow.commit()
    check(caught, ConcurrentDeleteDeleteError, slow.txn_id, fast.txn_id, "u/d")
    assert rows(t) == [(2, 0, "a"), (3, 0, "b")]


def test_updates_of_different_rows_do_not_conflict(table: tuple[Warehouse, Table]) -> None:
    wh, t = table
    slow = wh.transaction()
    slow.table("db.t").update("id = 1", {"v": "v + 1"})
    t.update("id = 2", {"v": "v + 5"})
    slow.commit()
    assert rows(t) == [(1, 1, "a"), (2, 5, "a"), (3, 0, "b")]


def test_an_update_under_a_committed_overwrite_is_a_delete_read_conflict(
        table: tuple[Warehouse, Table]) -> None:
    wh, t = table
    slow = wh.transaction()
    slow.table("db.t").update("id = 1", {"v": "v + 1"})
    fast = wh.transaction()
    fast.table("db.t").insert_overwrite(pa.table({"id": [9], "v": [9], "dt": ["a"]}))
    fast.commit()
    with pytest.raises(WriteConflictError) as caught:
        slow.commit()
    check(caught, ConcurrentDeleteReadError, slow.txn_id, fast.txn_id, "u/o")
    assert rows(t) == [(3, 0, "b"), (9, 9, "a")]


def test_an_insert_hidden_by_a_committed_overwrite_is_a_delete_read_conflict(
        table: tuple[Warehouse, Table]) -> None:
    wh, t = table
    slow = wh.transaction()
    slow.table("db.t").insert(pa.table({"id": [7], "v": [7], "dt": ["a"]}))
    fast = wh.transaction()
    fast.table("db.t").insert_overwrite(pa.table({"id": [9], "v": [9], "dt": ["a"]}))
    fast.commit()
    with pytest.raises(WriteConflictError) as caught:
        slow.commit()
    check(caught, ConcurrentDeleteReadError, slow.txn_id, fast.txn_id, "i/o")
    assert rows(t) == [(3, 0, "b"), (9, 9, "a")]


def test_an_overwrite_after_a_committed_update_is_an_append_conflict(
        table: tuple[Warehouse, Table]) -> None:
    wh, t = table
    slow = wh.transaction()
    slow.table("db.t").insert_overwrite(pa.table({"id": [9], "v": [9], "dt": ["a"]}))
    fast = wh.transaction()
    fast.table("db.t").update("id = 2", {"v": "v + 1"})
    fast.commit()
    with pytest.raises(WriteConflictError) as caught:
        slow.commit()
    check(caught, ConcurrentAppendError, slow.txn_id, fast.txn_id, "o/u")
    assert rows(t) == [(1, 0, "a"), (2, 1, "a"), (3, 0, "b")]


def test_two_overwrites_of_one_partition_are_a_delete_delete_conflict(
        table: tuple[Warehouse, Table]) -> None:
    wh, t = table
    slow = wh.transaction()
    slow.table("db.t").insert_overwrite(pa.table({"id": [8], "v": [8], "dt": ["a"]}))
    fast = wh.transaction()
    fast.table("db.t").insert_overwrite(pa.table({"id": [9], "v": [9], "dt": ["a"]}))
    fast.commit()
    with pytest.raises(WriteConflictError) as caught:
        slow.commit()
    check(caught, ConcurrentDeleteDeleteError, slow.txn_id, fast.txn_id, "o/o")
    assert rows(t) == [(3, 0, "b"), (9, 9, "a")]


# --- isolation levels ----------------------------------------------------------------------------


def serializable(tmp_path: Path, level: str) -> tuple[Warehouse, Table]:
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"],
                        properties={"acidstore.isolationLevel": level})
    t.insert(pa.table({"id": [1, 2, 3], "v": [0, 0, 0], "dt": ["a", "a", "b"]}))
    return wh, t


@pytest.mark.parametrize("level", ["WriteSerializable", "Serializable"])
def test_an_update_and_an_append_conflict_only_when_serializable(tmp_path: Path,
                                                                 level: str) -> None:
    wh, t = serializable(tmp_path, level)
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
def test_two_merges_inserting_one_key(tmp_path: Path, level: str) -> None:
    """The classic lost-uniqueness race: each MERGE's read finds no id 9 and inserts it."""
    wh, t = serializable(tmp_path, level)
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


def test_serializable_statements_in_other_partitions_commit(tmp_path: Path) -> None:
    wh, t = serializable(tmp_path, "Serializable")
    slow = wh.transaction()
    slow.table("db.t").delete("dt = 'b'")
    t.insert(pa.table({"id": [4], "v": [0], "dt": ["a"]}))
    slow.commit()
    assert rows(t) == [(1, 0, "a"), (2, 0, "a"), (4, 0, "a")]


def test_an_unknown_isolation_level_is_refused(tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh, pytest.raises(
            InvalidInputError, match=r"acidstore\.isolationLevel='Snapshot' of db\.t"):
        wh.create_table("db.t", SCHEMA, properties={"acidstore.isolationLevel": "Snapshot"})
