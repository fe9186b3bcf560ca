"""Readers never wait for a writer's work, only (if at all) for a commit's short critical
section, which does no file IO.

Real processes on both backends:
- a writer holds a transaction open (files written, uncommitted, heartbeating): a read in
  another process completes, without the writer's rows;
- a writer is in its commit, reading the delete delta of a write that committed since its
  snapshot for the row-level conflict check (held there until the test lets it go): a read in
  another process completes meanwhile (the check's file reading is done before the commit
  takes the metastore's lock; it used to run under it, and SQLite readers, whose leases are
  short writes, then waited for it and failed after the 30 s busy timeout);
- connecting to a warehouse and reading its catalogue take no write lock: they complete
  while another process holds SQLite's write lock, or PostgreSQL's named metastore locks
  (where a whole leased read completes too).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from cli_support import run_process
from process_support import CONTEXT
from reader_workers import HOLD_SECONDS, hold_open_transaction, pause_in_commit_check
from table_workers import TABLE, Place, connect

import acidstore
from acidstore import Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.metastore.sql_base import LOCK_ORDER

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("salary", pa.int64()), pa.field("dt", pa.string())])
SEED = pa.Table.from_pylist([{"id": i, "name": f"n{i}", "salary": 100 * i, "dt": "d"}
                             for i in range(8)], schema=SCHEMA)


@pytest.fixture(params=["sqlite", "postgresql"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    location = str(tmp_path / "wh")
    if request.param == "postgresql":
        return location, request.getfixturevalue("postgres_server").new_store()
    return location


@pytest.fixture
def seeded(place: Place) -> Iterator[Warehouse]:
    wh = connect(place)
    t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    t.insert(SEED)
    yield wh
    wh.close()


def ids_read_now(place: Place) -> list[int]:
    """The table's ids as a new client reads them: its own connection, a leased read."""
    with connect(place, create=False) as wh:
        return sorted(wh.table(TABLE).to_arrow(columns=["id"]).column("id").to_pylist())


def state_of(wh: Warehouse, txn_id: int) -> str:
    shown = wh.show_transactions().to_pylist()
    return next(str(row["state"]) for row in shown if row["txn_id"] == txn_id)


def finish(worker: Any, queue: Any) -> tuple[Any, ...]:
    report: tuple[Any, ...] = queue.get(timeout=HOLD_SECONDS)
    worker.join(timeout=60)
    assert report[0] == "ok", report
    return report


def test_a_read_completes_while_another_process_holds_a_write_transaction_open(
        place: Place, seeded: Warehouse) -> None:
    ready, go, queue = CONTEXT.Event(), CONTEXT.Event(), CONTEXT.Queue()
    writer = CONTEXT.Process(target=hold_open_transaction, args=(place, ready, go, queue))
    writer.start()
    try:
        assert ready.wait(HOLD_SECONDS)
        status, txn_id = queue.get(timeout=30)
        assert status == "open", txn_id
        assert ids_read_now(place) == list(range(8))
        if isinstance(place, str):  # the command line, as its own process
            done = run_process(["read", TABLE, "--warehouse", place, "--json"])
            assert done.returncode == 0, done.stderr
            assert '"id": 4' in done.stdout and '"id": 100' not in done.stdout
        assert state_of(seeded, txn_id) == "open"  # the read really ran beside it
    finally:
        go.set()
    assert finish(writer, queue)[2] == "committed"
    assert ids_read_now(place) == [0, 1, 2, 3, 5, 6, 7, 100]


def test_a_read_completes_while_another_process_is_in_its_commit(
        place: Place, seeded: Warehouse) -> None:
    wrote, committed, paused, go = (CONTEXT.Event() for _ in range(4))
    queue = CONTEXT.Queue()
    writer = CONTEXT.Process(target=pause_in_commit_check,
                             args=(place, wrote, committed, paused, go, queue))
    writer.start()
    try:
        assert wrote.wait(HOLD_SECONDS)
        status, txn_id = queue.get(timeout=30)
        assert status == "open", txn_id
        # a delete of another row of the same partition commits after the writer's
        # snapshot: the writer's commit must compare the ROW__IDs both deleted
        seeded.table(TABLE).delete("id = 2")
        committed.set()
        assert paused.wait(HOLD_SECONDS)
        assert ids_read_now(place) == [0, 1, 3, 4, 5, 6, 7]
        assert state_of(seeded, txn_id) == "open"  # still in its commit
    finally:
        go.set()
    assert finish(writer, queue)[2] == "committed"  # different rows: no conflict
    assert ids_read_now(place) == [0, 3, 4, 5, 6, 7]


_HOLD_SQLITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_connecting_and_reading_the_catalogue_take_no_sqlite_write_lock(
        tmp_path: Path) -> None:
    """Another process holds the metastore's write lock, as a commit does for its critical
    section: connecting and the reads that need no lease (catalogue, snapshot, history) go on;
    connecting used to take the lock to check the schema, and waited 30 s, then failed."""
    location = tmp_path / "wh"
    with acidstore.connect(location) as wh:
        wh.create_table(TABLE, SCHEMA).insert(SEED)
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_SQLITE_LOCK,
                               str(location / DEFAULT_METASTORE_FILE)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with acidstore.connect(location, create=False) as wh:
            assert wh.tables() == [TABLE]
            t = wh.table(TABLE)
            assert t.snapshot().high_watermark == 1
            assert t.history().column("rows_inserted").to_pylist() == [8]
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0


def test_a_leased_read_takes_no_postgresql_metastore_lock(
        postgres_server: Any, tmp_path: Path) -> None:
    """Another client holds every named lock of the PostgreSQL metastore (those a commit,
    a new transaction, the compaction queue and the catalogue take): connecting and a whole
    leased read still complete."""
    import psycopg

    place = (str(tmp_path / "wh"), postgres_server.new_store())
    with connect(place) as wh:
        wh.create_table(TABLE, SCHEMA).insert(SEED)
    with psycopg.connect(place[1]) as holder:
        for lock in LOCK_ORDER:
            holder.execute(f"LOCK TABLE lock_{lock} IN EXCLUSIVE MODE")
        assert ids_read_now(place) == list(range(8))
        holder.rollback()
