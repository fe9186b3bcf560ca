"""Snapshots under real concurrency: writers on tables of their own, writers racing on one
shared table, and readers, each a process of its own, hammer one metastore.

PostgreSQL opens and commits without a global lock (txn ids come from a server sequence,
commits lock only their tables' rows), so an id can be handed out before its txn is visible:
this test is what shows the snapshots stay right. SQLite, which serializes every write, runs
the same checks. With ``began``/``returned`` the moments a commit call started and returned
(one monotonic clock for all processes) and S a snapshot asked for at ``asked`` and answered
at ``answered``:

1. write ids: each table's are 1..n, each allocated once, and its history holds exactly the
   ones its writer committed (none lost, none duplicated);
2. a snapshot sees every commit that returned before it was asked for;
3. a snapshot that sees B committed sees every A whose commit returned before B's began
   (no snapshot sees a later commit but misses an earlier one);
4. a snapshot sees as committed only txns that did commit, and whose commit began before it
   answered: never an aborted txn, one that lost a conflict, or one still being opened;
5. a table's write id list at S makes valid exactly the write ids of the txns S sees committed;
6. of two committed deletes on the shared table, one saw the other committed at its open
   (first committer wins), and at least one delete lost with ``WriteConflictError``.
"""

from __future__ import annotations

from metastore_hammer import Done, hammer
from metastore_support import (
    Backend,
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    new_table,
)
from process_support import run_spawned

from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore import Metastore

OWN, SHARED, READERS = 8, 3, 2
CYCLES, SHARED_CYCLES, ROUNDS = 30, 15, 150


def test_snapshots_stay_consistent_under_mixed_concurrent_writers(backend: Backend) -> None:
    store = backend.open()
    own_tables = [f"default.own{w}" for w in range(OWN)]
    for name in [*own_tables, "default.shared"]:
        store.create_table(new_table(name.split(".")[1]))
    args: list[tuple[object, ...]] = [(backend.spec, "own", own_tables[w], w, CYCLES)
                                       for w in range(OWN)]
    args += [(backend.spec, "shared", "default.shared", OWN + w, SHARED_CYCLES)
             for w in range(SHARED)]
    args += [(backend.spec, "reader", own_tables, OWN + SHARED + w, ROUNDS)
             for w in range(READERS)]
    reports = run_spawned(hammer, args, deadline_seconds=300)
    txns: list[Done] = [d for _, w, log in reports if w < OWN + SHARED for d in log]
    snapshots = [s for _, w, log in reports if w >= OWN + SHARED for s in log]
    try:
        _check_write_ids(store, txns, [*own_tables, "default.shared"])
    finally:
        store.close()
    committed = [t for t in txns if t[3] == "committed"]
    by_id = {t[0]: t for t in txns}
    assert len(by_id) == len(txns), "a txn id was handed out twice"
    for asked, answered, text, lists in snapshots:
        snapshot = ValidTxnList.parse(text)
        seen = [t for t in committed if snapshot.is_txn_valid(t[0])]
        # 2. every commit that returned before the snapshot was asked for is in it
        missed = [t[0] for t in committed if t[6] < asked and not snapshot.is_txn_valid(t[0])]
        assert missed == [], f"{text} misses commits that returned before it was asked for"
        # 3. a later commit seen implies every commit that returned before it began is seen
        for later in seen:
            before = [t[0] for t in committed if t[6] < later[5]
                      and not snapshot.is_txn_valid(t[0])]
            assert before == [], f"{text} sees txn {later[0]} but misses {before}"
        # 4. only txns that committed, and began to before the snapshot answered
        wrong = [t[0] for t in txns if snapshot.is_txn_valid(t[0])
                 and (t[3] != "committed" or t[5] > answered)]
        assert wrong == [], f"{text} sees txns {wrong} committed"
        # 5. each table's write id list agrees with the txn list
        for table, listed in lists.items():
            write_ids = ValidWriteIdList.parse(listed)
            mine = [t for t in txns if t[1] == table]
            valid = sorted(t[2] for t in mine if write_ids.is_write_id_valid(t[2]))
            expected = sorted(t[2] for t in mine if snapshot.is_txn_valid(t[0]))
            assert valid == expected, f"{table} at {text}: {listed}"
    # 6. first committer wins on the shared table, and it did have to decide
    deletes = [t for t in txns if t[1] == "default.shared"]
    winners = [t for t in deletes if t[3] == "committed"]
    for a in winners:
        for b in winners:
            if a[0] < b[0]:
                saw = (ValidTxnList.parse(b[4]).is_txn_valid(a[0])
                       or ValidTxnList.parse(a[4]).is_txn_valid(b[0]))
                assert saw, f"deletes {a[0]} and {b[0]} overlapped and both committed"
    assert any(t[3] == "conflict" for t in deletes), "no delete lost a conflict"
    assert winners, "no delete committed"


def _check_write_ids(store: Metastore, txns: list[Done], tables: list[str]) -> None:
    """1. per table: write ids 1..n, each allocated once; history = the committed ones."""
    for table in tables:
        mine = [t for t in txns if t[1] == table]
        assert sorted(t[2] for t in mine) == list(range(1, len(mine) + 1)), table
        committed = sorted(t[2] for t in mine if t[3] == "committed")
        assert [e.write_id for e in store.history(table)] == committed, table
