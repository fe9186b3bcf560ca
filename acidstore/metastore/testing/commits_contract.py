"""The contract of the ``Transactions`` role, part 3: commits and write-write conflicts
(spec §12.2), recorded writes and their locks, idempotent application versions.

Conflict = a committed write on the same table and partition, committed after the committing
txn's snapshot, where both operations are update/delete/overwrite; first committer wins and the
loser sees Hive's message. Inserts never conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from acidstore.errors import (
    ConcurrentTransactionError,
    InvalidInputError,
    MetastoreError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
    WriteConflictError,
)
from acidstore.metastore.protocol import Metastore
from acidstore.metastore.records import CommittedWrite, Operation, TableInfo, WriteComponent
from acidstore.metastore.testing.harness import (
    MAX,
    MetastoreHarness,
    begin,
    cases,
    component,
    new_table,
    raises,
    states,
    write,
)

__all__ = ["CommitsContract"]


def _conflict(first: Operation, second: Operation, metastore: Metastore
              ) -> tuple[int, int, str | None]:
    """Two overlapping txns on default.t; the first commits ``first``, then the second tries
    ``second``. Returns (winner, loser, error message or None)."""
    metastore.create_table(new_table())
    winner, loser = begin(metastore), begin(metastore)
    mine = write(metastore, winner, first)
    theirs = write(metastore, loser, second)
    assert metastore.commit(winner, [mine]).commit_seq == 1
    try:
        metastore.commit(loser, [theirs])
    except WriteConflictError as exc:
        return winner, loser, str(exc)
    return winner, loser, None


class CommitsContract(MetastoreHarness):
    """Commit, the conflict check and the commit's own check; recorded writes; app versions."""

    def test_commit_records_history_partitions_and_commit_info(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        metastore.create_table(new_table("u"))
        txn = begin(metastore)
        wid_p, wid_u = metastore.allocate_write_id(txn, "p"), metastore.allocate_write_id(txn, "u")
        parts = [
            component(wid_p, "insert", table="default.p", partition="dt=2", rows_inserted=5,
                      files=1, bytes=100),
            component(wid_p, "delete", table="default.p", partition="dt=1", rows_deleted=2,
                      files=1, bytes=30),
            component(wid_p, "insert", table="default.p", partition="dt=1", rows_inserted=2,
                      files=2, bytes=70),
            component(wid_u, "delete", table="default.u"),
        ]
        before = datetime.now(UTC)
        info = metastore.commit(txn, parts)
        assert (info.txn_id, info.commit_seq, info.write_ids) == (txn, 1,
                                                                  {"default.p": 1, "default.u": 1})
        assert before <= info.commit_time <= datetime.now(UTC)
        (entry,) = metastore.history("p")
        assert (entry.write_id, entry.txn_id, entry.commit_time, entry.operation) == (
            1, txn, info.commit_time, "delete,insert")
        assert (entry.rows_inserted, entry.rows_deleted, entry.files, entry.bytes) == (7, 2, 4, 200)
        assert entry.partitions == ("dt=1", "dt=2")
        assert metastore.list_partitions("p") == ["dt=1", "dt=2"]
        assert metastore.write_id_commit_times("p") == {1: info.commit_time}
        assert [(e.write_id, e.operation) for e in metastore.history("u")] == [(1, "delete")]
        assert states(metastore) == {txn: "committed"}
        (shown,) = metastore.show_transactions()
        assert shown.finished == info.commit_time

    def test_read_only_and_componentless_commits(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        reader = begin(metastore)
        info = metastore.commit(reader, [])
        assert (info.commit_seq, info.write_ids) == (1, {})
        assert metastore.history("t") == []
        # A write id allocated but committed without components is still a committed write id.
        writer = begin(metastore)
        metastore.allocate_write_id(writer, "t")
        done = metastore.commit(writer, [])
        assert done.write_ids == {"default.t": 1}
        assert [(e.write_id, e.operation, e.partitions) for e in metastore.history("t")] == [
            (1, "", ())]
        assert metastore.write_id_commit_times("t") == {1: done.commit_time}

    def test_commit_validates_components_and_leaves_the_txn_open(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        metastore.create_table(new_table("other"))
        txn = begin(metastore)
        wid = metastore.allocate_write_id(txn, "t")
        bad = [
            component(wid + 1),                                   # not this txn's write id
            component(1, table="default.other"),                  # table not allocated by the txn
            component(wid, partition="dt=1"),                     # unpartitioned table
            replace(component(wid), directories=("../escape",)),  # leaves the table location
            replace(component(wid), directories=("/abs",)),
            replace(component(wid), rows_inserted=-1),
            replace(component(wid), operation="merge"),  # type: ignore[arg-type]
        ]
        for item in bad:
            with raises(InvalidInputError):
                metastore.commit(txn, [item])
        assert states(metastore) == {txn: "open"}
        assert metastore.commit(txn, [component(wid)]).write_ids == {"default.t": 1}

    @cases(("update", "update", "u/u"), ("delete", "update", "u/d"), ("update", "delete", "d/u"),
           ("delete", "delete", "d/d"), ("overwrite", "delete", "d/o"),
           ("delete", "overwrite", "o/d"), ("overwrite", "overwrite", "o/o"),
           ("update", "overwrite", "o/u"),
           ids=["update_update", "delete_update", "update_delete", "delete_delete",
                "overwrite_delete", "delete_overwrite", "overwrite_overwrite",
                "update_overwrite"])
    def test_overlapping_updates_and_deletes_conflict_with_hives_message(
            self, first: Operation, second: Operation, letters: str) -> None:
        metastore = self.metastore
        winner, loser, message = _conflict(first, second, metastore)
        assert message is not None, "the second writer committed"
        assert message.startswith(f"write conflict on table default.t: transaction {winner} "
                                  "committed first"), message
        assert message.endswith(f"Hive: Aborting [txnid:{loser},2] due to a write conflict on "
                                f"default/t committed by [txnid:{winner},1] {letters}"), message
        assert states(metastore) == {winner: "committed", loser: "aborted"}
        # The loser's write id is aborted for everyone; its files are listed for the cleaner.
        after = metastore.open_transaction(user="u", host="h")
        assert str(metastore.valid_write_ids("t", after.snapshot)) == f"default.t:2:{MAX}::2"
        assert [(c.write_id, c.operation) for c in metastore.aborted_components("t")] == [
            (2, second)]
        assert [e.write_id for e in metastore.history("t")] == [1]
        with raises(TransactionAbortedError):
            metastore.commit(loser, [])

    def test_a_conflicting_commit_keeps_its_offered_components_for_the_cleaner(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        winner, loser, silent = begin(metastore), begin(metastore), begin(metastore)
        mine = write(metastore, winner, "delete")
        recorded = write(metastore, loser, "delete")
        unrecorded = component(metastore.allocate_write_id(silent, "t"), "update")
        final = replace(recorded, directories=(*recorded.directories, "delta_0000002_0000002_0001"),
                        rows_deleted=3)
        metastore.commit(winner, [mine])
        with raises(WriteConflictError):
            metastore.commit(loser, [final])
        assert metastore.aborted_components("t") == [recorded, final]
        # A writer that never recorded (not following the protocol) still leaves a trace.
        with raises(WriteConflictError):
            metastore.commit(silent, [unrecorded])
        assert metastore.aborted_components("t") == [recorded, final, unrecorded]

    @cases(("insert", "insert"), ("insert", "delete"), ("delete", "insert"), ("update", "insert"),
           ("insert", "overwrite"), ("overwrite", "insert"))
    def test_inserts_never_conflict(self, first: Operation, second: Operation) -> None:
        metastore = self.metastore
        winner, loser, message = _conflict(first, second, metastore)
        assert message is None
        assert states(metastore) == {winner: "committed", loser: "committed"}

    def test_conflicts_are_per_partition(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        a, b, c = begin(metastore), begin(metastore), begin(metastore)
        mine = write(metastore, a, "update", table="default.p", partition="dt=1")
        other_partition = write(metastore, b, "update", table="default.p", partition="dt=2")
        same_partition = write(metastore, c, "delete", table="default.p", partition="dt=1")
        metastore.commit(a, [mine])
        assert metastore.commit(b, [other_partition]).commit_seq == 2
        with raises(WriteConflictError) as caught:
            metastore.commit(c, [same_partition])
        assert str(caught.value).startswith(
            "write conflict on table default.p, partition dt=1: ")
        assert str(caught.value).endswith(f"Hive: Aborting [txnid:{c},3] due to a write "
                                          f"conflict on default/p/dt=1 committed by "
                                          f"[txnid:{a},1] d/u")

    def test_writes_committed_before_the_snapshot_do_not_conflict(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        first = begin(metastore)
        metastore.commit(first, [write(metastore, first, "delete")])
        later = begin(metastore)
        assert metastore.commit(later, [write(metastore, later, "delete")]).commit_seq == 2

    def test_first_committer_wins_among_many(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        txns = [begin(metastore) for _ in range(4)]
        written = {txn: write(metastore, txn, "update") for txn in txns}
        order = [txns[2], txns[0], txns[3], txns[1]]
        outcomes = []
        for txn in order:
            try:
                metastore.commit(txn, [written[txn]])
                outcomes.append("committed")
            except WriteConflictError:
                outcomes.append("conflict")
        assert outcomes == ["committed", "conflict", "conflict", "conflict"]
        assert [e.txn_id for e in metastore.history("t")] == [txns[2]]

    def test_check_sees_components_and_overlapping_writes_and_may_allow(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        winner, loser, bystander = begin(metastore), begin(metastore), begin(metastore)
        mine = write(metastore, winner, "delete")
        insert_only = write(metastore, bystander, "insert")
        theirs = write(metastore, loser, "update")
        metastore.commit(winner, [mine])
        metastore.commit(bystander, [insert_only])
        seen: list[tuple[list[WriteComponent], list[CommittedWrite]]] = []

        def check(components: Sequence[WriteComponent],
                  overlapping: Sequence[CommittedWrite]) -> None:
            seen.append((list(components), list(overlapping)))

        # what the check will be handed can be read beforehand, without a lock or a change (a
        # committer reads those writes' files before it takes the commit lock)
        before = metastore.show_transactions()
        ahead = metastore.overlapping_writes(loser, [theirs])
        assert metastore.show_transactions() == before
        info = metastore.commit(loser, [theirs], check=check)
        assert seen == [([theirs], [CommittedWrite(winner, 1, "default.t", "", "delete", 1,
                                                   mine.directories)])]
        assert ahead == seen[0][1]
        assert info.commit_seq == 3
        assert states(metastore) == {winner: "committed", loser: "committed",
                                     bystander: "committed"}
        assert metastore.overlapping_writes(loser, [theirs]) == []  # no longer open

    def test_check_is_not_called_without_overlap(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        txn = begin(metastore)
        calls: list[int] = []
        metastore.commit(txn, [write(metastore, txn, "delete")],
                         check=lambda components, overlapping: calls.append(1))
        assert calls == []

    @cases((WriteConflictError("rows 3 and 4 overlap"),),
           (RuntimeError("could not read a delete delta"),), ids=["conflict", "other_error"])
    def test_a_raising_check_aborts_and_re_raises(self, error: Exception) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        winner, loser = begin(metastore), begin(metastore)
        mine, theirs = write(metastore, winner, "delete"), write(metastore, loser, "delete")
        metastore.commit(winner, [mine])

        def check(components: Sequence[WriteComponent],
                  overlapping: Sequence[CommittedWrite]) -> None:
            raise error

        with raises(type(error)) as caught:
            metastore.commit(loser, [theirs], check=check)
        assert caught.value is error
        assert states(metastore) == {winner: "committed", loser: "aborted"}
        assert metastore.show_locks() == []

    def test_check_may_read_the_catalog_but_not_write(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        winner, loser = begin(metastore), begin(metastore)
        mine, theirs = write(metastore, winner, "delete"), write(metastore, loser, "delete")
        metastore.commit(winner, [mine])
        read: list[TableInfo] = []

        def check(components: Sequence[WriteComponent],
                  overlapping: Sequence[CommittedWrite]) -> None:
            read.append(metastore.get_table("t"))
            metastore.abort(loser)  # a nested write is refused, which aborts the commit

        with raises(MetastoreError):
            metastore.commit(loser, [theirs], check=check)
        assert [t.full_name for t in read] == ["default.t"]
        assert states(metastore) == {winner: "committed", loser: "aborted"}

    # --- recorded writes and their locks ----------------------------------------------------------

    def test_record_write_shows_locks_until_commit_or_abort(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        metastore.create_table(new_table("u"))
        a, b = begin(metastore), begin(metastore)
        write(metastore, a, "insert", table="p", partition="dt=1")
        write(metastore, a, "delete", table="p", partition="dt=1")
        write(metastore, a, "insert", table="p", partition="dt=2")
        write(metastore, a, "overwrite", table="p", partition="dt=2")  # upgrades the lock
        write(metastore, b, "update", table="u")
        locks = metastore.show_locks()
        assert [(lk.txn_id, lk.database, lk.table, lk.partition, lk.lock_type, lk.state)
                for lk in locks] == [
            (a, "default", "p", "dt=1", "shared_write", "acquired"),
            (a, "default", "p", "dt=2", "exclusive", "acquired"),
            (b, "default", "u", None, "shared_write", "acquired"),
        ]
        assert all(lk.acquired.tzinfo == UTC for lk in locks)
        assert len({lk.lock_id for lk in locks}) == 3
        metastore.commit(a, [component(1, "insert", table="p", partition="dt=1")])
        assert [lk.txn_id for lk in metastore.show_locks()] == [b]
        metastore.abort(b, "user cancelled")
        assert metastore.show_locks() == []

    def test_recorded_writes_of_aborted_txns_are_listed_for_cleaning(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        metastore.create_table(new_table("other"))
        crashed, committed, other_table = begin(metastore), begin(metastore), begin(metastore)
        recorded = write(metastore, crashed, "insert")
        write(metastore, committed, "insert")
        write(metastore, other_table, "insert", table="other")
        metastore.commit(committed, [component(2)])
        metastore.abort(crashed, "writer died")
        metastore.abort(other_table)
        assert metastore.aborted_components("t") == [recorded]
        assert metastore.aborted_components("default.other") == [
            component(1, table="default.other")]
        with raises(TransactionStateError):
            metastore.record_write(committed, component(2))
        with raises(TransactionAbortedError):
            metastore.record_write(crashed, recorded)

    # --- idempotent writes: application versions --------------------------------------------------

    def test_an_application_version_commits_with_its_transaction(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("t"))
        assert metastore.app_versions("t") == []
        first, second = begin(metastore), begin(metastore)
        for txn in (first, second):
            metastore.record_app_version(txn, "t", "job", 3)
            metastore.record_app_version(txn, "t", "job", 3)  # the same again: nothing new
        ours = [write(metastore, txn, "insert") for txn in (first, second)]
        assert metastore.app_versions("t") == []  # recorded, not committed
        info = metastore.commit(first, [ours[0]])
        [done] = metastore.app_versions("DEFAULT.T", "job")
        assert (done.table, done.app_id, done.version, done.txn_id, done.commit_time) == (
            "default.t", "job", 3, first, info.commit_time)
        with raises(ConcurrentTransactionError) as raced:
            metastore.commit(second, [ours[1]])
        error = raced.value
        assert (error.txn_id, error.other_txn_id, error.table, error.app_id) == (
            second, first, "default.t", "job")
        assert states(metastore)[second] == "aborted"
        assert [h.txn_id for h in metastore.history("t")] == [first]
        assert [c.directories for c in metastore.aborted_components("t")] == [ours[1].directories]
        with raises(TransactionAbortedError):
            metastore.record_app_version(second, "t", "job", 4)
        assert metastore.app_versions("t", "other") == []
        # a later version by a later transaction replaces it
        third = begin(metastore)
        metastore.record_app_version(third, "t", "job", 4)
        metastore.commit(third, [])
        assert [(a.version, a.txn_id) for a in metastore.app_versions("t")] == [(4, third)]

    def test_bad_application_versions_are_refused(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("t"))
        txn = begin(metastore)
        with raises(TableNotFoundError):
            metastore.record_app_version(txn, "nope", "job", 1)
        with raises(InvalidInputError):
            metastore.record_app_version(txn, "t", "job", -5)
        metastore.record_app_version(txn, "t", "job", 1)
        with raises(InvalidInputError, match="already writes version 1"):
            metastore.record_app_version(txn, "t", "job", 2)
        metastore.commit(txn, [])
        assert [a.version for a in metastore.app_versions("t")] == [1]
        metastore.drop_table("t")
        metastore.create_table(new_table("t"))
        assert metastore.app_versions("t") == []  # a new table of the name starts afresh
