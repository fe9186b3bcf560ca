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
from benchmarks.postgres_server import PostgresServer


class _BackendContract(MetastoreContract):
    """Opens the clients of ``metastore_support.Backend``, which the autouse fixture of each
    subclass makes afresh for every test."""

    backend: Backend

    def make_metastore(self, *, timeout_seconds: float | None = None) -> Metastore:
        if timeout_seconds is None:
            return self.backend.open()
        return self.backend.open(timeout_seconds=timeout_seconds)


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
