"""Every expiry is judged by its owner's window, whichever client notices it (schema 9).

A txn keeps the timeout of the client that opened it (``txn_timeout`` / ``timeout_seconds``),
and a claimed compaction the stale window of the worker that claimed it. Before, the client
that happened to run the reaper applied its own: one connected with a short timeout aborted
the live txns of one with a long timeout (which heartbeats only every ``txn_timeout / 2``),
whose commit then failed. Owners run in real processes here, on both backends; a real
version-8 store (``tests/data``) is migrated and keeps its open txns.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from metastore_support import (
    Backend,
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    begin,
    component,
    new_table,
    place_fixture,  # noqa: F401  (the `place` fixture, parametrised over backends)
    states,
)
from metastore_workers import open_and_go_silent
from process_support import CONTEXT
from table_workers import TABLE, Place, connect, hold_then_commit

from acidstore.errors import TransactionAbortedError, TransactionStateError
from acidstore.metastore.sql_schema import DEFAULT_TIMEOUT, SCHEMA_VERSION, now_micros

DATA = Path(__file__).parents[1] / "data"


def test_a_txn_is_reaped_by_its_own_timeout_not_the_callers(backend: Backend) -> None:
    owner_timeout = 4.0
    store = backend.open(timeout_seconds=1.0)
    try:
        store.create_table(new_table())
        reports = CONTEXT.Queue()
        child = CONTEXT.Process(target=open_and_go_silent,
                                args=(backend.spec, "t", owner_timeout, reports))
        child.start()
        status, payload = reports.get(timeout=120)
        received = time.monotonic()
        child.join(timeout=60)
        assert status == "ok", payload
        single, first, second = payload
        short = begin(store)  # this client's own: 1 s
        time.sleep(1.5)
        snapshot = store.valid_txns()  # a snapshot builder reaps what has timed out
        assert states(store) == {single: "open", first: "open", second: "open",
                                 short: "aborted"}
        assert snapshot.is_txn_open(single) and snapshot.is_txn_aborted(short)
        # the silent client's txns are alive for every call of this one, fast paths included
        assert store.commit(single, [component(1)]).write_ids == {"default.t": 1}
        assert store.allocate_write_id(first, "t") == 2

        time.sleep(max(0.0, received + owner_timeout + 0.5 - time.monotonic()))
        store.valid_txns()
        assert states(store)[first] == states(store)[second] == "aborted"
        with pytest.raises(TransactionAbortedError, match=f"txnid:{first}"):
            store.heartbeat(first)
    finally:
        store.close()


def test_a_writer_with_a_long_timeout_commits_beside_one_with_a_short_one(
        place: Place) -> None:
    """The issue's case: the writer heartbeats every 2 s (timeout 4 s), and a busy client
    with a 1 s timeout keeps reaping meanwhile; the writer's commit still lands."""
    wh = connect(place, txn_timeout=1.0)
    try:
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                            pa.field("name", pa.string()), pa.field("salary", pa.int64()),
                            pa.field("dt", pa.string())])
        t = wh.create_table(TABLE, schema, partition_by=["dt"])
        ready = CONTEXT.Event()
        reports = CONTEXT.Queue()
        child = CONTEXT.Process(target=hold_then_commit, args=(place, 4.0, 3.0, ready, reports))
        child.start()
        assert ready.wait(timeout=120)
        mine = 0
        while child.is_alive() and reports.empty():
            t.insert(pa.table({"id": pa.array([mine], pa.int64()), "name": ["busy"],
                               "salary": pa.array([0]), "dt": ["e"]}))
            mine += 1
            time.sleep(0.2)
        status, _, payload = reports.get(timeout=60)
        child.join(timeout=60)
        assert status == "ok", payload
        assert mine >= 5  # the busy client ran through the writer's silences
        assert sorted(t.to_arrow(columns=["id"]).column("id").to_pylist()) == \
            [*range(mine), 700]
    finally:
        wh.close()


