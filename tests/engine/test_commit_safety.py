"""A committed row is never lost (wave 2, first slice).

- An insert whose write id is below a concurrent INSERT OVERWRITE's must not commit after it:
  the overwrite's ``base_W`` would hide it forever. The later committer gets a
  ``WriteConflictError`` (in-process, and a real multi-process race checked row by row).
- A commit whose answer is lost (the metastore failed after landing it, or before) is settled
  with the metastore: files are deleted only when the metastore says the transaction aborted;
  when nobody can tell, ``CommitStateUnknownError`` and the files stay.
- ``create_table`` over a location that already holds files is refused; creation is atomic.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from process_support import run_spawned
from table_workers import insert_or_overwrite_loop

import acidstore
from acidstore import Table, Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE, MARKER_FILE
from acidstore.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    InvalidInputError,
    LocationNotEmptyError,
    MetastoreError,
    MetastoreMismatchError,
    StorageError,
    TableExistsError,
    WriteConflictError,
)
from acidstore.metastore import (
    CommitCheck,
    CommitInfo,
    CompactionOutput,
    SqliteMetastore,
    StatementSummary,
    WriteComponent,
)
from compaction import compact

SCHEMA = pa.schema([pa.field("id", pa.int64())])
PARTITIONED = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])


def ids(t: Table) -> list[int]:
    return sorted(t.to_arrow(columns=["id"]).column("id").to_pylist())


def table_dirs(t: Table) -> list[str]:
    return sorted(p.name for p in Path(t.location).rglob("*") if p.is_dir())


# --- INSERT OVERWRITE against a concurrent insert --------------------------------------------


def test_insert_below_a_committed_overwrite_fails_instead_of_vanishing(tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1, 2]}))
    slow = wh.transaction()
    written = slow.table("db.t").insert(pa.table({"id": [10]}))  # takes write id 2
    overwrite = t.insert_overwrite(pa.table({"id": [20]}))          # write id 3, base_0000003
    assert written.write_id is not None and overwrite.write_id == written.write_id + 1
    with pytest.raises(WriteConflictError, match=r"i/o.*base_0000003 would hide write id 2"):
        slow.commit()
    assert slow.state == "aborted"
    assert ids(t) == [20]
    assert not any(d.startswith("delta_0000002") for d in table_dirs(t))  # aborted: removed
    t.insert(pa.table({"id": [30]}))  # the table goes on
    assert ids(t) == [20, 30]
    wh.close()


def test_a_running_overwrite_is_invisible_until_it_commits(tmp_path: Path) -> None:
    """Its base_W has W = the lowest open write id: Hive would read it (its overwrite holds an
    exclusive lock instead); readers here must keep seeing the committed rows, and a
    statement of another transaction must change those."""
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1, 2]}))
    overwriting = wh.transaction()
    overwriting.table("db.t").insert_overwrite(pa.table({"id": [20]}))
    assert ids(t) == [1, 2]
    assert t.delete("id = 1").rows_deleted == 1
    overwriting.abort()
    assert ids(t) == [2]
    wh.close()


def test_insert_above_an_overwrite_commits_in_either_order(tmp_path: Path) -> None:
    """An overwrite that took the lower write id hides nothing committed after it."""
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1]}))
    overwriting = wh.transaction()
    overwriting.table("db.t").insert_overwrite(pa.table({"id": [20]}))   # write id 2
    t.insert(pa.table({"id": [10]}))                                     # write id 3, commits
    overwriting.commit()
    assert ids(t) == [10, 20]
    wh.close()


def test_overwrite_of_another_partition_does_not_conflict(tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.p", PARTITIONED, partition_by=["dt"])
    slow = wh.transaction()
    slow.table("db.p").insert(pa.table({"id": [1], "dt": ["a"]}))
    t.insert_overwrite(pa.table({"id": [2], "dt": ["b"]}))
    slow.commit()
    assert ids(t) == [1, 2]
    slow = wh.transaction()
    slow.table("db.p").insert(pa.table({"id": [3, 4], "dt": ["a", "b"]}))
    t.insert_overwrite(pa.table({"id": [5], "dt": ["b"]}))
    with pytest.raises(WriteConflictError, match="dt=b"):
        slow.commit()  # one of its partitions is hidden: the whole transaction fails
    assert ids(t) == [1, 5]
    wh.close()


def test_racing_inserts_and_overwrites_lose_no_committed_insert(tmp_path: Path) -> None:
    """Real processes: three inserters and one overwriter on one table. The final table must
    be exactly the newest base plus every committed insert above its write id, and no insert
    may have committed after an overwrite that hides it."""
    location = str(tmp_path / "wh")
    with acidstore.connect(location) as wh:
        wh.create_table("db.race", SCHEMA)
    reports = run_spawned(insert_or_overwrite_loop,
                          [(location, w, "db.race", w == 0, 25 if w else 15)
                           for w in range(4)], deadline_seconds=240)
    with acidstore.connect(location) as wh:
        commits: list[tuple[list[int], int, int, bool]] = []  # ids, write id, commit seq, ow?
        for _, worker, log in reports:
            for written, txn_id, write_id in log:
                if write_id is not None:
                    info = wh.metastore.commit_info(txn_id)
                    assert info is not None, f"txn {txn_id} reported committed"
                    commits.append((written, write_id, info.commit_seq, worker == 0))
        overwrites = [c for c in commits if c[3]]
        assert overwrites and len(commits) > len(overwrites)
        for _, over_id, over_seq, _ in overwrites:
            for written, write_id, seq, is_overwrite in commits:
                if not is_overwrite and write_id < over_id:
                    assert seq < over_seq, f"insert {written} committed after an overwrite " \
                                           f"that hides it (write id {write_id} < {over_id})"
        newest = max(overwrites, key=lambda c: c[1])
        expected = sorted([*newest[0], *(i for written, write_id, _, ow in commits
                                          if not ow and write_id > newest[1] for i in written)])
        assert ids(wh.table("db.race")) == expected


# --- commits whose answer is lost -------------------------------------------------------------


class LostAnswerMetastore(SqliteMetastore):
    """A real SQLite metastore whose next commit, once ``armed``, fails without an answer:
    ``"after"`` it landed (a lost acknowledgement) or ``"before"`` it reached the database.
    With ``down`` every later call fails too, so nobody can tell what happened."""

    def __init__(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.armed: str | None = None
        self.down = False
        self._failed = False

    def _fail_if_down(self) -> None:
        if self._failed and self.down:
            raise MetastoreError("metastore unreachable: connection refused")

    def commit(self, txn_id: int, components: Sequence[WriteComponent], *,
               check: CommitCheck | None = None,
               outputs: Sequence[CompactionOutput] = (),
               statements: Sequence[StatementSummary] = ()) -> CommitInfo:
        self._fail_if_down()
        armed, self.armed = self.armed, None
        if armed == "before":
            self._failed = True
            raise MetastoreError("connection lost before the commit reached the metastore")
        info = super().commit(txn_id, components, check=check, outputs=outputs,
                              statements=statements)
        if armed == "after":
            self._failed = True
            raise MetastoreError("connection lost: the commit's acknowledgement never arrived")
        return info

    def abort(self, txn_id: int, reason: str = "") -> None:
        self._fail_if_down()
        super().abort(txn_id, reason)

    def commit_info(self, txn_id: int) -> CommitInfo | None:
        self._fail_if_down()
        return super().commit_info(txn_id)


def flaky_warehouse(root: Path) -> tuple[Warehouse, LostAnswerMetastore]:
    root.mkdir(parents=True, exist_ok=True)
    store = LostAnswerMetastore(root / DEFAULT_METASTORE_FILE)
    return acidstore.connect(root, metastore=store), store


def test_commit_that_landed_is_kept_when_its_answer_is_lost(tmp_path: Path) -> None:
    wh, store = flaky_warehouse(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1, 2, 3]}))
    store.armed = "after"
    result = t.update("id = 2", {"id": "20"})  # the lost answer is settled: it committed
    assert result.rows_updated == 1
    store.armed = "after"
    t.insert(pa.table({"id": [4]}))
    assert ids(t) == [1, 3, 4, 20]
    with acidstore.connect(tmp_path / "wh") as other:  # a fresh process's view
        assert ids(other.table("db.t")) == [1, 3, 4, 20]
    wh.close()


def test_commit_that_did_not_land_is_aborted_and_removed(tmp_path: Path) -> None:
    wh, store = flaky_warehouse(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1]}))
    before = table_dirs(t)
    txn = wh.transaction()
    txn.table("db.t").insert(pa.table({"id": [2]}))
    store.armed = "before"
    with pytest.raises(CommitFailedError, match="safe to retry") as caught:
        txn.commit()
    assert isinstance(caught.value.__cause__, MetastoreError)
    assert txn.state == "aborted"
    assert table_dirs(t) == before and ids(t) == [1]
    states = dict(zip(*wh.show_transactions().select(["txn_id", "state"]).to_pydict().values(),
                      strict=True))
    assert states[txn.txn_id] == "aborted"
    wh.close()


@pytest.mark.parametrize("when", ["after", "before"])
def test_unknown_outcome_keeps_the_files(tmp_path: Path, when: str) -> None:
    """The metastore goes away with the answer: no file may be deleted. Whether the rows
    show afterwards is decided by the metastore alone."""
    wh, store = flaky_warehouse(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1]}))
    txn = wh.transaction()
    txn.table("db.t").insert(pa.table({"id": [2]}))
    written = table_dirs(t)
    store.armed, store.down = when, True
    with pytest.raises(CommitStateUnknownError, match="files are kept"):
        txn.commit()
    assert txn.state == "unknown"
    assert table_dirs(t) == written
    with acidstore.connect(tmp_path / "wh") as healthy:
        assert ids(healthy.table("db.t")) == ([1, 2] if when == "after" else [1])
    wh.close()


def test_major_compaction_whose_answer_is_lost_keeps_its_base(tmp_path: Path) -> None:
    wh, store = flaky_warehouse(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    for i in range(3):
        t.insert(pa.table({"id": [i]}))
    store.armed = "after"
    result = compact(t, "major")
    assert result.txn_id is not None
    assert any(d.startswith("base_0000003_v") for d in table_dirs(t))
    assert ids(t) == [0, 1, 2]
    wh.close()


def test_compaction_with_unknown_outcome_keeps_its_output(tmp_path: Path) -> None:
    wh, store = flaky_warehouse(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    for i in range(3):
        t.insert(pa.table({"id": [i]}))
    store.armed, store.down = "after", True
    with pytest.raises(CommitStateUnknownError):
        compact(t, "major")
    assert any(d.startswith("base_0000003_v") for d in table_dirs(t))
    with acidstore.connect(tmp_path / "wh") as healthy:
        assert ids(healthy.table("db.t")) == [0, 1, 2]
    wh.close()


# --- create_table over existing files ---------------------------------------------------------


def test_create_table_refuses_a_location_holding_files(tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1, 2]}))
    location = Path(t.location)
    # the metastore loses the table while its files stay (a lost or replaced metastore file)
    wh.close()
    os.remove(tmp_path / "wh" / DEFAULT_METASTORE_FILE)
    # the warehouse's marker knows its catalogue: no new, empty one is created
    with pytest.raises(MetastoreMismatchError, match="which is gone"):
        acidstore.connect(tmp_path / "wh")
    assert not (tmp_path / "wh" / DEFAULT_METASTORE_FILE).exists()
    # without the marker too (a warehouse from before markers), create_table still refuses
    (tmp_path / "wh" / MARKER_FILE).unlink()
    wh = acidstore.connect(tmp_path / "wh")
    files = sorted(p for p in location.rglob("*"))
    with pytest.raises(LocationNotEmptyError, match=r"db\.t.*already holds files.*delta_") \
            as caught:
        wh.create_table("db.t", SCHEMA)
    assert caught.value.path == str(location)
    assert wh.tables() == [] and sorted(location.rglob("*")) == files
    wh.close()


def test_create_table_over_a_stray_file_and_an_existing_name(tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    stray = tmp_path / "wh" / "db.db" / "u"
    stray.mkdir(parents=True)
    (stray / "bucket_00000").write_bytes(b"not ours")
    with pytest.raises(LocationNotEmptyError, match="bucket_00000"):
        wh.create_table("db.u", SCHEMA)
    (stray / "bucket_00000").unlink()
    wh.create_table("db.u", SCHEMA).insert(pa.table({"id": [1]}))  # empty: fine
    with pytest.raises(TableExistsError):  # the owner of a full location is named as such
        wh.create_table("db.u", SCHEMA)
    (tmp_path / "wh" / "db.db" / "f").write_bytes(b"")
    with pytest.raises(InvalidInputError, match="is a file"):
        wh.create_table("db.f", SCHEMA)
    assert wh.tables() == ["db.u"]
    wh.close()


def test_create_table_is_atomic_when_its_directory_cannot_be_made(tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    (tmp_path / "wh" / "db.db").write_bytes(b"a file where the database directory goes")
    with pytest.raises(StorageError, match=r"cannot create the directory of table db\.t"):
        wh.create_table("db.t", SCHEMA)
    assert wh.tables() == []
    (tmp_path / "wh" / "db.db").unlink()
    assert ids(wh.create_table("db.t", SCHEMA)) == []
    wh.close()


def test_a_transaction_inside_another_ones_block_is_refused(tmp_path: Path) -> None:
    """Nested blocks were silently independent: the inner one committed, and stayed
    committed when the outer one then failed. Now the inner one is refused before it opens
    (and so is a single statement on ``wh.table``, which opens a transaction of its own)."""
    from acidstore.errors import NestedTransactionError

    wh = acidstore.connect(tmp_path / "wh")
    table = wh.create_table("db.t", SCHEMA)
    opened = len(wh.show_transactions())
    with pytest.raises(NestedTransactionError, match="write through the outer transaction"), \
            wh.transaction() as outer:
        outer.table("db.t").insert(pa.table({"id": [1]}))
        with wh.transaction() as inner:
            inner.table("db.t").insert(pa.table({"id": [2]}))
    with pytest.raises(NestedTransactionError), wh.transaction():
        table.insert(pa.table({"id": [3]}))
    assert ids(table) == []
    assert len(wh.show_transactions()) == opened + 2  # the inner ones never opened
    assert set(wh.show_transactions().column("state").to_pylist()) == {"aborted"}
    with wh.transaction() as txn:  # after a block, a new one begins as before
        txn.table("db.t").insert(pa.table({"id": [4]}))
    table.insert(pa.table({"id": [5]}))
    assert ids(table) == [4, 5]
    wh.close()
