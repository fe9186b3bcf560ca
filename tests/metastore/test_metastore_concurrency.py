"""The metastore's promises under real concurrency, and a stateful model, beside the contract
suite (``acidstore.metastore.testing``, which has the threads sharing one handle).

``spawn`` processes each open their own store (as separate programs would) and race on one
table; a hypothesis state machine compares every snapshot with a plain-dict model after each
step. Backends are plugged in through ``metastore_support``, whose spec a spawned process
opens the store with.
"""

from __future__ import annotations

import shutil

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from metastore_support import (
    MAX,
    Backend,
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    component,
    metastore_fixture,  # noqa: F401  (the `metastore` fixture)
    new_table,
    states,
)
from metastore_workers import allocate_and_commit, open_and_create, race_deletes
from process_support import run_spawned

from acidstore.errors import WriteConflictError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore import Metastore, Operation

# --- real concurrency -------------------------------------------------------------------------


def test_processes_opening_a_new_store_together(backend: Backend) -> None:
    reports = run_spawned(open_and_create, [(backend.spec, w) for w in range(4)])
    created = [name for _, _, names in reports for name in names]
    assert sorted(created) == ["shared", "t0", "t1", "t2", "t3"]
    store = backend.open()
    try:
        assert store.list_tables() == [f"default.{n}" for n in ["shared", "t0", "t1", "t2", "t3"]]
    finally:
        store.close()


def test_processes_allocate_unique_contiguous_write_ids(backend: Backend,
                                                        metastore: Metastore) -> None:
    metastore.create_table(new_table())
    workers, cycles = 4, 25
    reports = run_spawned(allocate_and_commit,
                           [(backend.spec, "default.t", w, cycles) for w in range(workers)])
    done = [item for _, _, items in reports for item in items]
    assert len(done) == workers * cycles
    assert sorted(wid for _, wid, _ in done) == list(range(1, workers * cycles + 1))
    assert sorted(txn for txn, _, _ in done) == list(range(1, workers * cycles + 1))
    assert sorted(seq for _, _, seq in done) == list(range(1, workers * cycles + 1))
    # Each worker's own commits are in its own order.
    for _, _, items in reports:
        assert [wid for _, wid, _ in items] == sorted(wid for _, wid, _ in items)
    history = metastore.history("t")
    assert [(e.write_id, e.txn_id) for e in history] == sorted((w, t) for t, w, _ in done)
    assert {e.rows_inserted for e in history} == {1}
    shown = metastore.show_transactions()
    assert {t.state for t in shown} == {"committed"}
    # The run really was concurrent: some txn opened while another one was still open.
    assert any(t.snapshot.open_txn_ids for t in shown)
    assert str(metastore.valid_write_ids("t", metastore.valid_txns())) == \
        f"default.t:{workers * cycles}:{MAX}::"


def test_processes_racing_overlapping_deletes_exactly_one_wins(backend: Backend,
                                                               metastore: Metastore) -> None:
    metastore.create_table(new_table("race"))
    rounds = 5
    reports = run_spawned(race_deletes, [(backend.spec, "default.race", w, rounds)
                                          for w in range(2)])
    for round_no in range(rounds):
        pair = [reports[0][2][round_no], reports[1][2][round_no]]
        winners = [o for o in pair if o[0] == "committed"]
        losers = [o for o in pair if o[0] == "conflict"]
        assert (len(winners), len(losers)) == (1, 1), pair
        (_, win_txn, win_seq, _), (_, lose_txn, _, message) = winners[0], losers[0]
        assert win_seq == round_no + 1
        assert message.endswith(f"Hive: Aborting [txnid:{lose_txn},{win_seq + 1}] due to a write "
                                f"conflict on default/race committed by "
                                f"[txnid:{win_txn},{win_seq}] d/d"), message
    assert len(metastore.history("race")) == rounds
    assert sorted(states(metastore).values()) == ["aborted"] * rounds + ["committed"] * rounds


# --- a stateful model: visibility against a plain-dict model ----------------------------------


