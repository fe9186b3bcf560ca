"""Streaming ingest (``Warehouse.streaming_connection``, spec §15) in one process: batches,
the on-disk shape, aborts, exactly-once, partitions, misuse, and the scheduled compaction
keeping the delta count bounded. Real ORC files and metastores (SQLite and PostgreSQL, the
``place`` fixture); the process-level tests (a writer killed mid-batch, readers beside the
writer) are in ``test_streaming_processes.py``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest
from metastore_support import place_fixture  # noqa: F401  (the `place` fixture)
from table_workers import Place, connect

import acidstore
from acidstore.errors import InvalidInputError, MetadataChangedError, TransactionStateError
from acidstore.format.layout import ParsedBase, parse_directory
from compaction import run_once

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def rows(first: int, count: int = 3) -> pa.Table:
    ids = list(range(first, first + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def ids_of(table: acidstore.Table) -> list[int]:
    return sorted(table.to_arrow(columns=["id"]).column("id").to_pylist())


def deltas(directory: str) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith(("delta_", "base_")))


@pytest.fixture(name="wh")
def warehouse_fixture(place: Place) -> Iterator[acidstore.Warehouse]:
    with connect(place) as wh:
        wh.create_table("db.ev", SCHEMA)
        yield wh


def test_batches_open_contiguous_txns_and_each_commit_is_one_plain_delta(
        wh: acidstore.Warehouse) -> None:
    t = wh.table("db.ev")
    with wh.streaming_connection("db.ev", batch_size=3) as conn:
        committed = []
        for i in range(7):
            conn.begin()
            assert conn.remaining == 2 - i % 3
            conn.write(rows(10 * i, 2))
            conn.write(rows(10 * i + 2, 1))  # several writes: still one delta
            result = conn.commit()
            assert result.committed and result.rows_inserted == 3
            committed.append((result.txn_id, result.write_id))
        assert conn.remaining == 2  # the third batch: one used
    txns = [txn for txn, _ in committed]
    assert txns == list(range(txns[0], txns[0] + 7)) and [w for _, w in committed] == [
        1, 2, 3, 4, 5, 6, 7]
    # Hive's batch-size-1 shape, one ordinary delta per transaction
    assert deltas(t.location) == [f"delta_{w:07d}_{w:07d}_0000" for w in range(1, 8)]
    assert ids_of(t) == sorted(10 * i + k for i in range(7) for k in range(3))
    states = {x["txn_id"]: x["state"] for x in wh.show_transactions().to_pylist()}
    assert [states[txns[-1] + k] for k in (1, 2)] == ["aborted", "aborted"]  # closed unused
    assert wh.show_locks().num_rows == 0
    # Hive's reader view of the directory: every committed write id, nothing else
    snapshot = t.snapshot()
    assert acidstore.read_directory(t.location, write_ids=snapshot).num_rows == 21


def test_an_aborted_transaction_in_a_batch_leaves_nothing(wh: acidstore.Warehouse) -> None:
    t = wh.table("db.ev")
    with wh.streaming_connection("db.ev", batch_size=4) as conn:
        conn.begin()
        conn.write(rows(0))
        conn.commit()
        aborted = conn.begin()
        conn.write(rows(100))
        conn.abort()
        with pytest.raises(TransactionStateError, match="begin"):
            conn.commit()
        conn.begin()
        conn.write(rows(200))
        conn.commit()
        conn.begin()
        conn.write(rows(300))  # open when the connection closes: aborted, never written
    assert ids_of(t) == [0, 1, 2, 200, 201, 202]
    assert deltas(t.location) == ["delta_0000001_0000001_0000", "delta_0000003_0000003_0000"]
    states = {x["txn_id"]: x["state"] for x in wh.show_transactions().to_pylist()}
    assert (states[aborted], states[aborted + 2]) == ("aborted", "aborted")
    assert [h["write_id"] for h in t.history().to_pylist()] == [1, 3]


def test_exactly_once_through_app_versions(wh: acidstore.Warehouse) -> None:
    t = wh.table("db.ev")
    with wh.streaming_connection("db.ev", app_id="ingest-1", batch_size=2) as conn:
        assert conn.last_version is None
        for version in range(3):
            conn.begin()
            conn.write(rows(10 * version))
            conn.commit(version=version)
    # a restarted writer asks where to resume; a replayed version is skipped, not written
    with wh.streaming_connection("db.ev", app_id="ingest-1", batch_size=2) as again:
        assert again.last_version == 2
        again.begin()
        again.write(rows(20))
        replay = again.commit(version=2)
        assert replay.skipped and not replay.committed
        again.begin()
        again.write(rows(999))
        assert again.commit(version=1).skipped  # an older run: skipped too
        again.begin()
        again.write(rows(30))
        assert not again.commit(version=3).skipped
    assert ids_of(t) == sorted(10 * v + k for v in range(4) for k in range(3))
    assert [(a.app_id, a.version) for a in wh.metastore.app_versions("db.ev")] == [
        ("ingest-1", 3)]
    assert len(deltas(t.location)) == 4


def test_rows_are_routed_to_partitions_or_held_to_the_connections_one(
        place: Place) -> None:
    with connect(place) as wh:
        t = wh.create_table("db.p", pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                            partition_by=["dt"])
        with wh.streaming_connection("db.p", batch_size=2) as conn:
            conn.begin()
            conn.write(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "a"]}))
            assert conn.commit().partitions == ("dt=a", "dt=b")
        with wh.streaming_connection("db.p", partition={"DT": "c"}) as fixed:
            fixed.begin()
            fixed.write(pa.table({"id": [4]}))  # the partition column may be left out
            fixed.write(pa.table({"id": [5], "dt": ["c"]}))
            with pytest.raises(InvalidInputError, match="dt=a"):
                fixed.write(pa.table({"id": [6], "dt": ["a"]}))
            assert fixed.commit().partitions == ("dt=c",)
        got = t.to_arrow().sort_by("id")
        assert got.to_pydict() == {"id": [1, 2, 3, 4, 5], "dt": ["a", "b", "a", "c", "c"]}
        assert deltas(os.path.join(t.location, "dt=c")) == ["delta_0000002_0000002_0000"]


def test_misuse_is_refused_with_typed_errors(wh: acidstore.Warehouse) -> None:
    for options, message in [({"batch_size": 0}, "batch_size"),
                             ({"batch_size": 1001}, "batch_size"),
                             ({"app_id": ""}, "app_id"),
                             ({"partition": {"dt": "a"}}, "not partitioned")]:
        with pytest.raises(InvalidInputError, match=message):
            wh.streaming_connection("db.ev", **options)  # type: ignore[arg-type]
    conn = wh.streaming_connection("db.ev", app_id="a")
    with pytest.raises(TransactionStateError, match="begin"):
        conn.write(rows(0))
    conn.begin()
    with pytest.raises(TransactionStateError, match="still open"):
        conn.begin()
    with pytest.raises(InvalidInputError, match="int64"):
        conn.write(pa.table({"id": ["not a number"]}))
    conn.write(rows(0))
    with pytest.raises(InvalidInputError, match="version"):
        conn.commit()
    for bad in (-1, "7", 2**63):  # refused before the transaction or its rows are given up
        with pytest.raises(InvalidInputError, match="version"):
            conn.commit(version=bad)  # type: ignore[arg-type]
    assert conn.commit(version=0).committed
    assert wh.table("db.ev").to_arrow().num_rows == 3
    conn.begin()
    conn.write(rows(10))
    conn.close()
    conn.close()  # idempotent
    with pytest.raises(TransactionStateError, match="closed"):
        conn.begin()
    assert wh.table("db.ev").to_arrow().num_rows == 3  # the closed connection's rows are not
    states = wh.show_transactions().column("state").to_pylist()
    assert states.count("committed") == 1 and set(states) == {"aborted", "committed"}


def test_each_transaction_takes_the_schema_of_its_begin(wh: acidstore.Warehouse,
                                                          place: Place) -> None:
    """Another client's ``add_columns`` left a connection unable to commit anything: it
    checked ``write`` against the schema it had when it opened, and its commit against the
    current one, so old-shaped rows failed at commit (``SchemaMismatchError``: the new
    column is missing) and new-shaped ones at ``write`` (the new column is unknown), until
    the writer reconnected. A transaction now takes the table's schema at ``begin``; one
    whose rows were checked against a schema changed since fails at commit with
    ``MetadataChangedError`` (a ``WriteConflictError``: nothing landed), as a statement
    planned against the old schema does, and the next one writes the new columns."""
    t = wh.table("db.ev")
    with connect(place) as other, wh.streaming_connection("db.ev", batch_size=3) as conn:
        conn.begin()
        conn.write(rows(0))
        other.table("db.ev").add_columns(pa.schema([("score", pa.float64())]))
        with pytest.raises(MetadataChangedError, match=r"db\.ev"):
            conn.commit()
        assert conn.txn_id is None
        conn.begin()
        conn.write(rows(10).append_column("score", pa.array([1.5] * 3)))
        assert conn.commit().rows_inserted == 3
        conn.begin()  # the next transaction of the same batch takes it too
        conn.write(rows(20).append_column("score", pa.array([None] * 3, pa.float64())))
        conn.commit()
    assert ids_of(t) == [10, 11, 12, 20, 21, 22]
    assert sorted(t.to_arrow().column("score").to_pylist(), key=str) == [1.5] * 3 + [None] * 3


def test_the_batch_heartbeat_keeps_its_unused_transactions_alive(tmp_path: str) -> None:
    """A 1 s timeout (heartbeats every 0.5 s, one call for the whole batch): the batch's
    transactions outlive twice the timeout and still commit."""
    with acidstore.connect(tmp_path, txn_timeout=1.0) as wh:
        t = wh.create_table("db.ev", SCHEMA)
        with wh.streaming_connection("db.ev", batch_size=3) as conn:
            for i in range(3):
                conn.begin()
                conn.write(rows(10 * i))
                if i == 1:
                    time.sleep(2.0)  # an open one and an unused one wait past the timeout
                    wh.metastore.valid_txns()  # a snapshot reaps what timed out
                conn.commit()
        assert ids_of(t) == sorted(10 * i + k for i in range(3) for k in range(3))


def test_scheduled_compaction_keeps_the_delta_count_bounded(tmp_path: str) -> None:
    """200 one-row transactions, a pass of the scheduled compaction (initiator, worker,
    cleaner: ``acidstore compact --auto``) after every batch of 10: the partition never
    holds more than its threshold's worth of directories plus the compacted base, and the
    rows are the model's."""
    with acidstore.connect(tmp_path) as wh:
        t = wh.create_table("db.ev", SCHEMA)
        model: list[int] = []
        most = 0
        with wh.streaming_connection("db.ev", batch_size=10) as conn:
            for i in range(200):
                conn.begin()
                conn.write(rows(i, 1))
                conn.commit()
                model.append(i)
                if conn.remaining == 0:  # between batches: no open txn pins old deltas
                    run_once(wh, retention_seconds=0)
                    names = deltas(t.location)
                    most = max(most, len(names))
                    assert ids_of(t) == model
        # Hive's delta.num threshold is 10: at most 11 deltas wait, plus one base
        assert 10 <= most <= 12, most  # deltas do pile up to the threshold
        names = deltas(t.location)
        assert isinstance(parse_directory(names[0]), ParsedBase)
        assert ids_of(t) == model
