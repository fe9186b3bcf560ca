"""The metastore contract (``acidstore.metastore.testing``) run against SQLite and PostgreSQL,
and shown able to fail: a deliberately broken backend fails the contract test it breaks.

No mocks: real databases, a SQLite file and a database of its own on the throwaway PostgreSQL
server (``postgres_server``) for each test. The tests that need more than a client of a store
(spawned processes, the stateful model, migrations) are the other ``test_metastore_*.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from metastore_support import Backend

from acidstore.errors import InvalidInputError
from acidstore.format.writeids import ValidTxnList
from acidstore.metastore import (
    CommitCheck,
    CommitInfo,
    CompactionOutput,
    Metastore,
    SqliteMetastore,
    StatementSummary,
    WriteComponent,
)
from acidstore.metastore.testing import MetastoreContract
from acidstore.metastore.testing.harness import begin, new_table, raises, write
from benchmarks.postgres_server import PostgresServer


class _BackendContract(MetastoreContract):
    """Opens the clients of ``metastore_support.Backend``, which the autouse fixture of each
    subclass makes afresh for every test."""

    backend: Backend

    def make_metastore(self, *, timeout_seconds: float | None = None) -> Metastore:
        if timeout_seconds is None:
            return self.backend.open()
        return self.backend.open(timeout_seconds=timeout_seconds)

    # --- the record of many partitions at once (``History.*_by_partition``) ---------------

    def test_committed_components_by_partition_are_each_partitions_from_its_floor(self) -> None:
        """Each partition's answer is exactly ``committed_components`` of it from its own
        floor, in the same (txn) order, also where write ids were allocated out of txn
        order; aborted writes, other tables and partitions not asked for stay out."""
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        metastore.create_table(new_table("other", partition_by=("dt",)))
        for i in range(6):
            txn = begin(metastore)
            metastore.commit(txn, [write(metastore, txn, "insert", table="default.p",
                                         partition=f"dt={i % 3}")])
        late, early = begin(metastore), begin(metastore)
        second = write(metastore, early, "insert", table="default.p", partition="dt=0")
        first = write(metastore, late, "delete", table="default.p", partition="dt=0")
        metastore.commit(early, [second])
        metastore.commit(late, [first])
        crashed, other = begin(metastore), begin(metastore)
        write(metastore, crashed, "insert", table="default.p", partition="dt=1")
        metastore.abort(crashed)
        metastore.commit(other, [write(metastore, other, "insert", table="default.other",
                                       partition="dt=0")])

        floors = {"dt=0": 4, "dt=1": 0, "dt=2": 9, "dt=7": 0}
        found = metastore.committed_components_by_partition("p", floors)
        assert found == {part: metastore.committed_components(
            "p", partition=part, min_write_id=low) for part, low in floors.items()}
        assert [c.write_id for c in found["dt=0"]] == [4, 8, 7]  # txn order
        assert [c.write_id for c in found["dt=1"]] == [2, 5]
        assert found["dt=2"] == found["dt=7"] == []
        assert metastore.committed_components_by_partition("p", {"dt=1": 3}) == {
            "dt=1": metastore.committed_components("p", partition="dt=1", min_write_id=3)}
        assert metastore.committed_components_by_partition("p", {}) == {}

    def test_compaction_outputs_by_partition_are_each_partitions(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        for part in ("dt=0", "dt=1", "dt=2"):
            txn = begin(metastore)
            metastore.commit(txn, [write(metastore, txn, "insert", table="default.p",
                                         partition=part)])
        for parts in (["dt=0", "dt=1"], ["dt=1"], ["dt=0"]):
            txn = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
            metastore.commit(txn, [], outputs=[CompactionOutput(
                "default.p", part, f"{part}/base_0000003_v{txn:07d}", 1, 1, 10,
                (("bucket_00000", 1),), txn) for part in parts])
        crashed = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
        metastore.abort(crashed)

        asked = ["dt=1", "dt=0", "dt=2", "dt=9", "dt=1"]
        found = metastore.compaction_outputs_by_partition("p", asked)
        assert found == {part: metastore.compaction_outputs("p", partition=part)
                         for part in asked}
        assert list(found) == ["dt=1", "dt=0", "dt=2", "dt=9"]
        assert [len(found[part]) for part in found] == [2, 2, 0, 0]
        assert metastore.compaction_outputs_by_partition("p", []) == {}

    def test_the_record_of_many_partitions_refuses_what_is_no_partition_list(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        with raises(InvalidInputError):
            metastore.compaction_outputs_by_partition("p", "dt=0")
        with raises(InvalidInputError):
            metastore.compaction_outputs_by_partition("p", [0])  # type: ignore[list-item]
        for floors in ({"dt=0": -1}, {"dt=0": True}, {0: 1}, [("dt=0", 1)]):
            with raises(InvalidInputError):
                metastore.committed_components_by_partition("p", floors)  # type: ignore[arg-type]


class TestSqliteContract(_BackendContract):
    @pytest.fixture(autouse=True)
    def _fresh_store(self, tmp_path: Path) -> None:
        self.backend = Backend("sqlite", tmp_path)


class TestPostgresContract(_BackendContract):
    @pytest.fixture(autouse=True)
    def _fresh_store(self, tmp_path: Path, postgres_server: PostgresServer) -> None:
        self.backend = Backend("postgresql", tmp_path, postgres_server,
                               postgres_server.new_store())


# --- the suite can fail -----------------------------------------------------------------------


class _SnapshotMissesACommit(SqliteMetastore):
    """Broken: a fresh snapshot lists the newest committed transaction as still open."""

    def valid_txns(self, txn_id: int | None = None) -> ValidTxnList:
        found = super().valid_txns(txn_id)
        committed = [t.txn_id for t in self.show_transactions() if t.state == "committed"]
        if txn_id is not None or not committed:
            return found
        return ValidTxnList(found.high_watermark,
                            tuple(sorted({*found.open_txn_ids, max(committed)})),
                            found.aborted_txn_ids)


class _CommitForgetsConflicts(SqliteMetastore):
    """Broken: a commit lets every overlapping write through (its check allows all)."""

    def commit(self, txn_id: int, components: Sequence[WriteComponent], *,
               check: CommitCheck | None = None,
               outputs: Sequence[CompactionOutput] = (),
               statements: Sequence[StatementSummary] = ()) -> CommitInfo:
        return super().commit(txn_id, components, outputs=outputs, statements=statements,
                              check=check or (lambda mine, theirs: None))


@pytest.mark.parametrize(("broken", "test"), [
    (_SnapshotMissesACommit, "test_write_id_lists_follow_spec_6_5"),
    (_CommitForgetsConflicts,
     "test_overlapping_updates_and_deletes_conflict_with_hives_message__update_delete"),
    (_CommitForgetsConflicts, "test_first_committer_wins_among_many"),
])
def test_a_broken_backend_fails_the_contract_test_it_breaks(
        tmp_path: Path, broken: type[SqliteMetastore], test: str) -> None:
    """The same contract test passes on the sound backend and fails on the broken one."""

    def run(kind: type[SqliteMetastore], where: Path) -> None:
        class Contract(MetastoreContract):
            def make_metastore(self, *, timeout_seconds: float | None = None) -> Metastore:
                return kind(where / "metastore.db")

        case = Contract()
        try:
            getattr(case, test)()
        finally:
            case.teardown_method()

    (tmp_path / "sound").mkdir()
    (tmp_path / "broken").mkdir()
    run(SqliteMetastore, tmp_path / "sound")
    with pytest.raises(AssertionError):
        run(broken, tmp_path / "broken")
