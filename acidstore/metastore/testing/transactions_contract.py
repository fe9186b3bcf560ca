"""The contract of the ``Transactions`` role, part 1: a transaction's lifecycle (open,
heartbeat, abort), batches of transactions (streaming ingest, spec §15), the timeout (§14),
and threads sharing one handle. Write ids and snapshots are ``write_ids_contract``'s, commits
``commits_contract``'s."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from acidstore.errors import (
    InvalidInputError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
)
from acidstore.metastore.records import PlannedWrite
from acidstore.metastore.testing.harness import (
    MAX,
    MetastoreHarness,
    begin,
    component,
    new_table,
    raises,
    states,
    write,
)

__all__ = ["TransactionsContract"]


class TransactionsContract(MetastoreHarness):
    """Open, heartbeat and abort; batches; timeouts; one handle shared by threads."""

    def test_open_transaction_records_ids_state_and_snapshot(self) -> None:
        metastore = self.metastore
        before = datetime.now(UTC)
        first = metastore.open_transaction(user="alice", host="h1")
        second = metastore.open_transaction(user="bob", host="h2", kind="compaction")
        assert (first.txn_id, second.txn_id) == (1, 2)
        assert (first.state, first.kind, first.user, first.host) == (
            "open", "default", "alice", "h1")
        assert (second.kind, second.user, second.host) == ("compaction", "bob", "h2")
        assert first.finished is None and first.started == first.last_heartbeat
        assert first.started.tzinfo == UTC and before <= first.started <= second.started
        # §6.5: hwm = own id; other open/aborted txns below it are exceptions; own txn is not.
        assert str(first.snapshot) == f"1:{MAX}::"
        assert str(second.snapshot) == "2:1:1:"
        assert metastore.valid_txns(1) == first.snapshot
        assert metastore.valid_txns(2) == second.snapshot
        assert str(metastore.valid_txns()) == "2:1:1,2:"
        with raises(InvalidInputError):
            metastore.open_transaction(user="x", host="y", kind="bogus")  # type: ignore[arg-type]

    def test_fresh_snapshot_of_an_empty_store(self) -> None:
        metastore = self.metastore
        assert str(metastore.valid_txns()) == f"0:{MAX}::"

    def test_snapshot_lists_aborted_and_open_but_not_committed(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        committed, aborted, still_open = begin(metastore), begin(metastore), begin(metastore)
        metastore.commit(committed, [])
        metastore.abort(aborted, "test")
        txn = metastore.open_transaction(user="u", host="h")
        assert str(txn.snapshot) == f"4:{still_open}:{still_open}:{aborted}"
        assert states(metastore) == {1: "committed", 2: "aborted", 3: "open", 4: "open"}

    def test_unknown_transactions_are_state_errors(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        with raises(TransactionStateError):
            metastore.valid_txns(99)
        with raises(TransactionStateError):
            metastore.heartbeat(99)
        with raises(TransactionStateError):
            metastore.allocate_write_id(99, "t")
        with raises(TransactionStateError):
            metastore.commit(99, [])
        with raises(TransactionStateError):
            metastore.abort(99)

    def test_heartbeat_refreshes_and_rejects_finished_txns(self) -> None:
        metastore = self.metastore
        txn = metastore.open_transaction(user="u", host="h")
        time.sleep(0.01)
        metastore.heartbeat(txn.txn_id)
        (shown,) = metastore.show_transactions()
        assert shown.last_heartbeat > txn.last_heartbeat and shown.started == txn.started
        metastore.commit(txn.txn_id, [])
        with raises(TransactionStateError):
            metastore.heartbeat(txn.txn_id)
        aborted = begin(metastore)
        metastore.abort(aborted)
        with raises(TransactionAbortedError):
            metastore.heartbeat(aborted)

    def test_abort_is_idempotent_and_refused_after_commit(self) -> None:
        metastore = self.metastore
        txn = begin(metastore)
        metastore.abort(txn, "first")
        metastore.abort(txn, "again")
        (info,) = metastore.show_transactions()
        assert info.state == "aborted" and info.finished is not None
        done = begin(metastore)
        metastore.commit(done, [])
        with raises(TransactionStateError):
            metastore.abort(done)
        with raises(TransactionAbortedError):
            metastore.commit(txn, [])
        with raises(TransactionStateError):
            metastore.commit(done, [])

    # --- introspection ----------------------------------------------------------------------------

    def test_show_transactions_lists_every_txn_in_order(self) -> None:
        metastore = self.metastore
        a, b, c = begin(metastore), begin(metastore), begin(metastore)
        metastore.commit(b, [])
        metastore.abort(c)
        shown = metastore.show_transactions()
        assert [(t.txn_id, t.state) for t in shown] == [(a, "open"), (b, "committed"),
                                                       (c, "aborted")]
        assert [t.finished is None for t in shown] == [True, False, False]
        assert str(shown[2].snapshot) == "3:1:1,2:"

    # --- one handle, many threads -----------------------------------------------------------------

    def test_threads_sharing_one_handle_allocate_without_gaps(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        results: list[int] = []
        errors: list[BaseException] = []
        guard = threading.Lock()
        start = threading.Barrier(6)

        def work() -> None:
            try:
                start.wait()
                for _ in range(15):
                    txn = begin(metastore)
                    written = write(metastore, txn, "insert")
                    metastore.commit(txn, [written])
                    with guard:
                        results.append(written.write_id)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert sorted(results) == list(range(1, 91))
        assert [e.write_id for e in metastore.history("t")] == list(range(1, 91))

    # --- batches (streaming ingest) ---------------------------------------------------------------

    def test_a_batch_opens_txns_with_contiguous_write_ids_and_records_their_writes(self) -> None:
        metastore = self.metastore
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

    def test_batches_of_racing_writers_each_get_a_contiguous_run(self) -> None:
        """Four threads (each its own connection) open batches on one table at once: every
        batch's write ids are contiguous and no id is handed out twice."""
        setup = self.another_client()
        setup.create_table(new_table())
        runs: list[list[int]] = []
        errors: list[BaseException] = []

        def writer() -> None:
            store = self.another_client()
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
        assert errors == []
        assert all(run == list(range(run[0], run[0] + 5)) for run in runs)
        assert sorted(w for run in runs for w in run) == list(range(1, 81))

    def test_a_refused_batch_opens_nothing(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        for count in (0, -1, 1001, True, 2.0):
            with raises(InvalidInputError, match="batch"):
                metastore.open_transaction_batch(count, user="u", host="h")  # type: ignore[arg-type]
        for writes, error in [([PlannedWrite("missing", ("",), "insert")], TableNotFoundError),
                              ([PlannedWrite("p", ("",), "insert")], InvalidInputError)]:
            with raises(error):
                metastore.open_transaction_batch(3, user="u", host="h", writes=writes)
        assert metastore.show_transactions() == []
        assert metastore.allocate_write_id(begin(metastore), "p") == 1

    def test_a_batch_without_writes_allocates_on_demand(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        batch = metastore.open_transaction_batch(2, user="u", host="h")
        assert [txn.write_ids for txn in batch] == [{}, {}]
        assert metastore.allocate_write_id(batch[1].txn_id, "t") == 1

    def test_heartbeat_batch_keeps_the_open_ones_alive_and_names_the_rest(self) -> None:
        store = self.another_client(timeout_seconds=self.short_timeout)
        store.create_table(new_table())
        batch = [txn.txn_id for txn in store.open_transaction_batch(
            3, user="u", host="h", writes=[PlannedWrite("t", ("",), "insert")])]
        store.commit(batch[0], [component(1)])
        store.abort(batch[1])
        for _ in range(8):  # twice the timeout in all
            time.sleep(self.short_timeout / 4)
            assert store.heartbeat_batch(batch) == batch[:2]
        assert states(store) == dict(zip(batch, ("committed", "aborted", "open"), strict=True))
        assert store.heartbeat_batch([]) == []
        assert store.heartbeat_batch([batch[2], 999]) == [999]
        with raises(InvalidInputError):
            store.heartbeat_batch(["1"])  # type: ignore[list-item]

    def test_unheartbeated_txns_of_a_batch_time_out(self) -> None:
        """A writer killed mid-batch stops heartbeating: every txn it left open is aborted by
        the timeout, its recorded writes listed for the cleaner."""
        store = self.another_client(timeout_seconds=self.short_timeout)
        store.create_table(new_table())
        batch = [txn.txn_id for txn in store.open_transaction_batch(
            3, user="u", host="h", writes=[PlannedWrite("t", ("",), "insert")])]
        time.sleep(self.short_timeout * 1.3)
        assert store.heartbeat_batch(batch) == batch
        assert set(states(store).values()) == {"aborted"}
        assert sorted(c.write_id for c in store.aborted_components("t")) == [1, 2, 3]
        with raises(TransactionAbortedError):
            store.commit(batch[0], [component(1)])

    # --- timeouts (§14) ---------------------------------------------------------------------------

    def test_timed_out_transactions_are_aborted_by_the_next_call(self) -> None:
        store = self.another_client(timeout_seconds=self.short_timeout)
        store.create_table(new_table())
        stale = begin(store)
        store.allocate_write_id(stale, "t")
        time.sleep(self.short_timeout * 1.3)
        assert str(store.valid_txns()) == f"1:{MAX}::1"  # a snapshot builder reaps too
        fresh = store.open_transaction(user="u", host="h")
        assert str(fresh.snapshot) == f"2:{MAX}::1"
        assert states(store) == {1: "aborted", 2: "open"}
        assert store.show_locks() == []
        with raises(TransactionAbortedError, match="txnid:1"):
            store.heartbeat(stale)
        with raises(TransactionAbortedError):
            store.allocate_write_id(stale, "t")
        with raises(TransactionAbortedError):
            store.commit(stale, [component(1)])
        assert str(store.valid_write_ids("t", fresh.snapshot)) == f"default.t:1:{MAX}::1"

    def test_heartbeats_keep_a_transaction_alive(self) -> None:
        store = self.another_client(timeout_seconds=self.short_timeout)
        store.create_table(new_table())
        txn = begin(store)
        for _ in range(8):  # twice the timeout in all
            time.sleep(self.short_timeout / 4)
            store.heartbeat(txn)
        written = write(store, txn, "insert")
        assert store.commit(txn, [written]).write_ids == {"default.t": 1}
