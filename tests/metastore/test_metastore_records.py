"""The metastore contract, part 4: recorded writes, locks and introspection, snapshot leases
(parts 1-3: ``test_metastore_contract.py``, ``_commit``, ``_concurrency``). Every backend must
pass it unchanged: SQLite and PostgreSQL through the ``backend``/``metastore`` fixtures of
``metastore_support``, real databases."""

from __future__ import annotations

import time
from datetime import UTC

import pytest
from metastore_support import (
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    begin,
    component,
    metastore_fixture,  # noqa: F401  (the `metastore` fixture)
    new_table,
    write,
)

from acidstore.errors import (
    InvalidInputError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
)
from acidstore.metastore import (
    CompactionOutput,
    Metastore,
    WriteComponent,
)

# --- recorded writes, locks, introspection ----------------------------------------------------


def test_record_write_shows_locks_until_commit_or_abort(metastore: Metastore) -> None:
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


def test_recorded_writes_of_aborted_txns_are_listed_for_cleaning(metastore: Metastore) -> None:
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
    assert metastore.aborted_components("default.other") == [component(1, table="default.other")]
    with pytest.raises(TransactionStateError):
        metastore.record_write(committed, component(2))
    with pytest.raises(TransactionAbortedError):
        metastore.record_write(crashed, recorded)


def test_committed_components_narrow_to_a_partition_and_a_write_id_range(
        metastore: Metastore) -> None:
    """A read asks only for the writes its base has not replaced (write ids from the base's
    up) and a partition's: the narrowed answers are exactly the whole answer's rows, in the
    same (txn) order, whatever order the write ids were allocated in."""
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


def test_compaction_outputs_narrow_to_a_partition_and_compaction_txns(
        metastore: Metastore) -> None:
    """A read asks for the outputs of the compactions whose ``_v`` directories it selected."""
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


def test_unseen_replacements_are_what_replaced_directories_after_a_snapshot(
        metastore: Metastore) -> None:
    """A leased read asks, once its lease is in place, which compactions and INSERT
    OVERWRITEs of its table committed without its snapshot seeing them (the cleaner may have
    removed what they replaced before the lease existed). Decided by txn ids, not times: a
    commit in flight when the snapshot was taken (listed open in it) counts however early
    its time, one the snapshot sees never does, nor an aborted one or another table's."""
    metastore.create_table(new_table())
    metastore.create_table(new_table("other"))
    seen = begin(metastore)
    metastore.commit(seen, [write(metastore, seen, "overwrite")])
    in_flight = begin(metastore)
    flight_write = write(metastore, in_flight, "overwrite")
    snapshot = metastore.valid_txns()
    assert metastore.unseen_replacements("t", snapshot) == []
    metastore.commit(in_flight, [flight_write])
    inserted, overwritten, aborted = begin(metastore), begin(metastore), begin(metastore)
    metastore.commit(inserted, [write(metastore, inserted, "insert")])
    metastore.commit(overwritten, [write(metastore, overwritten, "overwrite")])
    write(metastore, aborted, "overwrite")
    metastore.abort(aborted)
    other = begin(metastore)
    metastore.commit(other, [write(metastore, other, "overwrite", table="default.other")])
    compactor = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
    metastore.record_compaction(
        "t", "", "major", "test", txn_id=compactor, worker="tester",
        compactor_write_ids=metastore.valid_write_ids("t", metastore.valid_txns(compactor)))
    metastore.commit(compactor, [], outputs=[CompactionOutput(
        "default.t", "", f"base_0000004_v{compactor:07d}", 1, 1, 10, (("bucket_00000", 1),),
        compactor)])
    assert metastore.unseen_replacements("t", snapshot) == [in_flight, overwritten, compactor]
    assert metastore.unseen_replacements("other", snapshot) == [other]
    assert metastore.unseen_replacements("t", metastore.valid_txns()) == []


def test_show_transactions_lists_every_txn_in_order(metastore: Metastore) -> None:
    a, b, c = begin(metastore), begin(metastore), begin(metastore)
    metastore.commit(b, [])
    metastore.abort(c)
    shown = metastore.show_transactions()
    assert [(t.txn_id, t.state) for t in shown] == [(a, "open"), (b, "committed"),
                                                   (c, "aborted")]
    assert [t.finished is None for t in shown] == [True, False, False]
    assert str(shown[2].snapshot) == "3:1:1,2:"


# --- snapshot leases --------------------------------------------------------------------------


def test_leases_live_until_released_or_expired(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    snapshot = metastore.valid_txns()
    write_ids = metastore.valid_write_ids("t", snapshot)
    short = metastore.acquire_lease("t", snapshot, write_ids, ttl_seconds=0.5)
    long = metastore.acquire_lease("default.t", snapshot, write_ids, ttl_seconds=60)
    renewed = metastore.acquire_lease("t", snapshot, write_ids, ttl_seconds=0.5)
    assert len({short, long, renewed}) == 3
    leases = metastore.active_leases("t")
    assert [lease.lease_id for lease in leases] == sorted([short, long, renewed])
    first = leases[0]
    assert (first.table, first.snapshot, first.write_ids) == ("default.t", snapshot, write_ids)
    assert first.expires > first.acquired and first.acquired.tzinfo == UTC
    metastore.renew_lease(renewed, ttl_seconds=60)
    time.sleep(0.7)
    assert [lease.lease_id for lease in metastore.active_leases("t")] == [long, renewed]
    with pytest.raises(TransactionStateError):
        metastore.renew_lease(short, ttl_seconds=60)  # expired leases cannot be revived
    metastore.release_lease(long)
    metastore.release_lease(long)
    assert [lease.lease_id for lease in metastore.active_leases("t")] == [renewed]
    with pytest.raises(InvalidInputError):
        metastore.acquire_lease("t", snapshot, write_ids, ttl_seconds=0)
    with pytest.raises(TableNotFoundError):
        metastore.acquire_lease("missing", snapshot, write_ids, ttl_seconds=1)
