"""The contract of the ``CompactionQueue`` role: the queue that initiators, workers and
cleaners in different processes coordinate through, and the cleaner's bookkeeping."""

from __future__ import annotations

import time

from acidstore.errors import InvalidInputError, TableNotFoundError, TransactionStateError
from acidstore.metastore.records import CompactionOutput
from acidstore.metastore.testing.harness import (
    MAX,
    MetastoreHarness,
    begin,
    new_table,
    raises,
    write,
)

__all__ = ["CompactionQueueContract"]


class CompactionQueueContract(MetastoreHarness):
    """Entries queued once per partition, claimed by one worker, cleaned after readers."""

    def test_one_compaction_per_partition_is_queued_at_a_time(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        first = metastore.enqueue_compaction("p", "dt=1", "minor", "11 deltas")
        assert first is not None
        assert (first.table, first.partition, first.kind, first.state, first.reason,
                first.worker, first.attempts) == ("default.p", "dt=1", "minor", "initiated",
                                                  "11 deltas", None, 0)
        assert metastore.enqueue_compaction("p", "dt=1", "major", "again") is None
        other = metastore.enqueue_compaction("P", "dt=2", "major", "size")
        assert other is not None and other.compaction_id > first.compaction_id
        with raises(InvalidInputError):
            metastore.enqueue_compaction("p", "dt=3", "medium", "?")  # type: ignore[arg-type]
        with raises(TableNotFoundError):
            metastore.enqueue_compaction("missing", "", "minor", "?")
        assert metastore.show_compactions() == [first, other]

    def test_a_claim_hands_out_the_oldest_entry_to_one_worker(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        older = metastore.enqueue_compaction("p", "dt=1", "minor", "a")
        newer = metastore.enqueue_compaction("p", "dt=2", "major", "b")
        assert older is not None and newer is not None
        claimed = metastore.claim_compaction("w1", stale_seconds=60)
        assert claimed is not None
        assert (claimed.compaction_id, claimed.state, claimed.worker, claimed.attempts) == (
            older.compaction_id, "working", "w1", 1)
        assert claimed.started is not None and claimed.heartbeat is not None
        second = self.another_client().claim_compaction("w2", stale_seconds=60)
        assert second is not None and second.compaction_id == newer.compaction_id
        assert metastore.claim_compaction("w3", stale_seconds=60) is None
        assert metastore.enqueue_compaction("p", "dt=1", "major", "busy") is None

    def test_a_claim_is_its_workers_until_stale_by_its_own_window(self) -> None:
        """A worker that claimed with a window keeps the entry as long as it heartbeats
        within it, whatever window another worker has; after it, the entry is taken over
        and the first worker's calls on it fail."""
        metastore = self.metastore
        metastore.create_table(new_table())
        assert metastore.enqueue_compaction("t", "", "major", "r") is not None
        claimed = metastore.claim_compaction("patient", stale_seconds=self.short_timeout)
        assert claimed is not None
        metastore.heartbeat_compaction(claimed.compaction_id, "patient")
        with raises(TransactionStateError):
            metastore.heartbeat_compaction(claimed.compaction_id, "intruder")
        assert metastore.claim_compaction("hasty", stale_seconds=0.01) is None
        time.sleep(self.short_timeout * 1.3)
        taken = metastore.claim_compaction("hasty", stale_seconds=60)
        assert taken is not None
        assert (taken.compaction_id, taken.worker, taken.attempts) == (
            claimed.compaction_id, "hasty", 2)
        with raises(TransactionStateError):
            metastore.heartbeat_compaction(claimed.compaction_id, "patient")
        with raises(TransactionStateError):
            metastore.compaction_compacted(claimed.compaction_id, "patient")

    def test_an_entry_is_ready_for_cleaning_once_its_readers_finished(self) -> None:
        """Spec §11: a transaction open when the compaction committed may read what it
        replaced, so the cleaner waits for it."""
        metastore = self.metastore
        metastore.create_table(new_table())
        first = begin(metastore)
        metastore.commit(first, [write(metastore, first, "insert")])
        assert metastore.enqueue_compaction("t", "", "major", "r") is not None
        claimed = metastore.claim_compaction("w", stale_seconds=60)
        assert claimed is not None
        reader = begin(metastore)
        compactor = metastore.open_transaction(user="w", host="h", kind="compaction").txn_id
        metastore.heartbeat_compaction(
            claimed.compaction_id, "w", txn_id=compactor,
            compactor_write_ids=metastore.valid_write_ids("t", metastore.valid_txns(compactor)))
        metastore.commit(compactor, [], outputs=[CompactionOutput(
            "default.t", "", f"base_0000001_v{compactor:07d}", 1, 1, 10,
            (("bucket_00000", 1),), compactor)])
        metastore.compaction_compacted(claimed.compaction_id, "w")
        (shown,) = metastore.show_compactions()
        assert (shown.state, shown.txn_id, shown.highest_write_id) == (
            "ready for cleaning", compactor, 1)
        assert shown.next_txn_id is not None and shown.next_txn_id > compactor
        assert shown.compacted is not None
        assert metastore.compactions_ready_for_cleaning() == []  # the reader is still open
        metastore.commit(reader, [])
        assert [c.compaction_id for c in metastore.compactions_ready_for_cleaning()] == [
            claimed.compaction_id]
        assert metastore.begin_cleaning("t", "", metastore.valid_txns()) == [
            claimed.compaction_id]
        assert metastore.begin_cleaning("t", "", metastore.valid_txns()) == []  # once
        metastore.finish_compaction(claimed.compaction_id, "succeeded")
        (done,) = metastore.show_compactions()
        assert (done.state, done.worker) == ("succeeded", None)
        assert done.finished is not None and done.cleaning_started is not None
        assert metastore.compactions_ready_for_cleaning() == []

    def test_decisions_and_compactions_outside_the_queue_are_recorded(self) -> None:
        """``show_compactions`` explains why a partition was left alone, and never misses a
        compaction ``compact()`` ran directly."""
        metastore = self.metastore
        metastore.create_table(new_table())
        logged = metastore.log_compaction("t", "", "minor", "did not initiate", "2 deltas")
        assert logged.state == "did not initiate" and logged.finished is not None
        with raises(InvalidInputError):
            metastore.log_compaction("t", "", "minor", "working", "not a decision")
        compactor = metastore.open_transaction(user="me", host="h", kind="compaction").txn_id
        direct = metastore.record_compaction(
            "t", "", "minor", "compact() called", txn_id=compactor, worker="me",
            compactor_write_ids=metastore.valid_write_ids("t", metastore.valid_txns(compactor)))
        assert (direct.state, direct.worker, direct.txn_id) == ("working", "me", compactor)
        assert metastore.enqueue_compaction("t", "", "major", "busy") is None
        metastore.commit(compactor, [])
        metastore.compaction_compacted(direct.compaction_id, "me")
        assert [(c.compaction_id, c.state) for c in metastore.show_compactions()] == [
            (logged.compaction_id, "did not initiate"),
            (direct.compaction_id, "ready for cleaning")]
        with raises(InvalidInputError):
            metastore.finish_compaction(direct.compaction_id, "working")
        with raises(TransactionStateError):
            metastore.finish_compaction(12345, "failed")

    def test_forgotten_aborted_writes_stop_being_exceptions(self) -> None:
        """The cleaner forgets an aborted write once its files are gone; a committed write
        is never forgotten."""
        metastore = self.metastore
        metastore.create_table(new_table())
        kept, lost = begin(metastore), begin(metastore)
        metastore.commit(kept, [write(metastore, kept, "insert")])
        write(metastore, lost, "insert")
        metastore.abort(lost)
        assert str(metastore.valid_write_ids("t", metastore.valid_txns())) == \
            f"default.t:2:{MAX}::2"
        assert metastore.forget_aborted("t", [1, 2, 3]) == 1
        assert metastore.forget_aborted("t", []) == 0
        after = metastore.valid_write_ids("t", metastore.valid_txns())
        assert after.is_write_id_valid(1) and not after.is_write_id_aborted(2)
        assert metastore.aborted_components("t") == []
        assert [entry.write_id for entry in metastore.history("t")] == [1]
