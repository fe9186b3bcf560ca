"""The contract of the ``Transactions`` role, part 2: write ids (§12.1: per table, contiguous,
reused within a transaction, allocated with the open when planned) and snapshots (§6.5: a
table's write-id list from a transaction snapshot, own writes visible, later commits not)."""

from __future__ import annotations

from acidstore.errors import (
    InvalidInputError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
)
from acidstore.metastore.records import PlannedWrite, WriteComponent
from acidstore.metastore.testing.harness import (
    MAX,
    MetastoreHarness,
    begin,
    component,
    new_table,
    raises,
    write,
)

__all__ = ["WriteIdsContract"]


class WriteIdsContract(MetastoreHarness):
    """Write-id allocation and the write-id lists snapshots give."""

    def test_write_ids_are_per_table_contiguous_and_reused_within_a_txn(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("a"))
        metastore.create_table(new_table("b"))
        t1, t2, t3 = begin(metastore), begin(metastore), begin(metastore)
        got = [metastore.allocate_write_id(t2, "a"), metastore.allocate_write_id(t1, "a"),
               metastore.allocate_write_id(t1, "b"), metastore.allocate_write_id(t3, "a"),
               metastore.allocate_write_id(t1, "A"), metastore.allocate_write_id(t3, "b")]
        assert got == [1, 2, 1, 3, 2, 2]
        with raises(TableNotFoundError):
            metastore.allocate_write_id(t1, "missing")

    def test_open_with_planned_writes_allocates_and_records_in_the_open(self) -> None:
        """One call does what open, allocate_write_id and record_write do one after another:
        the same write ids (contiguous with other allocations), the same recorded components
        (locks shown; listed for cleaning if the txn aborts), and the commit is unchanged."""
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        metastore.create_table(new_table("u"))
        first = begin(metastore)
        assert metastore.allocate_write_id(first, "p") == 1
        opened = metastore.open_transaction(user="tester", host="localhost", writes=[
            PlannedWrite("P", ("dt=1", "dt=2"), "insert"), PlannedWrite("default.u", ("",),
                                                                        "overwrite")])
        assert opened.write_ids == {"default.p": 2, "default.u": 1}
        assert metastore.allocate_write_id(opened.txn_id, "p") == 2  # the same, reused
        assert opened.snapshot == metastore.valid_txns(opened.txn_id)
        assert [(lk.table, lk.partition, lk.lock_type) for lk in metastore.show_locks()] == [
            ("p", "dt=1", "shared_write"), ("p", "dt=2", "shared_write"), ("u", None, "exclusive")]
        plan = PlannedWrite("p", ("dt=1",), "insert")
        assert plan.components(2) == [WriteComponent("default.p", "dt=1", "insert", 2,
                                                     ("dt=1/delta_0000002_0000002_0000",))]
        assert PlannedWrite("u", ("",), "overwrite").components(1)[0].directories == (
            "base_0000001",)
        metastore.abort(opened.txn_id)
        assert sorted(c.directories[0] for c in metastore.aborted_components("p")) == [
            "dt=1/delta_0000002_0000002_0000", "dt=2/delta_0000002_0000002_0000"]
        again = metastore.open_transaction(user="tester", host="localhost",
                                           writes=[PlannedWrite("p", ("dt=3",), "insert")])
        metastore.commit(again.txn_id, [component(3, table="p", partition="dt=3", rows_inserted=5)])
        assert [(h.write_id, h.rows_inserted) for h in metastore.history("p")] == [(3, 5)]

    def test_open_with_planned_updates_and_deletes(self) -> None:
        """A single-statement UPDATE or DELETE opens with its planned write, beside an insert
        into another table: each table's write id allocated, the statement core's directories
        recorded (delete events in statement 0, an UPDATE's new rows in statement 1), listed
        for cleaning if the txn aborts; a commit replaces them with what was written."""
        metastore = self.metastore
        for name in ("u", "d", "i"):
            metastore.create_table(new_table(name))
        assert metastore.allocate_write_id(begin(metastore), "u") == 1
        opened = metastore.open_transaction(user="tester", host="localhost", writes=[
            PlannedWrite("u", ("",), "update"), PlannedWrite("i", ("",), "insert"),
            PlannedWrite("d", ("",), "delete")])
        assert opened.write_ids == {"default.u": 2, "default.i": 1, "default.d": 1}
        assert metastore.allocate_write_id(opened.txn_id, "u") == 2  # the same, reused
        assert sorted((lk.table, lk.lock_type) for lk in metastore.show_locks()) == [
            ("d", "shared_write"), ("i", "shared_write"), ("u", "shared_write")]
        assert PlannedWrite("u", ("",), "update").components(2) == [WriteComponent(
            "default.u", "", "update", 2,
            ("delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0001"))]
        assert PlannedWrite("d", ("dt=1",), "delete").components(1)[0].directories == (
            "dt=1/delete_delta_0000001_0000001_0000",)
        metastore.abort(opened.txn_id)
        assert [c.directories for c in metastore.aborted_components("u")] == [
            ("delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0001")]
        assert [c.directories for c in metastore.aborted_components("d")] == [
            ("delete_delta_0000001_0000001_0000",)]
        again = metastore.open_transaction(user="tester", host="localhost",
                                           writes=[PlannedWrite("d", ("",), "delete")])
        metastore.commit(again.txn_id, [WriteComponent(
            "d", "", "delete", 2, ("delete_delta_0000002_0000002_0000",), rows_deleted=1)])
        assert [(h.write_id, h.operation, h.rows_deleted) for h in metastore.history("d")] == [
            (2, "delete", 1)]
        assert metastore.show_locks() == []

    def test_planned_writes_are_checked_and_a_refused_open_leaves_nothing(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        before = metastore.valid_txns()
        for writes, error in [([PlannedWrite("missing", ("",), "insert")], TableNotFoundError),
                              ([PlannedWrite("p", ("",), "insert")], InvalidInputError),
                              (["p"], InvalidInputError)]:
            with raises(error):
                metastore.open_transaction(user="tester", host="localhost",
                                           writes=writes)  # type: ignore[arg-type]
        with raises(InvalidInputError):
            metastore.open_transaction(user="tester", host="localhost", kind="compaction",
                                       writes=[PlannedWrite("p", ("dt=1",), "insert")])
        assert metastore.valid_txns() == before and metastore.show_transactions() == []
        assert metastore.allocate_write_id(begin(metastore), "p") == 1

    def test_allocation_is_refused_for_finished_txns(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        aborted, committed = begin(metastore), begin(metastore)
        metastore.abort(aborted)
        metastore.commit(committed, [])
        with raises(TransactionAbortedError):
            metastore.allocate_write_id(aborted, "t")
        with raises(TransactionStateError):
            metastore.allocate_write_id(committed, "t")
        assert metastore.allocate_write_id(begin(metastore), "t") == 1

    def test_write_id_lists_follow_spec_6_5(self) -> None:
        """Txn 1 opens, txn 2 opens and takes write id 1, txn 1 takes write id 2."""
        metastore = self.metastore
        metastore.create_table(new_table())
        t1, t2 = begin(metastore), begin(metastore)
        assert metastore.allocate_write_id(t2, "t") == 1
        assert metastore.allocate_write_id(t1, "t") == 2
        t3 = metastore.open_transaction(user="u", host="h")
        assert str(t3.snapshot) == "3:1:1,2:"
        assert str(metastore.valid_write_ids("t", t3.snapshot, t3.txn_id)) == "default.t:2:1:1,2:"
        # txn 1's own snapshot (hwm 1) counts its own write id 2 and sees it; write id 1 belongs to
        # txn 2, above its hwm, so it is an open exception.
        assert str(metastore.valid_write_ids("t", metastore.valid_txns(t1), t1)) == \
            "default.t:2:1:1:"
        # txn 2's snapshot (hwm 2, txn 1 open): write id 2 is txn 1's, invalid; its own 1 is valid.
        assert str(metastore.valid_write_ids("t", metastore.valid_txns(t2), t2)) == \
            "default.t:2:2:2:"
        metastore.commit(t2, [component(1, "insert")])
        metastore.abort(t1)
        t4 = metastore.open_transaction(user="u", host="h")
        assert str(t4.snapshot) == "4:3:3:1"
        assert str(metastore.valid_write_ids("t", t4.snapshot, t4.txn_id)) == \
            f"default.t:2:{MAX}::2"
        # A snapshot taken earlier does not change when the txns it saw open finish later.
        assert str(metastore.valid_write_ids("t", t3.snapshot, t3.txn_id)) == "default.t:2:1:1,2:"
        # Without a txn: a fresh snapshot. A table never written has hwm 0.
        assert str(metastore.valid_write_ids("t", metastore.valid_txns())) == \
            f"default.t:2:{MAX}::2"
        metastore.create_table(new_table("empty"))
        assert str(metastore.valid_write_ids("empty", t4.snapshot)) == f"default.empty:0:{MAX}::"
        with raises(TableNotFoundError):
            metastore.valid_write_ids("missing", t4.snapshot)

    def test_read_your_writes_but_not_others(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        mine, other = begin(metastore), begin(metastore)
        metastore.allocate_write_id(other, "t")
        assert metastore.allocate_write_id(mine, "t") == 2
        own = metastore.valid_write_ids("t", metastore.valid_txns(mine), mine)
        assert own.is_write_id_valid(2) and not own.is_write_id_valid(1)
        # A fresh snapshot (a reader outside any txn) sees neither uncommitted write...
        fresh = metastore.valid_txns()
        assert str(metastore.valid_write_ids("t", fresh)) == "default.t:2:1:1,2:"
        # ...but passing txn_id with it makes the caller's own write visible.
        assert str(metastore.valid_write_ids("t", fresh, mine)) == "default.t:2:1:1:"

    def test_own_writes_count_even_under_an_older_snapshot(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        before = metastore.valid_txns()
        txn = begin(metastore)
        assert metastore.allocate_write_id(txn, "t") == 1
        assert str(metastore.valid_write_ids("t", before, txn)) == f"default.t:1:{MAX}::"
        assert str(metastore.valid_write_ids("t", before)) == f"default.t:0:{MAX}::"

    def test_commits_after_the_snapshot_stay_invisible(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        reader = metastore.open_transaction(user="u", host="h")
        writer = begin(metastore)
        metastore.commit(writer, [write(metastore, writer, "insert")])
        assert str(metastore.valid_write_ids("t", reader.snapshot, reader.txn_id)) == \
            f"default.t:0:{MAX}::"
        # The reader writes later and gets write id 2: the hwm rises to 2, and write id 1 (txn 2,
        # above the reader's snapshot hwm) is an open exception although it committed.
        assert metastore.allocate_write_id(reader.txn_id, "t") == 2
        assert str(metastore.valid_write_ids("t", reader.snapshot, reader.txn_id)) == \
            "default.t:2:1:1:"
        latest = metastore.open_transaction(user="u", host="h")
        assert str(metastore.valid_write_ids("t", latest.snapshot, latest.txn_id)) == \
            "default.t:2:2:2:"
