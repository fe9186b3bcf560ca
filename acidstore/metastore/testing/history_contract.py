"""The contract of the ``History`` role: what committed (and aborted) and when. Committed
components and compaction outputs narrow exactly, commit times come from the store's clock and
rise with commit order, a commit can be asked for after its answer was lost, time travel
finds the compactions committed after a point, and ``history`` names each version by the
statements that wrote it and lists committed compactions among the writes."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from acidstore.errors import InvalidInputError
from acidstore.metastore.history import CommitLog
from acidstore.metastore.protocol import Metastore
from acidstore.metastore.records import (
    CompactionOutput,
    ComponentLog,
    HistoryEntry,
    StatementSummary,
    WriteComponent,
)
from acidstore.metastore.testing.harness import (
    MetastoreHarness,
    begin,
    new_table,
    raises,
    states,
    write,
)

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

    # --- what history() shows ---------------------------------------------------------------------

    def test_history_names_the_statements_in_the_order_they_ran(self) -> None:
        """A version is named by its statements on the table, distinct, in order, with the
        rows they inserted, updated and deleted as the user counts them; files, bytes and
        partitions are its components'. The same through every commit path: an insert's
        (PostgreSQL's one-statement commit) and an update's (the general path)."""
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        table = "default.p"
        txn = begin(metastore)
        inserted = dataclasses.replace(write(metastore, txn, "insert", table=table,
                                             partition="dt=1"), rows_inserted=5, files=1,
                                       bytes=100)
        metastore.commit(txn, [inserted], statements=[
            StatementSummary(table, "insert", rows_inserted=5),
            StatementSummary("P", "insert", rows_inserted=0)])
        txn = begin(metastore)
        changed = write(metastore, txn, "update", table=table, partition="dt=1")
        changed = dataclasses.replace(changed, rows_inserted=3, rows_deleted=3, files=2,
                                      bytes=40)
        deleted = dataclasses.replace(write(metastore, txn, "delete", table=table,
                                            partition="dt=2"), rows_deleted=1, files=1,
                                      bytes=7)
        metastore.commit(txn, [changed, deleted], statements=[
            StatementSummary(table, "update", rows_updated=3),
            StatementSummary(table, "delete", rows_deleted=1),
            StatementSummary(table, "update", rows_updated=0),
            StatementSummary("default.other", "insert", rows_inserted=9)])
        assert _rows(metastore, "p") == [
            (1, "insert", 5, 0, 0, 1, 100, ("dt=1",)),
            (2, "update,delete", 0, 3, 1, 3, 47, ("dt=1", "dt=2"))]

    def test_a_statement_that_wrote_nothing_still_names_its_version(self) -> None:
        """A DELETE that matched no row, or an INSERT of no rows, took a write id and wrote
        no component: its version is named by the statement, with no rows."""
        metastore = self.metastore
        metastore.create_table(new_table())
        for name in ("delete", "insert"):
            txn = begin(metastore)
            metastore.allocate_write_id(txn, "t")
            metastore.commit(txn, [], statements=[StatementSummary("t", name)])
        assert _rows(metastore, "t") == [(1, "delete", 0, 0, 0, 0, 0, ()),
                                         (2, "insert", 0, 0, 0, 0, 0, ())]

    def test_without_statements_a_version_is_named_by_its_components(self) -> None:
        """A commit that names no statement (an older client) keeps the components' names,
        sorted, and their event counts."""
        metastore = self.metastore
        metastore.create_table(new_table())
        txn = begin(metastore)
        changed = dataclasses.replace(write(metastore, txn, "update"), rows_inserted=2,
                                      rows_deleted=2)
        metastore.commit(txn, [changed, dataclasses.replace(changed, operation="delete",
                                                            rows_inserted=0, rows_deleted=1)])
        assert _rows(metastore, "t") == [(1, "delete,update", 2, 0, 3, 0, 0, ())]

    def test_malformed_statements_are_refused_before_anything_commits(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        txn = begin(metastore)
        written = write(metastore, txn, "insert")
        for bad in (StatementSummary("t", "insert,delete"), StatementSummary("t", ""),
                    StatementSummary("t", "insert", rows_inserted=-1),
                    StatementSummary("no.such.table", "insert")):
            with raises(InvalidInputError):
                metastore.commit(txn, [written], statements=[bad])
        assert states(metastore)[txn] == "open" and metastore.history("t") == []
        metastore.commit(txn, [written], statements=[StatementSummary("t", "insert")])
        assert _rows(metastore, "t") == [(1, "insert", 0, 0, 0, 0, 0, ())]

    def test_committed_compactions_are_listed_among_the_writes(self) -> None:
        """A compaction's row has no write id, changes no row, counts what its outputs hold
        and the partitions it compacted, and stands before the first write committed after
        it; a compaction that aborted, or that has not committed, is not listed."""
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        table = "default.p"

        def insert() -> int:
            txn = begin(metastore)
            metastore.commit(txn, [write(metastore, txn, "insert", table=table,
                                         partition="dt=0")],
                             statements=[StatementSummary(table, "insert")])
            return txn

        def compaction(kind: str, parts: list[str], *, commit: bool = True) -> int:
            txn = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
            ids = metastore.valid_write_ids("p", metastore.valid_txns(txn))
            for part in parts:
                metastore.record_compaction("p", part, "minor" if kind == "minor" else "major",
                                            "test", txn_id=txn, worker="tester",
                                            compactor_write_ids=ids)
            if commit:
                name = "base_0000001" if kind == "major" else "delta_0000001_0000001"
                metastore.commit(txn, [], outputs=[
                    CompactionOutput(table, part, f"{part}/{name}_v{txn:07d}", 1, 1, 10 + i,
                                     (("bucket_00000", 1),), txn)
                    for i, part in enumerate(parts)])
            return txn

        first = insert()
        major = compaction("major", ["dt=0", "dt=1"])
        aborted = compaction("minor", ["dt=0"], commit=False)
        metastore.abort(aborted)
        second = insert()
        minor = compaction("minor", ["dt=0"])
        compaction("major", ["dt=1"], commit=False)  # still open
        got = [(e.write_id, e.txn_id, e.operation, e.files, e.bytes, e.partitions)
               for e in metastore.history("p")]
        assert got == [(1, first, "insert", 0, 0, ("dt=0",)),
                       (None, major, "compaction_major", 2, 21, ("dt=0", "dt=1")),
                       (2, second, "insert", 0, 0, ("dt=0",)),
                       (None, minor, "compaction_minor", 1, 10, ("dt=0",))]
        times = [e.commit_time for e in metastore.history("p")]
        assert times == sorted(times)
        assert all(e.rows_inserted == e.rows_updated == e.rows_deleted == 0
                   for e in metastore.history("p"))
        assert metastore.write_id_commit_times("p").keys() == {1, 2}
        assert HistoryEntry.table(metastore.history("p")).column("write_id").to_pylist() == [
            1, None, 2, None]


def _rows(metastore: Metastore, table: str
          ) -> list[tuple[int | None, str, int, int, int, int, int, tuple[str, ...]]]:
    """(write id, operation, inserted, updated, deleted, files, bytes, partitions) per row."""
    return [(e.write_id, e.operation, e.rows_inserted, e.rows_updated, e.rows_deleted, e.files,
             e.bytes, e.partitions) for e in metastore.history(table)]
