"""The metastore contract, transaction batches (streaming ingest, spec §15): many txns and
their write ids opened in one durable metastore call, heartbeated together. Every backend
passes it unchanged (the ``backend`` fixture of ``metastore_support``: SQLite and
PostgreSQL), as the rest of the contract in ``test_metastore_*.py``."""

from __future__ import annotations

import threading
import time

import pytest
from metastore_support import (
    Backend,
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    begin,
    component,
    metastore_fixture,  # noqa: F401  (the `metastore` fixture)
    new_table,
    states,
)

from acidstore.errors import InvalidInputError, TableNotFoundError, TransactionAbortedError
from acidstore.metastore import Metastore, PlannedWrite


def test_a_batch_opens_txns_with_contiguous_write_ids_and_records_their_writes(
        metastore: Metastore) -> None:
    metastore.create_table(new_table("p", partition_by=("dt",)))
    first = begin(metastore)
    assert metastore.allocate_write_id(first, "p") == 1
    batch = metastore.open_transaction_batch(
        4, user="tester", host="localhost", writes=[PlannedWrite("p", ("dt=1",), "insert")])
    ids = [txn.txn_id for txn in batch]
    assert ids == list(range(first + 1, first + 5))
    assert [txn.write_ids for txn in batch] == [{"default.p": w} for w in (2, 3, 4, 5)]
    assert all(txn.state == "open" for txn in batch)
    # each snapshot sees the earlier txns of its batch as open, never as committed
    for position, txn in enumerate(batch):
        assert txn.snapshot == metastore.valid_txns(txn.txn_id)
        assert set(txn.snapshot.open_txn_ids) == {first, *ids[:position]}
        assert txn.snapshot.high_watermark == txn.txn_id  # its own id, as Hive
    assert [(lk.txn_id, lk.partition) for lk in metastore.show_locks()] == [
        (i, "dt=1") for i in ids]
    # a txn of the batch commits as any other; its own write id is reused, not re-allocated
    assert metastore.allocate_write_id(ids[1], "p") == 3
    metastore.commit(ids[1], [component(3, table="p", partition="dt=1", rows_inserted=2)])
    for unused in (ids[0], *ids[2:]):
        metastore.abort(unused, "the batch closed")
    assert sorted(c.write_id for c in metastore.aborted_components("p")) == [2, 4, 5]
    reader = metastore.valid_write_ids("p", metastore.valid_txns())
    assert str(reader) == "default.p:5:1:1:2,4,5"  # write id 1 (first) is open


def test_batches_of_racing_writers_each_get_a_contiguous_run(backend: Backend) -> None:
    """Four threads (each its own connection) open batches on one table at once: every
    batch's write ids are contiguous and no id is handed out twice."""
    setup = backend.open()
    setup.create_table(new_table())
    runs: list[list[int]] = []
    errors: list[BaseException] = []

    def writer() -> None:
        store = backend.open()
        try:
            for _ in range(4):
                batch = store.open_transaction_batch(
                    5, user="w", host="h", writes=[PlannedWrite("t", ("",), "insert")])
                runs.append([txn.write_ids["default.t"] for txn in batch])
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    setup.close()
    assert errors == []
    assert all(run == list(range(run[0], run[0] + 5)) for run in runs)
    assert sorted(w for run in runs for w in run) == list(range(1, 81))


def test_a_refused_batch_opens_nothing(metastore: Metastore) -> None:
    metastore.create_table(new_table("p", partition_by=("dt",)))
    for count in (0, -1, 1001, True, 2.0):
        with pytest.raises(InvalidInputError, match="batch"):
            metastore.open_transaction_batch(count, user="u", host="h")  # type: ignore[arg-type]
    for writes, error in [([PlannedWrite("missing", ("",), "insert")], TableNotFoundError),
                          ([PlannedWrite("p", ("",), "insert")], InvalidInputError)]:
        with pytest.raises(error):
            metastore.open_transaction_batch(3, user="u", host="h", writes=writes)
    assert metastore.show_transactions() == []
    assert metastore.allocate_write_id(begin(metastore), "p") == 1


def test_a_batch_without_writes_allocates_on_demand(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    batch = metastore.open_transaction_batch(2, user="u", host="h")
    assert [txn.write_ids for txn in batch] == [{}, {}]
    assert metastore.allocate_write_id(batch[1].txn_id, "t") == 1


def test_heartbeat_batch_keeps_the_open_ones_alive_and_names_the_rest(
        backend: Backend) -> None:
    store = backend.open(timeout_seconds=1.0)
    try:
        store.create_table(new_table())
        batch = [txn.txn_id for txn in store.open_transaction_batch(
            3, user="u", host="h", writes=[PlannedWrite("t", ("",), "insert")])]
        store.commit(batch[0], [component(1)])
        store.abort(batch[1])
        for _ in range(8):  # 2 s in all, twice the timeout
            time.sleep(0.25)
            assert store.heartbeat_batch(batch) == batch[:2]
        assert states(store) == dict(zip(batch, ("committed", "aborted", "open"), strict=True))
        assert store.heartbeat_batch([]) == []
        assert store.heartbeat_batch([batch[2], 999]) == [999]
        with pytest.raises(InvalidInputError):
            store.heartbeat_batch(["1"])  # type: ignore[list-item]
    finally:
        store.close()


def test_unheartbeated_txns_of_a_batch_time_out(backend: Backend) -> None:
    """A writer killed mid-batch stops heartbeating: every txn it left open is aborted by
    the timeout, its recorded writes listed for the cleaner."""
    store = backend.open(timeout_seconds=1.0)
    try:
        store.create_table(new_table())
        batch = [txn.txn_id for txn in store.open_transaction_batch(
            3, user="u", host="h", writes=[PlannedWrite("t", ("",), "insert")])]
        time.sleep(1.3)
        assert store.heartbeat_batch(batch) == batch
        assert set(states(store).values()) == {"aborted"}
        assert sorted(c.write_id for c in store.aborted_components("t")) == [1, 2, 3]
        with pytest.raises(TransactionAbortedError):
            store.commit(batch[0], [component(1)])
    finally:
        store.close()
