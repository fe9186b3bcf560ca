"""SQLite's reader leases live in a file of their own beside the metastore file (real files).

- the first lease creates ``<metastore file>-leases``; connecting and the reads that take no
  lease (the catalogue, a snapshot, the history) create nothing;
- a lease recorded in the metastore file's own ``leases`` table (by a client connected before
  the store was migrated, which leases there until it reconnects) still counts for the
  cleaner, and the lease file's ids continue after it, so an id never names two leases;
- the cleaner keeps what a lease in the lease file reads, and removes it once it is released.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa

import acidstore
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.engine.handle import handle_of
from acidstore.metastore.sqlite_leases import LEASE_FILE_SUFFIX
from compaction import Cleaner, compact

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string())])
TABLE = "db.t"


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": ["d"] * len(ids)}, schema=SCHEMA)


def test_leases_take_a_file_of_their_own_numbered_after_the_metastore_files(
        tmp_path: Path) -> None:
    root = tmp_path / "wh"
    metastore_file = root / DEFAULT_METASTORE_FILE
    lease_file = Path(str(metastore_file) + LEASE_FILE_SUFFIX)
    with acidstore.connect(root) as wh:
        t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"])
        t.insert(rows(1, 2))
        assert wh.tables() == [TABLE] and t.snapshot().high_watermark == 1
        assert t.history().num_rows == 1
        assert not lease_file.exists()  # nothing leased yet
        table_id = handle_of(wh.table(TABLE)).info.table_id
        txns = wh.metastore.valid_txns()
        write_ids = wh.metastore.valid_write_ids(TABLE, txns)
        with sqlite3.connect(metastore_file) as conn:  # as a client of schema 12 leases
            conn.execute("INSERT INTO leases (table_id, snapshot, write_ids, acquired, expires) "
                         "VALUES (?, ?, ?, 0, ?)", (table_id, str(txns), str(write_ids),
                                                    2**62))
            (legacy,) = conn.execute("SELECT lease_id FROM leases").fetchone()
        stream = t.to_batches()
        assert lease_file.exists()
        (held,) = wh.metastore.active_leases(TABLE)
        assert held.lease_id > legacy  # the lease file continues the numbering
        live = wh.metastore.live_snapshots(TABLE)
        assert [str(w) for _, w in live] == [str(write_ids)] * 2  # both leases count
        assert stream.read_all().num_rows == 2
        assert wh.metastore.active_leases(TABLE) == []
        assert len(wh.metastore.live_snapshots(TABLE)) == 1  # the legacy lease lives on


def test_the_cleaner_keeps_what_a_lease_in_the_lease_file_reads(tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"])
        for start in (1, 3, 5):
            t.insert(rows(start, start + 1))
        stream = t.to_batches()  # leased: it reads the three deltas
        assert compact(t, "major").compacted
        kept = Cleaner(wh, retention_seconds=0).run()
        assert kept.removed == [] and len(kept.kept_for_readers) == 3
        assert sorted(stream.read_all().column("id").to_pylist()) == [1, 2, 3, 4, 5, 6]
        assert len(Cleaner(wh, retention_seconds=0).run().removed) == 3  # released