def test_a_claim_goes_stale_by_its_workers_window(backend: Backend) -> None:
    patient, hasty = backend.open(), backend.open()
    try:
        patient.create_table(new_table())
        assert patient.enqueue_compaction("t", "", "major", "test") is not None
        claimed = patient.claim_compaction("patient", 2.5)
        assert claimed is not None
        time.sleep(1.3)
        assert hasty.claim_compaction("hasty", 1.0) is None
        time.sleep(1.5)
        taken = hasty.claim_compaction("hasty", 1.0)
        assert taken is not None and taken.compaction_id == claimed.compaction_id
        assert taken.worker == "hasty"
        with pytest.raises(TransactionStateError, match="another worker took it over"):
            patient.heartbeat_compaction(claimed.compaction_id, "patient")
    finally:
        patient.close()
        hasty.close()


# --- migration from a real version-8 store ------------------------------------------------


def load_version_8(backend: Backend) -> None:
    """The store of ``tests/data/metastore_v8.*.sql``: made by acidstore at schema version 8
    (table ``default.t``; txn 1 committed an insert, write id 1; txn 2 open, write id 2
    allocated and recorded), dumped with ``iterdump`` and ``pg_dump --inserts`` (its schema
    renamed ``__SCHEMA__``, psql's ``\\restrict`` lines dropped). Txn 2's heartbeat is made
    current, as a live version-8 writer's would be."""
    kind, target = backend.spec
    text = (DATA / f"metastore_v8.{kind}.sql").read_text()
    update = "UPDATE txns SET last_heartbeat = {} WHERE state = 'open'"
    if kind == "sqlite":
        with sqlite3.connect(target) as conn:
            conn.executescript(text)
            conn.execute(update.format(now_micros()))
        conn.close()
        return
    import psycopg

    schema = target.rsplit("search_path%3D", 1)[1]
    with psycopg.connect(target, autocommit=True) as server:
        server.execute(text.replace("__SCHEMA__", schema).encode())
    with psycopg.connect(target, autocommit=True) as server:
        server.execute(update.format(now_micros()).encode())


def raw_value(backend: Backend, sql: str) -> Any:
    kind, target = backend.spec
    if kind == "sqlite":
        with sqlite3.connect(target) as conn:
            value = conn.execute(sql).fetchone()
        conn.close()
        return value
    import psycopg

    with psycopg.connect(target, autocommit=True) as server:
        return server.execute(sql.encode()).fetchone()


def test_a_version_8_store_keeps_its_open_txns_and_reaps_by_their_timeout(
        backend: Backend) -> None:
    load_version_8(backend)
    assert raw_value(backend, "SELECT value FROM meta WHERE name = 'schema_version'") == ("8",)
    store = backend.open(timeout_seconds=1.0)
    try:
        assert raw_value(backend, "SELECT value FROM meta WHERE name = 'schema_version'") \
            == (str(SCHEMA_VERSION),)
        assert raw_value(backend, "SELECT heartbeat_timeout FROM txns WHERE txn_id = 2") \
            == (DEFAULT_TIMEOUT,)
        short = begin(store)
        assert short == 3  # the id counter continues
        time.sleep(1.3)
        store.valid_txns()
        assert states(store) == {1: "committed", 2: "open", short: "aborted"}
        assert store.allocate_write_id(2, "t") == 2
        store.heartbeat(2)
        # silent for longer than its own timeout, the documented default of a migrated txn
        raw_value(backend, f"UPDATE txns SET last_heartbeat = {now_micros() - DEFAULT_TIMEOUT}"
                  f" - 1000000 WHERE txn_id = 2 RETURNING txn_id")
        store.valid_txns()
        assert states(store)[2] == "aborted"
        later = begin(store)
        assert store.allocate_write_id(later, "t") == 3
        assert store.commit(later, [component(3)]).write_ids == {"default.t": 3}
        assert [e.write_id for e in store.history("t")] == [1, 3]
    finally:
        store.close()
