"""The PostgreSQL metastore's one-statement calls (``postgres_functions``).

PostgreSQL hands out txn ids without a lock (a server sequence), so an id can be taken
before its txn's row is visible. These tests hold such an id by hand (``nextval`` on a plain
connection, as an open in flight does) and check the rules of ``postgres_functions``: every
snapshot lists it as open until its txn shows up; one that never shows up is filled with an
aborted row once a later txn is older than the gap timeout, after which a late open of it
fails on the row's primary key instead of joining snapshots that already decided about it.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from metastore_support import begin, new_table, write

from acidstore.metastore import PlannedWrite, PostgresMetastore, WriteComponent
from acidstore.metastore.postgres_functions import GAP_TIMEOUT_MICROS
from acidstore.metastore.sql_schema import now_micros
from benchmarks.metastore import insert_cycle
from benchmarks.postgres_server import PostgresServer


@pytest.fixture
def url(postgres_server: PostgresServer) -> str:
    return postgres_server.new_store()


@pytest.fixture
def store(url: str) -> Iterator[PostgresMetastore]:
    with PostgresMetastore(url) as opened:
        opened.create_table(new_table())
        yield opened


def _take_id(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT nextval('acid_txn_ids')").fetchone()
        assert row is not None
        return int(row[0])


def _insert_open_row(url: str, txn_id: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO txns (txn_id, state, kind, user_name, host, started, "
                     "last_heartbeat, snapshot, snapshot_commit_seq) VALUES "
                     "(%s, 'open', 'default', 'late', 'test', %s, %s, '', 0)",
                     (txn_id, now_micros(), now_micros()))


def test_an_id_whose_txn_is_not_visible_yet_is_open_in_every_snapshot(
        store: PostgresMetastore, url: str) -> None:
    taken = _take_id(url)
    later = begin(store)
    store.commit(later, [write(store, later, "insert")])
    reader = store.valid_txns()
    assert reader.high_watermark == later > taken
    assert reader.is_txn_open(taken) and reader.is_txn_valid(later)
    opened = store.open_transaction(user="u", host="h")
    assert opened.snapshot.is_txn_open(taken)
    # its open completes, then it commits: later snapshots see it, earlier ones never do
    _insert_open_row(url, taken)
    assert store.valid_txns().is_txn_open(taken)
    store.commit(taken, [])
    assert store.valid_txns().is_txn_valid(taken)
    assert store.valid_txns(opened.txn_id).is_txn_open(taken)


def test_an_id_whose_open_never_completes_is_filled_as_aborted(
        store: PostgresMetastore, url: str) -> None:
    dead = _take_id(url)
    for _ in range(40):  # past the floor's lag, so the next open raises the floor
        store.abort(begin(store))
    assert store.valid_txns().is_txn_open(dead)
    now = now_micros()
    with psycopg.connect(url, autocommit=True) as conn:  # a gap timeout of 0: fill it now
        conn.execute("SELECT * FROM acid_open_v9('default', 'u', 'h', %s, %s, 0, '[]')",
                     (now, 10**12))
        floor = conn.execute("SELECT next_value FROM sequences WHERE name = 'txn_floor'"
                             ).fetchone()
    assert floor is not None and floor[0] > dead
    filled = {t.txn_id: t.state for t in store.show_transactions()}[dead]
    assert filled == "aborted"
    assert store.valid_txns().is_txn_aborted(dead)
    with pytest.raises(psycopg.errors.UniqueViolation):  # the late open loses
        _insert_open_row(url, dead)


def test_a_gap_keeps_compactions_from_being_cleaned(store: PostgresMetastore,
                                                    url: str) -> None:
    """The cleaner waits for every txn that was open when a compaction committed; an open in
    flight then may have taken its snapshot before the compaction: it counts as open."""
    from acidstore.metastore.sql_queue import ready_for_cleaning

    taken = _take_id(url)
    later = begin(store)
    store.commit(later, [])
    session = store._session()
    with session.conn.transaction():
        session.execute("INSERT INTO compactions (table_id, table_name, part, kind, state, "
                        "reason, enqueued, next_txn_id) VALUES (1, 'default.t', '', 'major', "
                        "'ready for cleaning', 'test', 0, ?)", (later + 1,))
        assert ready_for_cleaning(session) == []
    _insert_open_row(url, taken)
    store.commit(taken, [])
    with session.conn.transaction():
        assert [c.next_txn_id for c in ready_for_cleaning(session)] == [later + 1]


def test_the_cleaner_fills_a_dead_gap_but_waits_for_a_live_one(store: PostgresMetastore,
                                                                url: str) -> None:
    """A gap counts as an open in flight to the cleaner; one whose open died (a later txn
    started over the gap timeout ago) is filled when the cleaner asks, with no new open
    needed; a young one (a live open) is not."""
    dead = _take_id(url)
    later = begin(store)
    store.commit(later, [])
    assert store.opens_in_flight() == [dead]  # young: still waited for
    with psycopg.connect(url, autocommit=True) as conn:  # ``later`` started long ago
        conn.execute("UPDATE txns SET started = started - %s WHERE txn_id = %s",
                     (2 * GAP_TIMEOUT_MICROS, later))
    live = _take_id(url)
    assert store.opens_in_flight() == [live]
    assert {t.txn_id: t.state for t in store.show_transactions()}[dead] == "aborted"
    session = store._session()
    with session.conn.transaction():
        session.execute("INSERT INTO compactions (table_id, table_name, part, kind, state, "
                        "reason, enqueued, next_txn_id) VALUES (1, 'default.t', '', 'major', "
                        "'ready for cleaning', 'test', 0, ?)", (later + 1,))
    assert [c.next_txn_id for c in store.compactions_ready_for_cleaning()] == [later + 1]


@pytest.mark.parametrize("partition", ["", "dt=1"])
def test_a_table_replaced_by_another_client_is_read_again(store: PostgresMetastore, url: str,
                                                          partition: str) -> None:
    """The calls cache a table's catalog entry; another client dropping the table and
    creating one of the same name (the server refuses the cached id) or with another
    partitioning (the check here refuses it) must not be written through it."""
    store.commit(store.open_transaction(user="u", host="h", writes=[
        PlannedWrite("t", ("",), "insert")]).txn_id, [])
    with PostgresMetastore(url) as other:
        other.drop_table("t")
        other.create_table(new_table(partition_by=["dt"] if partition else []))
    opened = store.open_transaction(user="u", host="h",
                                    writes=[PlannedWrite("t", (partition,), "insert")])
    assert opened.write_ids == {"default.t": 1}
    directory = "/".join(p for p in (partition, "delta_0000001_0000001_0000") if p)
    done = WriteComponent("default.t", partition, "insert", 1, (directory,), rows_inserted=1)
    store.commit(opened.txn_id, [done])
    assert store.committed_components("t") == [done]
    assert store.list_partitions("t") == ([partition] if partition else [])


def test_the_shared_sql_open_counts_its_own_id_and_lists_gaps(store: PostgresMetastore,
                                                               url: str) -> None:
    """``SqlMetastore``'s own open (which batch opens build on) on PostgreSQL: its snapshot
    takes the new id as hwm without listing it, and lists an id in flight below as open."""
    from acidstore.metastore.sql_store import SqlMetastore

    taken = _take_id(url)
    info = SqlMetastore.open_transaction(store, user="u", host="h")
    assert info.snapshot.high_watermark == info.txn_id > taken
    assert info.snapshot.is_txn_open(taken)
    assert info.txn_id not in info.snapshot.exceptions


def _seq_tuples_read(url: str, store: PostgresMetastore) -> int:
    """Rows the server has read by sequential scans of the tables that grow with every txn;
    the store's backend flushes its statistics first (when it next goes idle)."""
    conn = store._session().conn
    conn.execute("SELECT pg_stat_force_next_flush()")
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.commit()
    with psycopg.connect(url, autocommit=True) as observer:
        row = observer.execute(
            "SELECT coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables "
            "WHERE schemaname = current_schema() AND relname IN ('txns', 'components', "
            "'txn_write_ids')").fetchone()
        assert row is not None
        return int(row[0])


def test_opens_and_commits_do_not_scan_the_history(store: PostgresMetastore,
                                                    url: str) -> None:
    """An open's snapshot once hashed every txn row to find the ids in flight, and a commit's
    INSERT OVERWRITE check scanned every component: both grew with the history (5 ms and 2 ms
    a call at 10,000 commits). Counted in rows the server read, not time."""
    for _ in range(400):
        insert_cycle(store, "default.t")
    with psycopg.connect(url, autocommit=True) as conn:
        # as autovacuum would: a table the planner believes tiny is scanned whatever the plan
        conn.execute("ANALYZE txns, components, txn_write_ids")
    before = _seq_tuples_read(url, store)
    for _ in range(5):
        insert_cycle(store, "default.t")
    assert _seq_tuples_read(url, store) - before < 100
