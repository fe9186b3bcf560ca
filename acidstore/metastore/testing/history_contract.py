"""The contract of the ``History`` role: what committed (and aborted) and when. Committed
components and compaction outputs narrow exactly, commit times come from the store's clock and
rise with commit order, a commit can be asked for after its answer was lost, and time travel
finds the compactions committed after a point."""

from __future__ import annotations

from datetime import timedelta

from acidstore.metastore.history import CommitLog
from acidstore.metastore.records import CompactionOutput, ComponentLog, WriteComponent
from acidstore.metastore.testing.harness import MetastoreHarness, begin, new_table, write

__all__ = ["HistoryContract"]


class HistoryContract(MetastoreHarness):
    """Committed components and outputs, commit infos and times, compactions since a point."""

    def test_committed_components_narrow_to_a_partition_and_a_write_id_range(self) -> None:
        """A read asks only for the writes its base has not replaced (write ids from the base's
        up) and a partition's: the narrowed answers are exactly the whole answer's rows, in the
        same (txn) order, whatever order the write ids were allocated in."""
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        metastore.create_table(new_table("other"))
        made: list[WriteComponent] = []
        for i in range(4):
            txn = begin(metastore)
            made.append(write(metastore, txn, "insert", table="default.p", partition=f"dt={i % 2}"))
            metastore.commit(txn, [made[-1]])
        late, early = begin(metastore), begin(metastore)  # txn order differs from write-id order
        second = write(metastore, early, "insert", table="default.p", partition="dt=0")
        first = write(metastore, late, "delete", table="default.p", partition="dt=0")
        assert (second.write_id, first.write_id) == (5, 6)
        metastore.commit(early, [second])
        metastore.commit(late, [first])
        made += [first, second]
        crashed, other = begin(metastore), begin(metastore)
        write(metastore, crashed, "insert", table="default.p", partition="dt=0")
        metastore.abort(crashed)
        metastore.commit(other, [write(metastore, other, "insert", table="default.other")])

        assert metastore.committed_components("p") == made
        assert metastore.committed_components("p", partition="dt=1") == [made[1], made[3]]
        assert metastore.committed_components("p", min_write_id=3) == made[2:]
        assert metastore.committed_components("p", min_write_id=2, below_write_id=6) == [
            made[1], made[2], made[3], second]
        assert metastore.committed_components("p", below_write_id=2) == [made[0]]
        assert metastore.committed_components("p", partition="dt=0", min_write_id=4) == [
            first, second]
        assert metastore.committed_components("p", min_write_id=7) == []  # the aborted one's
        assert metastore.committed_components("p", partition="dt=9") == []

    def test_compaction_outputs_narrow_to_a_partition_and_compaction_txns(self) -> None:
        """A read asks for the outputs of the compactions whose ``_v`` directories it selected."""
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        for part in ("dt=0", "dt=1"):
            txn = begin(metastore)
            metastore.commit(txn, [write(metastore, txn, "insert", table="default.p",
                                         partition=part)])

        def compaction(parts: list[str]) -> tuple[int, list[CompactionOutput]]:
            txn = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
            outputs = [CompactionOutput("default.p", part, f"{part}/base_0000002_v{txn:07d}", 1,
                                        1, 10, (("bucket_00000", 1),), txn) for part in parts]
            metastore.commit(txn, [], outputs=outputs)
            return txn, outputs

        one, first = compaction(["dt=0", "dt=1"])
        two, second = compaction(["dt=0"])
        assert metastore.compaction_outputs("p") == first + second
        assert metastore.compaction_outputs("p", partition="dt=0") == [first[0], second[0]]
        assert metastore.compaction_outputs("p", txn_ids=[two]) == second
        assert metastore.compaction_outputs("p", txn_ids=[two, one, 12345]) == first + second
        assert metastore.compaction_outputs("p", partition="dt=1", txn_ids=[one, two]) == [
            first[1]]
        assert metastore.compaction_outputs("p", txn_ids=[]) == []

    def test_commit_info_is_the_commit_or_nothing(self) -> None:
        """What a client asks after a commit call failed without an answer."""
        metastore = self.metastore
        metastore.create_table(new_table())
        committed, aborted, still_open = begin(metastore), begin(metastore), begin(metastore)
        info = metastore.commit(committed, [write(metastore, committed, "insert")])
        metastore.abort(aborted)
        assert metastore.commit_info(committed) == info
        assert info.write_ids == {"default.t": 1}
        for txn in (aborted, still_open, 999):
            assert metastore.commit_info(txn) is None

    def test_commit_times_come_from_the_store_and_rise_with_commit_order(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        times = []
        for _ in range(3):
            txn = begin(metastore)
            times.append(metastore.commit(txn, [write(metastore, txn, "insert")]).commit_time)
        assert times == sorted(times) and len(set(times)) == 3
        assert metastore.write_id_commit_times("t") == dict(enumerate(times, start=1))
        assert [entry.commit_time for entry in metastore.history("t")] == times
        now = metastore.current_time()
        assert now.utcoffset() is not None and now >= times[-1]

    def test_compactions_committed_after_a_write_id_or_a_moment(self) -> None:
        """Time travel reads around the compactions committed after its point, until the
        cleaner begins on their partition."""
        metastore = self.metastore
        metastore.create_table(new_table())
        first = begin(metastore)
        metastore.commit(first, [write(metastore, first, "insert")])
        compactor = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
        metastore.record_compaction(
            "t", "", "major", "test", txn_id=compactor, worker="tester",
            compactor_write_ids=metastore.valid_write_ids("t", metastore.valid_txns(compactor)))
        info = metastore.commit(compactor, [], outputs=[CompactionOutput(
            "default.t", "", f"base_0000001_v{compactor:07d}", 1, 1, 10,
            (("bucket_00000", 1),), compactor)])
        later = begin(metastore)
        metastore.commit(later, [write(metastore, later, "insert")])
        (found,) = metastore.compactions_committed_after("t", 1)
        assert (found.txn_id, found.partition, found.commit_seq, found.committed,
                found.cleaning) == (compactor, "", info.commit_seq, info.commit_time, False)
        assert metastore.compactions_committed_after("t", 0) == [found]
        assert metastore.compactions_committed_after("t", 2) == []
        moment = info.commit_time
        assert metastore.compactions_committed_after(
            "t", moment - timedelta(microseconds=1)) == [found]
        assert metastore.compactions_committed_after("t", moment) == []
        metastore.begin_cleaning("t", "", metastore.valid_txns())
        assert [c.cleaning for c in metastore.compactions_committed_after("t", 1)] == [True]

    def test_a_commit_log_answers_what_committed_components_does(self) -> None:
        """Only a store whose commits are numbered in the order readers see them offers the
        log (``CommitLog``); what it answers must be what ``committed_components`` says."""
        metastore = self.metastore
        if not isinstance(metastore, CommitLog):
            return
        metastore.create_table(new_table("p", partition_by=("dt",)))
        made: list[WriteComponent] = []
        for i in range(3):
            txn = begin(metastore)
            made.append(write(metastore, txn, "insert", table="default.p", partition=f"dt={i}"))
            metastore.commit(txn, [made[-1]])
        log = metastore.committed_log("p")
        assert [c.component for c in log.components] == metastore.committed_components("p")
        assert [c.component for c in log.components] == made
        assert metastore.committed_log("p", min_write_id=2).components == log.components[1:]
        assert metastore.committed_log("p", after_seq=log.seq) == ComponentLog(
            log.table_id, log.seq, ())
        txn = begin(metastore)
        extra = write(metastore, txn, "delete", table="default.p", partition="dt=0")
        metastore.commit(txn, [extra])
        newer = metastore.committed_log("p", after_seq=log.seq)
        assert [c.component for c in newer.components] == [extra] and newer.seq > log.seq
