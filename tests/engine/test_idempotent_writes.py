"""Idempotent writes (Delta's ``txn`` action): ``insert(data, app_id=..., version=...)``.

A version of an application the table already holds, or a lower one, writes nothing and
returns a result that says ``skipped``; a higher one commits and becomes the application's
version. The version is recorded in the metastore in the same transaction as the commit, so
two runs racing with one version cannot both land: one commits, the other gets
``ConcurrentTransactionError`` and its files are removed once the metastore aborted it.
Everything runs on real metastores (SQLite files and the test PostgreSQL server) and, for the
races, in real processes. The metastore's own promise about application versions is part of
its contract suite (``acidstore.metastore.testing.CommitsContract``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from idempotent_workers import APP, TABLE, job_rows, run_job, write_then_commit
from metastore_support import (
    place_fixture,  # noqa: F401  (the `place` fixture, parametrised over backends)
    states,
)
from process_support import run_spawned
from table_workers import Place, connect

from acidstore import Table, Warehouse
from acidstore.errors import (
    ConcurrentTransactionError,
    InvalidInputError,
    MetadataChangedError,
    WriteConflictError,
)
from compaction import Cleaner

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def table(place: Place) -> Iterator[tuple[Place, Warehouse, Table]]:
    wh = connect(place)
    yield place, wh, wh.create_table(TABLE, SCHEMA, partition_by=["dt"])
    wh.close()


def ids(t: Table) -> list[int]:
    return sorted(t.to_arrow().column("id").to_pylist())


def directories(t: Table) -> set[str]:
    """Every directory under the table, relative to it (what a write leaves behind)."""
    found: set[str] = set()
    for root, dirs, _ in os.walk(t.location):
        found.update(os.path.relpath(os.path.join(root, d), t.location) for d in dirs)
    return found


# --- one process -----------------------------------------------------------------------------


def test_a_version_already_written_or_lower_is_skipped_and_a_higher_one_commits(
        table: tuple[Place, Warehouse, Table]) -> None:
    _, wh, t = table
    first = t.insert(job_rows(5), app_id=APP, version=5)
    assert (first.committed, first.skipped, first.write_id) == (True, False, 1)
    before = directories(t)
    for version in (5, 3, 0):  # a retry of run 5, and late retries of older runs
        again = t.insert(job_rows(version), app_id=APP, version=version)
        assert (again.skipped, again.committed, again.write_id, again.rows_inserted) == (
            True, False, None, 0)
        assert again.txn_id == first.txn_id  # the transaction that committed version 5
    assert directories(t) == before
    assert ids(t) == sorted(job_rows(5).column("id").to_pylist())
    assert len(wh.show_transactions()) == 1  # a skipped write opens no transaction

    later = t.insert(job_rows(6), app_id=APP, version=6)
    assert (later.committed, later.skipped, later.write_id) == (True, False, 2)
    [recorded] = wh.metastore.app_versions(TABLE)
    assert (recorded.app_id, recorded.version, recorded.txn_id, recorded.table) == (
        APP, 6, later.txn_id, TABLE)
    assert recorded.commit_time == t.history().column("commit_time").to_pylist()[-1]
    # other applications, and plain writes, are independent of it
    other = t.insert(job_rows(1), app_id="other-job", version=1)
    plain = t.insert(job_rows(6))
    assert not other.skipped and not plain.skipped
    assert [a.app_id for a in wh.metastore.app_versions(TABLE)] == [APP, "other-job"]
    assert ids(t) == sorted(job_rows(5).column("id").to_pylist() * 1
                            + job_rows(6).column("id").to_pylist() * 2
                            + job_rows(1).column("id").to_pylist())


def test_versions_are_per_table_and_insert_overwrite_takes_them_too(
        table: tuple[Place, Warehouse, Table]) -> None:
    _, wh, t = table
    second = wh.create_table("db.second", SCHEMA, partition_by=["dt"])
    t.insert(job_rows(2), app_id=APP, version=2)
    assert not second.insert(job_rows(2), app_id=APP, version=2).skipped
    replaced = second.insert_overwrite(job_rows(3), app_id=APP, version=3)
    assert (replaced.operation, replaced.skipped) == ("overwrite", False)
    assert second.insert_overwrite(job_rows(7), app_id=APP, version=3).skipped
    assert ids(second) == sorted(job_rows(3).column("id").to_pylist())


def test_inside_a_transaction_the_skip_is_a_statement_that_writes_nothing(
        table: tuple[Place, Warehouse, Table]) -> None:
    _, wh, t = table
    t.insert(job_rows(1), app_id=APP, version=1)
    with wh.transaction() as txn:
        bound = txn.table(TABLE)
        assert bound.insert(job_rows(1), app_id=APP, version=1).skipped
        bound.insert(job_rows(9))  # the transaction goes on
        done = bound.insert(job_rows(2), app_id=APP, version=2)
        assert (done.skipped, done.committed) == (False, False)
        # the same version again in the same transaction is one more statement of that run
        assert not bound.insert(job_rows(20), app_id=APP, version=2).skipped
    assert wh.metastore.app_versions(TABLE, APP)[0].version == 2
    assert ids(t) == sorted([*job_rows(1).column("id").to_pylist(),
                             *job_rows(9).column("id").to_pylist(),
                             *job_rows(2).column("id").to_pylist(),
                             *job_rows(20).column("id").to_pylist()])


def test_a_commit_that_fails_records_no_version(table: tuple[Place, Warehouse, Table]) -> None:
    """The version is written with the commit or not at all: a commit refused for another
    reason (the table's columns changed meanwhile) leaves the version free for a retry."""
    _, wh, t = table
    txn = wh.transaction()
    txn.table(TABLE).insert(job_rows(4), app_id=APP, version=4)
    t.add_columns(pa.schema([("extra", pa.string())]))
    with pytest.raises(MetadataChangedError):
        txn.commit()
    assert wh.metastore.app_versions(TABLE) == []
    retried = wh.table(TABLE).insert(job_rows(4).append_column("extra", pa.nulls(3, pa.string())),
                                     app_id=APP, version=4)
    assert (retried.committed, retried.skipped) == (True, False)
    assert ids(t) == sorted(job_rows(4).column("id").to_pylist())


def test_the_cleaner_forgets_an_aborted_idempotent_write(
        table: tuple[Place, Warehouse, Table]) -> None:
    """An aborted transaction that recorded an application version is forgotten like any
    other once its files are gone (the kill-point suite found that its pending version kept
    the transaction's row referenced, so every later cleaner pass failed with a metastore
    error), and the version stays free."""
    _, wh, t = table
    txn = wh.transaction()
    txn.table(TABLE).insert(job_rows(5), app_id=APP, version=5)
    txn.abort()
    report = Cleaner(wh, retention_seconds=0).run()
    assert report.forgotten == {TABLE: 1}
    assert txn.txn_id not in states(wh.metastore)
    assert t.snapshot().aborted_write_ids == ()
    assert not t.insert(job_rows(5), app_id=APP, version=5).skipped
    assert ids(t) == sorted(job_rows(5).column("id").to_pylist())


@pytest.mark.parametrize(("app_id", "version", "message"), [
    (APP, None, "needs both app_id and version"),
    (None, 3, "needs both app_id and version"),
    ("", 3, "app_id must be a non-empty printable string"),
    ("bad\x00id", 3, "app_id must be a non-empty printable string"),
    (APP, -1, "must be an integer from 0"),
    (APP, True, "must be an integer from 0"),
    (APP, "3", "must be an integer from 0"),
    (APP, 2**63, "must be an integer from 0"),
])
def test_bad_app_ids_and_versions_are_refused_before_anything_is_written(
        table: tuple[Place, Warehouse, Table], app_id: Any, version: Any, message: str) -> None:
    _, wh, t = table
    with pytest.raises(InvalidInputError, match=message):
        t.insert(job_rows(1), app_id=app_id, version=version)
    assert wh.show_transactions().num_rows == 0 and directories(t) == set()


def test_two_versions_of_one_app_in_one_transaction_are_refused(
        table: tuple[Place, Warehouse, Table]) -> None:
    _, wh, _ = table
    txn = wh.transaction()
    txn.table(TABLE).insert(job_rows(1), app_id=APP, version=1)
    with pytest.raises(InvalidInputError, match=r"already writes version 1 of app_id "
                       r"'nightly-load' on db\.events"):
        txn.table(TABLE).insert(job_rows(2), app_id=APP, version=2)
    assert txn.state == "aborted"  # a failed statement fails its transaction
    assert wh.metastore.app_versions(TABLE) == []


# --- real processes --------------------------------------------------------------------------


def test_two_processes_with_one_version_one_commits_the_other_gets_a_typed_conflict(
        table: tuple[Place, Warehouse, Table]) -> None:
    place, wh, t = table
    reports = [report for _, _, report in run_spawned(
        write_then_commit, [(place, w, 7) for w in range(2)], deadline_seconds=90)]
    winners = [r for r, state in reports if r[0] == "committed" and state == "committed"]
    losers = [r for r, state in reports if r[0] == "conflict" and state == "aborted"]
    assert len(winners) == 1 and len(losers) == 1, reports
    (_, winner_txn, winner_write_id), = winners
    (_, loser_txn, other_txn, table_name, app_id, partition, message), = losers
    assert (other_txn, table_name, app_id, partition) == (winner_txn, TABLE, APP, None)
    assert re.fullmatch(
        rf"Aborting \[txnid:{loser_txn}\]: \[txnid:{winner_txn}\] committed version 7 of "
        r"app_id 'nightly-load' on db\.events first, and this transaction writes version 7; "
        rf"nothing of txnid:{loser_txn} was committed \(a retry of this version is skipped\)",
        message), message
    assert issubclass(ConcurrentTransactionError, WriteConflictError)
    txns = dict(zip(wh.show_transactions().column("txn_id").to_pylist(),
                    wh.show_transactions().column("state").to_pylist(), strict=True))
    assert txns == {winner_txn: "committed", loser_txn: "aborted"}
    # the rows once; the loser's directories are gone (its write id is the other one)
    assert ids(t) == sorted(job_rows(7).column("id").to_pylist())
    loser_write_id = 3 - winner_write_id
    assert not [d for d in directories(t) if f"_{loser_write_id:07d}_" in d]
    assert [a.txn_id for a in wh.metastore.app_versions(TABLE, APP)] == [winner_txn]
    assert t.insert(job_rows(7), app_id=APP, version=7).skipped  # the retry


def test_attempts_of_one_run_in_many_processes_write_its_rows_once(
        table: tuple[Place, Warehouse, Table]) -> None:
    place, wh, t = table
    workers = 4
    reports = [report for _, _, report in run_spawned(
        run_job, [(place, w, 3) for w in range(workers)], deadline_seconds=90)]
    kinds = [r[0] for r in reports]
    assert kinds.count("committed") == 1 and set(kinds) <= {"committed", "skipped", "conflict"}
    [(_, winner)] = [r for r in reports if r[0] == "committed"]
    assert all(r[1] == winner for r in reports if r[0] == "skipped")
    assert all(r[2] == winner and r[4] == APP for r in reports if r[0] == "conflict")
    assert ids(t) == sorted(job_rows(3).column("id").to_pylist())
    # then the next run, in a process of its own, commits
    [(_, _, report)] = run_spawned(run_job, [(place, 0, 4)], deadline_seconds=90)
    assert report[0] == "committed"
    assert [a.version for a in wh.metastore.app_versions(TABLE)] == [4]
