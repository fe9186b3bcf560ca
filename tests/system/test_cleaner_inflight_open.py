"""The cleaner and a PostgreSQL open in flight (docs/dev/architecture.md, the gap problem).

A PostgreSQL open takes its txn id and its snapshot before its row is visible; until it
commits, the cleaner cannot see that snapshot among the open txns' ones. If an INSERT
OVERWRITE (or a compaction) commits in that window, what it hid is needed by the opening
txn: the cleaner must not remove it (with a retention of 0 nothing else protects it) until
the open's row is visible. Here a real open, in its own process, is held in flight by a
row lock its write-id allocation needs (taken by hand on a plain connection). Without the
cleaner's wait, its read failed with ``NotEnoughHistoryError`` (the directories were gone).
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from process_support import CONTEXT
from table_workers import TABLE, open_then_read

import acidstore
from benchmarks.postgres_server import PostgresServer
from compaction import Cleaner, compact


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _waiting(url: str) -> int:
    """Backends of this database waiting for a lock."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.parametrize("hider", ["insert overwrite", "major compaction"])
def test_nothing_an_open_in_flight_reads_is_cleaned(
        postgres_server: PostgresServer, tmp_path: Path, hider: str) -> None:
    url = postgres_server.new_store()
    place = (str(tmp_path / "wh"), url)
    wh = acidstore.connect(place[0], metastore=url)
    try:
        t = wh.create_table(TABLE, pa.schema([pa.field("id", pa.int64())]))
        t.insert(_rows([1, 2]))
        t.insert(_rows([3]))
        overwrite = wh.transaction() if hider == "insert overwrite" else None
        if overwrite is not None:
            overwrite.table(TABLE).insert_overwrite(_rows([10]))  # write id 3 allocated
        table_id = wh.metastore.get_table(TABLE).table_id
        holder = psycopg.connect(url)  # holds the table's write-id counter row
        try:
            holder.execute("SELECT 1 FROM next_write_id WHERE table_id = %s FOR UPDATE",
                           (table_id,))
            reports = CONTEXT.Queue()
            child = CONTEXT.Process(target=open_then_read, args=(place, reports))
            child.start()
            assert reports.get(timeout=120)[2] == "opening"
            deadline = time.monotonic() + 60
            while _waiting(url) == 0:  # its open took its id and snapshot, and waits
                assert time.monotonic() < deadline, "the open never reached the lock"
                time.sleep(0.05)
            if overwrite is not None:
                overwrite.commit()
            else:
                compact(t, "major")
            report = Cleaner(wh, retention_seconds=0).run()
            assert report.removed == []
            assert sorted(Path(p).name for p in report.kept_for_readers) == [
                "delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
        finally:
            holder.rollback()
            holder.close()
        status, _, read = reports.get(timeout=60)
        child.join(timeout=60)
        assert status == "ok", read
        assert read == [1, 2, 3]  # its snapshot predates the overwrite or compaction
        assert sorted(t.to_arrow()["id"].to_pylist()) == (
            [10] if hider == "insert overwrite" else [1, 2, 3])
        report = Cleaner(wh, retention_seconds=0).run()  # the open is over: now they go
        assert sorted(Path(p).name for p in report.removed) == [
            "delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    finally:
        wh.close()
