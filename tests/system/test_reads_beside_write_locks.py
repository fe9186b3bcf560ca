"""Reads never wait for a writer, whatever it holds and for however long.

Another process holds what a writer of the metastore holds (``lock_holders``: SQLite's write
lock; on PostgreSQL a commit's and an ``add_columns``' row locks, every txn row, every lease
row and every named lock) for two minutes, and is killed when the test is done. Meanwhile
this process connects and reads the table every way a user can: ``to_arrow``,
``to_batches`` (whose lease is recorded while the writer holds on), ``as_of`` a write id
and a time, ``snapshot()``, ``history()`` and the ``acidstore read`` command. The store holds
a transaction that has timed out (a snapshot reaps it, which is a write) and an expired lease
(a lease call deletes it, which is a write too).

Each read must end within a liveness bound far below the busy timeout (30 s). Before reads
kept their writes out of the writers' way, every one of them waited for the busy timeout
and failed: a lease was a write of the metastore (on PostgreSQL behind the timed-out txn's
row and the expired lease's row), and a snapshot that found a txn to reap waited for the
write lock to reap it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pytest
from cli_support import run_process
from lock_holders import writer_locks_held
from table_workers import TABLE, Place, connect

import acidstore
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.errors import MetastoreError
from acidstore.metastore import PostgresMetastore, SqliteMetastore

T = TypeVar("T")
#: seconds a read may take while the writer holds on: a liveness bound, not a benchmark
BOUND = 10.0
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string())])


@pytest.fixture(params=["sqlite", "postgresql"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    location = str(tmp_path / "wh")
    if request.param == "postgresql":
        return location, request.getfixturevalue("postgres_server").new_store()
    return location


def metastore_of(place: Place, **options: Any) -> SqliteMetastore | PostgresMetastore:
    """A client of its own for ``place``'s metastore."""
    if isinstance(place, tuple):
        return PostgresMetastore(place[1], **options)
    return SqliteMetastore(Path(place) / DEFAULT_METASTORE_FILE, **options)


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": ["d"] * len(ids)}, schema=SCHEMA)


def seed(place: Place) -> tuple[datetime, int]:
    """Two writes, the moment between them, and the id of a txn left to time out; an
    expired lease stays behind."""
    with connect(place) as wh:
        t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"])
        t.insert(rows(1, 2))
        moment = datetime.now(UTC)
        t.insert(rows(3))
        with metastore_of(place, timeout_seconds=0.5) as gone:  # a client that died
            timed_out = gone.open_transaction(user="gone", host="h").txn_id
        txns = wh.metastore.valid_txns()
        wh.metastore.acquire_lease(TABLE, txns, wh.metastore.valid_write_ids(TABLE, txns),
                                   ttl_seconds=0.2)
    time.sleep(1)  # the txn times out and the lease expires
    return moment, timed_out


def within_bound(read: Callable[[], T]) -> T:
    start = time.monotonic()
    result = read()
    elapsed = time.monotonic() - start
    assert elapsed < BOUND, f"a read took {elapsed:.1f} s beside the writer"
    return result


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def state_of(wh: acidstore.Warehouse, txn_id: int) -> str:
    shown = wh.show_transactions().to_pylist()
    return next(str(row["state"]) for row in shown if row["txn_id"] == txn_id)


def test_every_read_completes_while_a_writer_holds_the_metastore(place: Place) -> None:
    moment, timed_out = seed(place)
    with writer_locks_held(place):
        # the holder really stops writers: a new table waits for it, and gives up
        location = place if isinstance(place, str) else place[0]
        with metastore_of(place, busy_timeout_seconds=0.5) as impatient, acidstore.connect(
                location, metastore=impatient) as blocked, pytest.raises(MetastoreError,
                                                                          match="busy"):
            blocked.create_table("db.other", SCHEMA)
        wh = within_bound(lambda: connect(place, create=False))
        with wh:
            t = wh.table(TABLE)
            assert ids(within_bound(t.to_arrow)) == [1, 2, 3]
            stream = within_bound(t.to_batches)
            # the stream's lease is recorded (the cleaner keeps its files) meanwhile
            assert wh.show_leases().num_rows == 1
            assert ids(stream.read_all()) == [1, 2, 3]
            assert wh.show_leases().num_rows == 0
            assert ids(within_bound(lambda: t.to_arrow(as_of=1))) == [1, 2]
            assert ids(within_bound(lambda: t.to_arrow(as_of=moment))) == [1, 2]
            assert within_bound(t.snapshot).high_watermark == 2
            assert within_bound(t.history).column("write_id").to_pylist() == [1, 2]
            # not reaped: that waits for a writer, so it is left to the next one
            assert state_of(wh, timed_out) == "open"
        command = ["read", TABLE, "--json", "--warehouse"]
        command += [place] if isinstance(place, str) else [place[0], "--metastore", place[1]]
        done = within_bound(lambda: run_process(command))
        assert done.returncode == 0, done.stderr
        assert '"id": 3' in done.stdout
    with connect(place, create=False) as wh:  # the writer is gone: the next call reaps
        assert wh.table(TABLE).snapshot().high_watermark == 2
        assert state_of(wh, timed_out) == "aborted"
