"""Stateful property test: compaction and cleaning never change what anyone reads.

One partitioned, bucketed table and a plain dict model (``id -> row``). Rules write (insert,
update, delete, and transactions of several statements that change rows of their own earlier
statements), write and abort (files left behind, as a dead process leaves them, or removed
by the abort), compact (minor or major, the whole table or one partition), run the cleaner
(retention 0, or a long retention that keeps what compactions replaced), open, drain or drop
streaming readers (``to_batches``, which lease their snapshot), and read ``as_of`` a past
write id.

Invariants after every step:
- the table equals the model (``to_arrow`` and both directory readers agree, ROW__IDs too);
- a compaction or a cleaner pass changes no row and no ROW__ID;
- a reader returns exactly what the table held when it was opened, however much was compacted
  and cleaned meanwhile;
- a read ``as_of`` a write id returns exactly what the table held after that write, unless a
  major compaction past that write id has been cleaned: then it may raise
  ``NotEnoughHistoryError`` (never return other rows);
- once no reader is open and a cleaner pass ran after the last compaction, no partition has an
  obsolete directory; after a pass that followed the last aborted write, no aborted directory
  is left and no aborted write id is remembered.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import pyarrow as pa
from compaction_support import (
    TABLE,
    Row,
    aborted_write,
    make_rows,
    new_table,
    read_exact,
    rows_of,
    state_of,
    values,
)
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

import acidstore
from acidstore import Table
from acidstore.errors import NotEnoughHistoryError
from compaction import Cleaner, compact

DTS = ("a", "b")
MAX_READERS = 2


def reader_rows(reader: pa.RecordBatchReader, names: list[str]) -> list[Row]:
    return _tuples_of(reader.read_all(), names)


def _tuples_of(table: pa.Table, names: list[str]) -> list[Row]:
    out = []
    for r in table.to_pylist():
        rid = r["row__id"]
        out.append(((rid["writeid"], rid["bucketid"], rid["rowid"]), *(r[n] for n in names)))
    return sorted(out, key=lambda x: (x[1], x[0]))


class CompactionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="acidstore-compaction-model-")
        self.wh = acidstore.connect(os.path.join(self.root, "wh"))
        self.t = new_table(self.wh, buckets=2)
        self.names = list(self.t.schema.names)
        self.model: dict[int, dict[str, Any]] = {}
        self.next_id = 0
        self.readers: list[tuple[pa.RecordBatchReader, list[Row]]] = []
        self.compacted_since_clean = False
        self.aborted_since_clean = False
        #: write id -> the table's rows right after that write (time travel's model)
        self.past: dict[int, list[Row]] = {0: []}
        #: highest table write id a major compaction covered, and of those cleaned since
        self.major_hwm = 0
        self.cleaned_major_hwm = 0

    def teardown(self) -> None:
        self.readers.clear()
        self.wh.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def expected(self) -> list[Row]:
        return sorted((r["id"], r["name"], r["amount"], r["dt"]) for r in self.model.values())

    def partitions(self) -> list[str]:
        return [f"dt={dt}" for dt in DTS
                if os.path.isdir(os.path.join(self.t.location, f"dt={dt}"))]

    # --- writes ----------------------------------------------------------------------------------

    @rule(dts=st.lists(st.sampled_from(DTS), min_size=1, max_size=4),
          amount=st.integers(-3, 9))
    def insert(self, dts: list[str], amount: int) -> None:
        self.remember(self.insert_into(self.t, dts, amount))

    def remember(self, write_id: int | None) -> None:
        if write_id is not None:
            self.past[write_id] = self.expected()

    @rule(k=st.integers(0, 2), add=st.integers(1, 5))
    def update(self, k: int, add: int) -> None:
        result = self.t.update(f"id % 3 = {k}", {"amount": f"amount + {add}"})
        changed = [r for r in self.model.values() if r["id"] % 3 == k]
        assert result.rows_updated == len(changed)
        for r in changed:
            r["amount"] += add
        self.remember(result.write_id)

    @rule(k=st.integers(0, 3), dt=st.sampled_from(DTS))
    def delete(self, k: int, dt: str) -> None:
        result = self.t.delete(f"id % 4 = {k} AND dt = '{dt}'")
        gone = [i for i, r in self.model.items() if i % 4 == k and r["dt"] == dt]
        assert result.rows_deleted == len(gone)
        for i in gone:
            del self.model[i]
        self.remember(result.write_id)

    @rule(steps=st.lists(st.tuples(st.sampled_from(["insert", "update", "delete"]),
                                   st.integers(0, 2), st.sampled_from(DTS)),
                         min_size=2, max_size=3),
          compact_around=st.booleans())
    def transaction(self, steps: list[tuple[str, int, str]], compact_around: bool) -> None:
        """Several statements as one write id, each seeing the rows of the ones before: an
        insert then an update of what it inserted, an update twice, an update then a delete.
        A later statement's delete events hit rows of an earlier statement of the same write
        id, which a compaction merging the statements must keep applying.

        ``compact_around``: a major compaction before and a minor one after, so that the
        minor compaction merges this write id's statements alone (``delta_w_w``, no statement
        id), the history a compaction at random points seldom makes."""
        if compact_around:
            self.compact("major", None)
        with self.wh.transaction() as txn:
            bound = txn.table(TABLE)
            for kind, k, dt in steps:
                if kind == "insert":
                    self.insert_into(bound, [dt, dt])
                elif kind == "update":
                    bound.update(f"id % 3 = {k}", {"amount": "amount + 1"})
                    for r in self.model.values():
                        if r["id"] % 3 == k:
                            r["amount"] += 1
                else:
                    bound.delete(f"id % 3 = {k} AND dt = '{dt}'")
                    for i in [i for i, r in self.model.items() if i % 3 == k and r["dt"] == dt]:
                        del self.model[i]
            info = txn.commit()
        self.remember(info.write_ids.get(TABLE))
        if compact_around:
            self.compact("minor", None)

    def insert_into(self, table: Table, dts: list[str], amount: int = 0) -> int | None:
        """Insert one new row in each of ``dts`` (the model too); the insert's write id."""
        items: list[dict[str, Any]] = []
        for dt in dts:
            items.append({"id": self.next_id, "name": f"n{self.next_id}", "amount": amount,
                          "dt": dt})
            self.next_id += 1
        result = table.insert(rows_of(items))
        self.model.update({r["id"]: r for r in items})
        return result.write_id

    @rule(dt=st.sampled_from(DTS), as_delete=st.booleans(), files_left=st.booleans())
    def aborted(self, dt: str, as_delete: bool, files_left: bool) -> None:
        self.aborted_since_clean = True  # its write id stays an exception until cleaned
        if files_left:
            if as_delete:
                aborted_write(self.wh, TABLE, delete=f"dt = '{dt}'")
            else:
                aborted_write(self.wh, TABLE, make_rows([10_000 + self.next_id], dt=dt))
            return
        with self.wh.transaction() as txn:
            bound = txn.table(TABLE)
            bound.delete(f"dt = '{dt}'") if as_delete else bound.insert(
                make_rows([10_000 + self.next_id], dt=dt))
            txn.abort("the model's aborted write")

    # --- compaction and cleaning -----------------------------------------------------------------

    @rule(kind=st.sampled_from(["minor", "major"]), where=st.sampled_from([None, *DTS]))
    def compact(self, kind: str, where: str | None) -> None:
        partition = None if where is None else f"dt={where}"
        if partition is not None and partition not in self.partitions():
            return
        before = read_exact(self.t)
        result = compact(self.t, kind, partition)  # type: ignore[arg-type]
        if result.compacted:
            self.compacted_since_clean = True
            if kind == "major":
                self.major_hwm = max(self.major_hwm, self.t.snapshot().high_watermark)
        assert read_exact(self.t) == before

    @rule()
    def clean(self) -> None:
        before = read_exact(self.t)
        Cleaner(self.wh, retention_seconds=0).run()
        assert read_exact(self.t) == before
        if not self.readers:
            self.compacted_since_clean = False
        self.aborted_since_clean = False
        self.cleaned_major_hwm = self.major_hwm

    @rule()
    def clean_keeping_history(self) -> None:
        """A long retention: aborted writes go, what compactions replaced stays."""
        before = read_exact(self.t)
        Cleaner(self.wh, retention_seconds=3600).run()
        assert read_exact(self.t) == before
        self.aborted_since_clean = False

    @rule(data=st.data())
    def time_travel(self, data: st.DataObject) -> None:
        self.check_as_of(data.draw(st.sampled_from(sorted(self.past))))

    def check_as_of(self, write_id: int) -> None:
        try:
            got = values(_tuples_of(self.t.to_arrow(as_of=write_id, with_row_id=True),
                                    self.names))
        except NotEnoughHistoryError:
            assert write_id < self.cleaned_major_hwm, write_id
            return
        assert got == self.past[write_id], write_id

    # --- readers ---------------------------------------------------------------------------------

    @precondition(lambda self: len(self.readers) < MAX_READERS)
    @rule()
    def open_reader(self) -> None:
        self.readers.append((self.t.to_batches(with_row_id=True), read_exact(self.t)))

    @precondition(lambda self: bool(self.readers))
    @rule(data=st.data())
    def drain_reader(self, data: st.DataObject) -> None:
        reader, expected = self.readers.pop(data.draw(st.integers(0, len(self.readers) - 1)))
        assert reader_rows(reader, self.names) == expected

    @precondition(lambda self: bool(self.readers))
    @rule(data=st.data())
    def drop_reader(self, data: st.DataObject) -> None:
        self.readers.pop(data.draw(st.integers(0, len(self.readers) - 1)))

    # --- invariants ------------------------------------------------------------------------------

    @invariant()
    def table_equals_model(self) -> None:
        assert values(read_exact(self.t)) == self.expected()

    @invariant()
    def oldest_and_previous_past_are_readable(self) -> None:
        """The two pasts most compactions fold away (the rule reaches the others)."""
        past = sorted(self.past)
        for write_id in {past[0], past[-2] if len(past) > 1 else past[0]}:
            self.check_as_of(write_id)

    @invariant()
    def cleaned_means_clean(self) -> None:
        for partition in self.partitions():
            state = state_of(self.t, partition)
            if not self.readers and not self.compacted_since_clean:
                assert state.obsolete == [], partition
            if not self.aborted_since_clean:
                assert state.aborted == [], partition
        if not self.aborted_since_clean:
            assert self.t.snapshot().aborted_write_ids == ()


TestCompactionModel = CompactionMachine.TestCase
# CI-sized (about 30 s); the "thorough" profile keeps its own, larger example count
_PROFILE = settings.default
assert _PROFILE is not None
TestCompactionModel.settings = settings(
    _PROFILE, stateful_step_count=20,
    max_examples=20 if _PROFILE.max_examples <= 60 else _PROFILE.max_examples)
