"""A transaction's heartbeat starts its thread only when the first beat is due
(``acidstore.engine.heartbeat``), on a real SQLite metastore: a transaction that ends
first never starts one; one still open is beaten from then on, every interval, exactly as
by a thread started at the open; nothing beats after ``stop``; a forked child beats its own.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

from acidstore.engine.heartbeat import Heartbeat
from acidstore.metastore import SqliteMetastore


def _last_heartbeat(store: SqliteMetastore, txn_id: int) -> float:
    [info] = [t for t in store.show_transactions() if t.txn_id == txn_id]
    return info.last_heartbeat.timestamp()


def _beating_threads(txn_id: int) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"acidstore-heartbeat-{txn_id}"]


def test_a_transaction_that_ends_first_starts_no_thread(tmp_path: Path) -> None:
    store = SqliteMetastore(tmp_path / "ms.db")
    txn = store.open_transaction(user="u", host="h")
    beat = Heartbeat(store, txn.txn_id, 0.3)
    assert _beating_threads(txn.txn_id) == []
    beat.stop()
    time.sleep(0.6)  # past the due time: the timer dropped it
    assert beat.thread is None and _beating_threads(txn.txn_id) == []
    assert _last_heartbeat(store, txn.txn_id) == txn.last_heartbeat.timestamp()
    store.close()


def test_an_open_transaction_is_beaten_every_interval_until_stopped(tmp_path: Path) -> None:
    store = SqliteMetastore(tmp_path / "ms.db")
    txn = store.open_transaction(user="u", host="h")
    opened = txn.last_heartbeat.timestamp()
    beats = [Heartbeat(store, txn.txn_id, 0.2)]
    other = store.open_transaction(user="u", host="h")  # a second one, stopped at once
    beats.append(Heartbeat(store, other.txn_id, 0.1))
    beats[1].stop()
    deadline = time.monotonic() + 30
    seen = [opened]
    while len(set(seen)) < 4 and time.monotonic() < deadline:  # three beats after the open
        time.sleep(0.05)
        seen.append(_last_heartbeat(store, txn.txn_id))
    assert len(set(seen)) >= 4, "the open transaction was not heartbeated every interval"
    assert beats[0].thread is not None and beats[0].error is None
    beats[0].stop()
    after = _last_heartbeat(store, txn.txn_id)
    time.sleep(0.6)
    assert _last_heartbeat(store, txn.txn_id) == after  # no beat once stop returned
    assert _last_heartbeat(store, other.txn_id) == other.last_heartbeat.timestamp()
    store.close()


def _child_beats(path: str, txn_id: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    store = SqliteMetastore(path)
    before = _last_heartbeat(store, txn_id)
    beat = Heartbeat(store, txn_id, 0.1)
    deadline = time.monotonic() + 20
    while _last_heartbeat(store, txn_id) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    beat.stop()
    out.put(_last_heartbeat(store, txn_id) > before)


def test_a_forked_child_beats_its_own_transactions(tmp_path: Path) -> None:
    """The parent's timer thread (and perhaps its lock, held at the fork) is not the child's:
    the child starts its own, so its transaction is beaten and nothing hangs."""
    path = str(tmp_path / "ms.db")
    store = SqliteMetastore(path)
    mine = store.open_transaction(user="u", host="h")
    parent_beat = Heartbeat(store, mine.txn_id, 0.05)  # the parent's timer runs at the fork
    txn = store.open_transaction(user="u", host="h")
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_beats, args=(path, txn.txn_id, out))
    child.start()
    try:
        assert out.get(timeout=60) is True
    finally:
        child.join(timeout=60)
        parent_beat.stop()
        store.close()
    assert child.exitcode == 0
