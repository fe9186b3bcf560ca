"""A process plans a partition from the record incrementally (``read.plan_memory``): what it
plans must be exactly what a plan from scratch gives, whatever commits, aborts, open
transactions and compactions (minor and major, their ``_v`` txns committed or not in a
snapshot) happened in between, and at whatever snapshot (an older one too); and a statement
after one new commit must not redo the partition's history.

The record is a real SQLite metastore's, driven through its public API (no files: a plan
from the record lists nothing, and its splits are planned from the record's listings)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from acidstore import Warehouse
from acidstore.errors import NotEnoughHistoryError, WriteConflictError
from acidstore.format.directory import select
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.metastore import CompactionOutput, Operation, SqliteMetastore, WriteComponent
from acidstore.metastore.testing.harness import begin, new_table
from acidstore.read import plan_memory, record_plan, splits
from acidstore.read.record_plan import PlannedPartition, RecordPlan

TABLE = "default.t"
#: what each kind of write records itself as (an INSERT OVERWRITE is an insert of a base)
OPERATIONS: dict[str, Operation] = {"insert": "insert", "delete": "delete", "update": "update",
                                    "overwrite": "insert"}
PARTS = ("dt=a", "dt=b")
BUCKETS = (0, 1, 2)

# one step of history: ("write", kind, part, buckets, end) with end "commit", "abort" or
# "open"; ("finish", i, commit?) of the i-th open write; ("compact", major?, part, span,
# end)
write_step = st.tuples(st.just("write"), st.sampled_from(["insert", "delete", "update",
                                                          "overwrite"]),
                       st.sampled_from(PARTS), st.sets(st.sampled_from(BUCKETS), min_size=1),
                       st.sampled_from(["commit", "commit", "commit", "abort", "open"]))
finish_step = st.tuples(st.just("finish"), st.integers(0, 3), st.booleans())
compact_step = st.tuples(st.just("compact"), st.booleans(), st.sampled_from(PARTS),
                         st.integers(0, 4), st.sampled_from(["commit", "commit", "abort"]))
#: after each step, plan these partitions at the snapshot taken this many snapshots ago; -1:
#: as an open writer sees it now (its own write id valid though not committed, as a
#: statement's snapshot counts its own: a later commit may then add a directory of a write
#: id below the highest the record named, which the snapshot already counted)
plan_step = st.tuples(st.sampled_from([PARTS[:1], PARTS[1:], PARTS]),
                      st.sampled_from([0, 0, 0, 0, 1, 3, -1, -1]))
steps = st.lists(st.tuples(st.one_of(write_step, write_step, write_step, finish_step,
                                     compact_step), plan_step), min_size=2, max_size=24)


@dataclass
class History:
    """The metastore and what the steps left open."""

    metastore: SqliteMetastore
    path: Path
    location: str
    #: the open writes' components, by txn
    pending: dict[int, WriteComponent] = field(default_factory=dict)
    #: every write id committed so far, by partition
    committed: dict[str, list[int]] = field(default_factory=dict)
    snapshots: list[tuple[ValidTxnList, ValidWriteIdList]] = field(default_factory=list)

    def write(self, kind: str, part: str, buckets: set[int], end: str) -> None:
        txn = begin(self.metastore)
        write_id = self.metastore.allocate_write_id(txn, TABLE)
        names = {"insert": [f"delta_{write_id:07d}_{write_id:07d}_0000"],
                 "delete": [f"delete_delta_{write_id:07d}_{write_id:07d}_0000"],
                 "update": [f"delete_delta_{write_id:07d}_{write_id:07d}_0000",
                            f"delta_{write_id:07d}_{write_id:07d}_0001"],
                 "overwrite": [f"base_{write_id:07d}"]}[kind]
        files = tuple((f"{part}/{name}/bucket_{b:05d}", 100 + b + write_id)
                      for name in names for b in sorted(buckets))
        component = WriteComponent(TABLE, part, OPERATIONS[kind],
                                   write_id, tuple(f"{part}/{n}" for n in names),
                                   bucket_files=files)
        self.metastore.record_write(txn, component)
        if end == "commit":
            self._commit(txn, component)
        elif end == "abort":
            self.metastore.abort(txn)
        else:
            self.pending[txn] = component

    def finish(self, index: int, commit: bool) -> None:
        if not self.pending:
            return
        txn = list(self.pending)[index % len(self.pending)]
        component = self.pending.pop(txn)
        if commit:
            self._commit(txn, component)
        else:
            self.metastore.abort(txn)

    def _commit(self, txn: int, component: WriteComponent) -> None:
        """Commit, unless it conflicts with a write committed since it began (two deletes
        of a partition): then the metastore aborts it, as it would a writer's."""
        try:
            self.metastore.commit(txn, [component])
        except WriteConflictError:
            return
        self.committed.setdefault(component.partition, []).append(component.write_id)

    def compact(self, major: bool, part: str, span: int, end: str) -> None:
        ids = sorted(self.committed.get(part, []))
        if not ids:
            return
        high = ids[-1]
        low = ids[max(0, len(ids) - 1 - span)]
        txn = self.metastore.open_transaction(user="t", host="h", kind="compaction").txn_id
        if major:
            names = [f"base_{high:07d}_v{txn:07d}"]
        else:
            names = [f"delta_{low:07d}_{high:07d}_v{txn:07d}",
                     f"delete_delta_{low:07d}_{high:07d}_v{txn:07d}"]
        outputs = [CompactionOutput(TABLE, part, f"{part}/{name}", 1, 3, 300,
                                    (("bucket_00000", 3),)) for name in names]
        if end == "commit":
            with contextlib.suppress(WriteConflictError):  # else aborted by the metastore
                self.metastore.commit(txn, [], outputs=outputs)
        else:
            self.metastore.abort(txn)

    def snapshot(self, own: bool = False) -> tuple[ValidTxnList, ValidWriteIdList]:
        txns = self.metastore.valid_txns()
        writer = next(iter(self.pending)) if own and self.pending else None
        taken = (txns, self.metastore.valid_write_ids(TABLE, txns, writer))
        self.snapshots.append(taken)
        return taken