class VisibilityModel(RuleBasedStateMachine):
    """Random open/allocate/commit/abort sequences; after every step each open txn's snapshot
    and a fresh one must show exactly the write ids the model says are committed for it."""

    backend: Backend
    TABLES = ("default.a", "default.b")

    def __init__(self) -> None:
        super().__init__()
        self.store, self.directory = self.backend.open_fresh()
        for table in self.TABLES:
            self.store.create_table(new_table(table.split(".")[1]))
        self.state: dict[int, str] = {}
        self.committed_before: dict[int, set[int]] = {}  # txn -> txns committed when it opened
        self.aborted_before: dict[int, set[int]] = {}  # txn -> txns aborted when it opened
        self.commit_seq: dict[int, int] = {}
        self.seen_seq: dict[int, int] = {}  # txn -> commits visible when it opened
        # (txn, table) -> (wid, op)
        self.writes: dict[tuple[int, str], tuple[int, Operation]] = {}
        self.next_wid = dict.fromkeys(self.TABLES, 1)

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _open(self) -> list[int]:
        return sorted(t for t, s in self.state.items() if s == "open")

    @initialize()
    def two_concurrent_txns(self) -> None:
        self.open_txn()
        self.open_txn()

    @rule()
    def open_txn(self) -> None:
        info = self.store.open_transaction(user="m", host="m")
        assert info.txn_id == len(self.state) + 1
        assert info.snapshot == ValidTxnList(info.txn_id, tuple(self._open()), tuple(sorted(
            t for t, s in self.state.items() if s == "aborted")))
        self.committed_before[info.txn_id] = {t for t, s in self.state.items() if s == "committed"}
        self.aborted_before[info.txn_id] = {t for t, s in self.state.items() if s == "aborted"}
        self.seen_seq[info.txn_id] = len(self.commit_seq)
        self.state[info.txn_id] = "open"

    @precondition(lambda self: bool(self._open()))
    @rule(data=st.data(), table=st.sampled_from(TABLES + TABLES[:1]),  # favour conflicts
          operation=st.sampled_from(["insert", "update", "delete", "overwrite"]))
    def allocate(self, data: st.DataObject, table: str, operation: Operation) -> None:
        txn = data.draw(st.sampled_from(self._open()))
        expected = self.writes.get((txn, table), (self.next_wid[table], operation))[0]
        assert self.store.allocate_write_id(txn, table) == expected
        if (txn, table) not in self.writes:
            self.next_wid[table] += 1
            self.writes[(txn, table)] = (expected, operation)

    @precondition(lambda self: bool(self._open()))
    @rule(data=st.data(), abort=st.sampled_from([False, False, False, True]))
    def finish(self, data: st.DataObject, abort: bool) -> None:
        txn = data.draw(st.sampled_from(self._open()))
        if abort:
            self.store.abort(txn)
            self.state[txn] = "aborted"
            return
        mine = {table: w for (t, table), w in self.writes.items() if t == txn}
        conflict = any(
            other != txn and self.state[other] == "committed"
            and self.commit_seq[other] > self.seen_seq[txn]
            and op in ("update", "delete", "overwrite") and mine[table][1] != "insert"
            for (other, table), (_, op) in self.writes.items() if table in mine)
        # a committed overwrite's base_W hides every lower write id, inserts included, so
        # committing one of those after it must fail (issue 12, point 1)
        conflict = conflict or any(
            other != txn and self.state[other] == "committed" and op == "overwrite"
            and wid > mine[table][0]
            for (other, table), (wid, op) in self.writes.items() if table in mine)
        try:
            self.store.commit(txn, [component(w, op, table=table)
                                    for table, (w, op) in sorted(mine.items())])
        except WriteConflictError:
            assert conflict
            self.state[txn] = "aborted"
            return
        assert not conflict
        self.state[txn] = "committed"
        self.commit_seq[txn] = len(self.commit_seq) + 1

    def _expected(self, table: str, visible: set[int], snapshot_hwm: int, own: int | None,
                  aborted: set[int]) -> ValidWriteIdList:
        rows = [(w, t) for (t, name), (w, _) in self.writes.items() if name == table]
        hwm = max([w for w, t in rows if t <= snapshot_hwm or t == own], default=0)
        invalid = [(w, t) for w, t in rows if w <= hwm and t != own and t not in visible]
        return ValidWriteIdList(table, hwm, tuple(sorted(w for w, t in invalid
                                                         if t not in aborted)),
                                tuple(sorted(w for w, t in invalid if t in aborted)))

    @invariant()
    def snapshots_match_the_model(self) -> None:
        aborted_now = {t for t, s in self.state.items() if s == "aborted"}
        committed_now = {t for t, s in self.state.items() if s == "committed"}
        fresh = self.store.valid_txns()
        assert fresh == ValidTxnList(len(self.state), tuple(self._open()),
                                     tuple(sorted(aborted_now)))
        for table in self.TABLES:
            assert self.store.valid_write_ids(table, fresh) == self._expected(
                table, committed_now, len(self.state), None, aborted_now)
        for txn in self._open():
            snapshot = self.store.valid_txns(txn)
            for table in self.TABLES:
                got = self.store.valid_write_ids(table, snapshot, txn)
                assert got == self._expected(table, self.committed_before[txn], txn, txn,
                                             self.aborted_before[txn])


def test_visibility_matches_a_plain_model(backend: Backend) -> None:
    machine = type("Machine", (VisibilityModel,), {"backend": backend})
    # The rules are the shared SQL of both backends, so PostgreSQL (a server round trip per
    # statement, about 5x SQLite's time per call) runs fewer examples of the same model.
    run_state_machine_as_test(machine, settings=settings(
        stateful_step_count=40,
        max_examples=15 if backend.kind == "postgresql" else settings().max_examples))
