"""The metastore contract, part 2: commit and write-write conflicts (spec §12.2).

Conflict = a committed write on the same table and partition, committed after the committing
txn's snapshot, where both operations are update/delete/overwrite; first committer wins and the
loser sees Hive's message. Inserts never conflict. See ``test_metastore_contract.py`` for how
backends are plugged in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from metastore_support import (
    MAX,
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    begin,
    component,
    metastore_fixture,  # noqa: F401  (the `metastore` fixture)
    new_table,
    states,
    write,
)

from acidstore.errors import (
    InvalidInputError,
    MetastoreError,
    TransactionAbortedError,
    WriteConflictError,
)
from acidstore.metastore import (
    CommittedWrite,
    Metastore,
    TableInfo,
    WriteComponent,
)

# --- commit and conflicts (§12.2) -------------------------------------------------------------


def test_commit_records_history_partitions_and_commit_info(metastore: Metastore) -> None:
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


def test_read_only_and_componentless_commits(metastore: Metastore) -> None:
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


def test_commit_validates_components_and_leaves_the_txn_open(metastore: Metastore) -> None:
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
        with pytest.raises(InvalidInputError):
            metastore.commit(txn, [item])
    assert states(metastore) == {txn: "open"}
    assert metastore.commit(txn, [component(wid)]).write_ids == {"default.t": 1}


def _conflict(first: str, second: str, metastore: Metastore) -> tuple[int, int, str | None]:
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


@pytest.mark.parametrize(("first", "second", "letters"), [
    ("update", "update", "u/u"), ("delete", "update", "u/d"), ("update", "delete", "d/u"),
    ("delete", "delete", "d/d"), ("overwrite", "delete", "d/o"), ("delete", "overwrite", "o/d"),
    ("overwrite", "overwrite", "o/o"), ("update", "overwrite", "o/u"),
])
def test_overlapping_updates_and_deletes_conflict_with_hives_message(
        metastore: Metastore, first: str, second: str, letters: str) -> None:
    winner, loser, message = _conflict(first, second, metastore)
    assert message == (f"Aborting [txnid:{loser},2] due to a write conflict on default/t "
                       f"committed by [txnid:{winner},1] {letters}")
    assert states(metastore) == {winner: "committed", loser: "aborted"}
    # The loser's write id is aborted for everyone; its files are listed for the cleaner.
    after = metastore.open_transaction(user="u", host="h")
    assert str(metastore.valid_write_ids("t", after.snapshot)) == f"default.t:2:{MAX}::2"
    assert [(c.write_id, c.operation) for c in metastore.aborted_components("t")] == [
        (2, second)]
    assert [e.write_id for e in metastore.history("t")] == [1]
    with pytest.raises(TransactionAbortedError):
        metastore.commit(loser, [])


def test_a_conflicting_commit_keeps_its_offered_components_for_the_cleaner(
        metastore: Metastore) -> None:
    metastore.create_table(new_table())
    winner, loser, silent = begin(metastore), begin(metastore), begin(metastore)
    mine = write(metastore, winner, "delete")
    recorded = write(metastore, loser, "delete")
    unrecorded = component(metastore.allocate_write_id(silent, "t"), "update")
    final = replace(recorded, directories=(*recorded.directories, "delta_0000002_0000002_0001"),
                    rows_deleted=3)
    metastore.commit(winner, [mine])
    with pytest.raises(WriteConflictError):
        metastore.commit(loser, [final])
    assert metastore.aborted_components("t") == [recorded, final]
    # A writer that never recorded (not following the protocol) still leaves a trace.
    with pytest.raises(WriteConflictError):
        metastore.commit(silent, [unrecorded])
    assert metastore.aborted_components("t") == [recorded, final, unrecorded]


@pytest.mark.parametrize(("first", "second"), [
    ("insert", "insert"), ("insert", "delete"), ("delete", "insert"), ("update", "insert"),
    ("insert", "overwrite"), ("overwrite", "insert"),
])
def test_inserts_never_conflict(metastore: Metastore, first: str, second: str) -> None:
    winner, loser, message = _conflict(first, second, metastore)
    assert message is None
    assert states(metastore) == {winner: "committed", loser: "committed"}


def test_conflicts_are_per_partition(metastore: Metastore) -> None:
    metastore.create_table(new_table("p", partition_by=("dt",)))
    a, b, c = begin(metastore), begin(metastore), begin(metastore)
    mine = write(metastore, a, "update", table="default.p", partition="dt=1")
    other_partition = write(metastore, b, "update", table="default.p", partition="dt=2")
    same_partition = write(metastore, c, "delete", table="default.p", partition="dt=1")
    metastore.commit(a, [mine])
    assert metastore.commit(b, [other_partition]).commit_seq == 2
    with pytest.raises(WriteConflictError) as caught:
        metastore.commit(c, [same_partition])
    assert str(caught.value) == (f"Aborting [txnid:{c},3] due to a write conflict on "
                                 f"default/p/dt=1 committed by [txnid:{a},1] d/u")


def test_writes_committed_before_the_snapshot_do_not_conflict(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    first = begin(metastore)
    metastore.commit(first, [write(metastore, first, "delete")])
    later = begin(metastore)
    assert metastore.commit(later, [write(metastore, later, "delete")]).commit_seq == 2


def test_first_committer_wins_among_many(metastore: Metastore) -> None:
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


def test_check_sees_components_and_overlapping_writes_and_may_allow(
        metastore: Metastore) -> None:
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
    assert states(metastore) == {winner: "committed", loser: "committed", bystander: "committed"}
    assert metastore.overlapping_writes(loser, [theirs]) == []  # no longer open


def test_check_is_not_called_without_overlap(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    txn = begin(metastore)
    calls: list[int] = []
    metastore.commit(txn, [write(metastore, txn, "delete")],
                     check=lambda components, overlapping: calls.append(1))
    assert calls == []


@pytest.mark.parametrize("error", [WriteConflictError("rows 3 and 4 overlap"),
                                   RuntimeError("could not read a delete delta")])
def test_a_raising_check_aborts_and_re_raises(metastore: Metastore, error: Exception) -> None:
    metastore.create_table(new_table())
    winner, loser = begin(metastore), begin(metastore)
    mine, theirs = write(metastore, winner, "delete"), write(metastore, loser, "delete")
    metastore.commit(winner, [mine])

    def check(components: Sequence[WriteComponent],
              overlapping: Sequence[CommittedWrite]) -> None:
        raise error

    with pytest.raises(type(error)) as caught:
        metastore.commit(loser, [theirs], check=check)
    assert caught.value is error
    assert states(metastore) == {winner: "committed", loser: "aborted"}
    assert metastore.show_locks() == []


def test_check_may_read_the_catalog_but_not_write(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    winner, loser = begin(metastore), begin(metastore)
    mine, theirs = write(metastore, winner, "delete"), write(metastore, loser, "delete")
    metastore.commit(winner, [mine])
    read: list[TableInfo] = []

    def check(components: Sequence[WriteComponent],
              overlapping: Sequence[CommittedWrite]) -> None:
        read.append(metastore.get_table("t"))
        metastore.abort(loser)  # a nested write is refused, which aborts the commit

    with pytest.raises(MetastoreError):
        metastore.commit(loser, [theirs], check=check)
    assert [t.full_name for t in read] == ["default.t"]
    assert states(metastore) == {winner: "committed", loser: "aborted"}
