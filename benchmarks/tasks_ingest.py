"""W11, the streaming-ingest shape, as harness tasks: many small transactions through
``Warehouse.streaming_connection`` against delta-rs appends, and the scheduled compaction
that follows them.

The rows are the suite's table (``data.generate``) cut into transactions of ``rows_per_txn``
consecutive rows. The table is unbucketed, the shape Hive's streaming API v2 writes (it needs
no bucketing): each transaction writes one bucket file, as each delta-rs append writes one
Parquet file. Both engines start from an empty directory; only the transactions are timed.
The scans before and after the compaction reuse ``tasks_write.table_scan`` on the prepared
states of ``workloads_ingest.prepare_ingest``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

import acidstore
from benchmarks import data
from benchmarks.tasks_write import TABLE, Task, delta_writer, fresh, read_arrow
from compaction import run_once

APP_ID = "w11-ingest"
BATCH_SIZE = 10


def slices(rows: pa.Table, per_txn: int) -> list[pa.Table]:
    return [rows.slice(start, per_txn) for start in range(0, rows.num_rows, per_txn)]


def acid_ingest(root: Path, parts: list[pa.Table]) -> float:
    """Create the table at ``root`` and stream ``parts``, one transaction each (exactly-once:
    every commit carries its version); returns the seconds the transactions took."""
    with acidstore.connect(root) as wh:
        wh.create_table(TABLE, data.SCHEMA)
        with wh.streaming_connection(TABLE, app_id=APP_ID, batch_size=BATCH_SIZE) as conn:
            start = time.perf_counter()
            for version, part in enumerate(parts):
                conn.begin()
                conn.write(part)
                conn.commit(version=version)
            return time.perf_counter() - start


def ingest(args: dict[str, Any]) -> dict[str, Any]:
    """``engine`` acid: the streaming connection; delta: one ``write_deltalake(mode=
    "append")`` per transaction."""
    parts = slices(read_arrow(args["ingest_source"]), args["rows_per_txn"])
    with fresh(args, "") as root:
        if args["engine"] == "acid":
            seconds = acid_ingest(root, parts)
        else:
            start = time.perf_counter()
            for part in parts:
                write_deltalake(root, part, mode="append", writer_properties=delta_writer())
            seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": sum(p.num_rows for p in parts),
            "commits_per_s": len(parts) / seconds}


def ingest_compact(args: dict[str, Any]) -> dict[str, Any]:
    """One pass of the scheduled compaction (``run_once``: initiator, worker, cleaner with
    no retention, as ``acidstore compact --auto`` runs them) over a fresh copy of the
    ingested table; checks afterwards (untimed) that the rows are all there."""
    with fresh(args, "acid_ingested") as root, acidstore.connect(root) as wh:
        start = time.perf_counter()
        summary = run_once(wh, retention_seconds=0)
        seconds = time.perf_counter() - start
        table = wh.table(TABLE)
        rows = table.to_arrow(columns=["id"]).num_rows
        directories = sum(1 for p in Path(table.location).iterdir() if p.is_dir())
    if rows != args["ingest_rows"]:
        raise AssertionError(f"the compacted table holds {rows} rows, not "
                             f"{args['ingest_rows']}")
    return {"seconds": seconds, "rows": rows, "directories_after": directories,
            "compactions": len(summary.queued)}


INGEST_TASKS: dict[str, Task] = {"ingest": ingest, "ingest_compact": ingest_compact}