Outcome = PlannedPartition | None | str


def _outcomes(metastore: SqliteMetastore, location: str, parts: tuple[str, ...],
              txns: ValidTxnList, write_ids: ValidWriteIdList
              ) -> dict[str, tuple[Outcome, list[Any]]]:
    """Each partition's plan (or the error it raises) and its splits, all buckets and one."""
    plan = RecordPlan(metastore, TABLE, location)
    paths = [afs.join(location, part) for part in parts]
    try:
        planned: dict[str, PlannedPartition | None] = plan.plan_many(paths, write_ids, txns)
    except NotEnoughHistoryError as exc:
        return {"error": (str(exc), [])}
    fs = pafs.LocalFileSystem()
    found: dict[str, tuple[Outcome, list[Any]]] = {}
    for path, known in planned.items():
        found[path] = (known, [] if known is None else [
            known.splits(fs, path, write_ids), known.splits(fs, path, write_ids, frozenset({1}))])
    return found


def _run(history: History, plan: list[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> None:
    """Apply the steps; after each compare the kept plan with one from scratch (a metastore
    object of its own, so that nothing is remembered)."""
    for step, (parts, age) in plan:
        if step[0] == "write":
            _, kind, part, buckets, end = step
            history.write(kind, part, buckets, end)
        elif step[0] == "finish":
            history.finish(step[1], step[2])
        else:
            history.compact(*step[1:])
        history.snapshot(own=age < 0)
        txns, write_ids = history.snapshots[max(0, len(history.snapshots) - 1 - max(age, 0))]
        kept = _outcomes(history.metastore, history.location, parts, txns, write_ids)
        fresh_store = SqliteMetastore(history.path)
        try:
            fresh = _outcomes(fresh_store, history.location, parts, txns, write_ids)
        finally:
            fresh_store.close()
        assert kept == fresh, (step, write_ids, txns)


@given(plan=steps)
# a write committed after a later one, seen first by a snapshot that already counted it
@example(plan=[(("write", "insert", "dt=a", {0}, "open"), (PARTS, 0)),
               (("write", "insert", "dt=a", {0}, "commit"), (PARTS, -1)),
               (("finish", 0, True), (PARTS, 0))])
# a minor compaction's output committed after the snapshot, then read at a later one
@example(plan=[(("write", "update", "dt=a", {0, 1}, "commit"), (PARTS, 0)),
               (("write", "insert", "dt=a", {1}, "commit"), (PARTS, 0)),
               (("compact", False, "dt=a", 1, "commit"), (PARTS, 1)),
               (("write", "delete", "dt=a", {2}, "commit"), (PARTS, 0))])
# a write open inside a compacted range, aborted after the plan: no new directory, but the
# range now holds an aborted write
@example(plan=[(("write", "insert", "dt=a", {0}, "commit"), (PARTS, 0)),
               (("write", "insert", "dt=a", {0}, "open"), (PARTS, 0)),
               (("write", "insert", "dt=a", {0}, "commit"), (PARTS, 0)),
               (("compact", False, "dt=a", 1, "commit"), (PARTS, 0)),
               (("finish", 0, False), (PARTS, 0))])
def test_a_kept_plan_is_the_plan_from_scratch(
        tmp_path_factory: pytest.TempPathFactory,
        plan: list[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> None:
    """Whatever happened since the last plan, and at whatever snapshot: the same state
    (selected, obsolete, aborted), listings, expected rows, exact files, recorded
    directories and splits as a plan from scratch."""
    root = tmp_path_factory.mktemp("plans")
    path = root / "ms.db"
    metastore = SqliteMetastore(path)
    try:
        location = str(root / "t")
        metastore.create_table(new_table("t", partition_by=("dt",), location=location))
        _run(History(metastore, path, location), plan)
    finally:
        metastore.close()


def test_a_statement_after_one_commit_plans_only_that_commit(
        wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second read adds the one new write to what the first planned, decides only its
    directory and plans only its splits: no earlier write is added again, Hive's selection
    runs only over the compaction outputs (for the floor), not over every directory again,
    and no earlier directory's splits are planned again."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = wh.create_table("db.t", schema, partition_by=["dt"])
    for i in range(6):
        t.insert(pa.table({"id": [i], "dt": ["a"]}, schema=schema))
    assert t.to_arrow().num_rows == 6  # planned from scratch, and kept
    t.insert(pa.table({"id": [6], "dt": ["a"]}, schema=schema))
    added: list[str] = []
    selected: list[int] = []
    add_write = record_plan._Directories.add_write

    def counted_add(self: Any, component: WriteComponent, partition: str) -> bool:
        added.append(component.directories[0])
        return add_write(self, component, partition)

    def counted_select(listing: Any, *args: Any, **kwargs: Any) -> Any:
        selected.append(len(listing.entries))
        return select(listing, *args, **kwargs)

    split_dirs: list[str] = []
    acid_files = splits._Planner.acid_files

    def counted_files(self: Any, name: str, *args: Any) -> None:
        split_dirs.append(name)
        acid_files(self, name, *args)

    monkeypatch.setattr(record_plan._Directories, "add_write", counted_add)
    monkeypatch.setattr(record_plan, "select", counted_select)
    monkeypatch.setattr(splits._Planner, "acid_files", counted_files)
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(7))
    assert added == ["dt=a/delta_0000007_0000007_0000"], added
    assert selected == [0], selected  # the floor's, over no compaction output
    assert split_dirs == ["delta_0000007_0000007_0000"], split_dirs
    # and what it planned is what a process that remembers nothing plans
    plan_memory.clear()
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(7))
    assert len(added) == 1 + 7 and selected[1:] == [0, 7], (added, selected)
    assert len(split_dirs) == 1 + 7, split_dirs
