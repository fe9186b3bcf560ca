"""The planning benchmark's two parts that need no store: plans over synthetic records (up
to 1,000,000 files) and W12's one-row DML latency against the number of deltas.

Synthetic records: a read planned from the metastore's record opens no file while it plans
(``read.record_plan``), so how planning grows with the files of a table can be measured on a
table whose files were never written. Writing a million ORC files would take hours; the
record of them takes seconds. The record is made through the metastore's own API, as a
writer makes it: a transaction opens, takes the table's write id, and commits one component
per partition naming its delta directory and its bucket files (names and bytes). Only the
plan is timed; reading such a table would fail on its first missing file, as it should.

W12 against deltas: a one-row UPDATE or DELETE reads the table to find its row, so before
the record it listed every delta directory and its cost grew with the deltas that piled up
between compactions. The table is W12's (1,000 generated rows, ten buckets); one-row
INSERTs pile up deltas, and at each count the latency of one-row UPDATEs and DELETEs is the
median of a few.
"""

from __future__ import annotations

import functools
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

import acidstore
from acidstore.engine.handle import handle_of
from acidstore.metastore import WriteComponent
from acidstore.read import plan_memory
from acidstore.read.scan import Scan

SYNTHETIC_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("p", pa.string())])
#: bucket files per partition of a synthetic table (its bucket count)
SYNTHETIC_BUCKETS = 100
#: bytes recorded for each synthetic bucket file
SYNTHETIC_FILE_BYTES = 4096


def partition_name(index: int) -> str:
    """Partition ``index``'s value: zero-padded, so that ``p = '00007'`` pins one."""
    return f"{index:05d}"


def median_seconds(repeat: int, step: Callable[[], object]) -> float:
    """The median wall time of ``repeat`` calls of ``step`` (a plan), each from scratch: the
    plans a process keeps between statements (``read.plan_memory``) are forgotten first, so
    each call costs what a process's first read of the table does."""
    times = []
    for _ in range(repeat):
        plan_memory.clear()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def plan(table: acidstore.Table, filter: str | None = None) -> Scan:
    """A read's plan through the public path: the snapshot, then ``scan_at`` (partitions from
    the record or those the filter pins, each partition's directories and files)."""
    handle = handle_of(table)
    txns, write_ids = handle.read_snapshot()
    return handle.scan_at(txns, write_ids, filter=filter)


def synthetic_table(wh: acidstore.Warehouse, name: str, partitions: int,
                    buckets: int = SYNTHETIC_BUCKETS) -> acidstore.Table:
    """A table of ``partitions`` partitions whose one committed write recorded ``buckets``
    bucket files in each, none of them written."""
    t = wh.create_table(name, SYNTHETIC_SCHEMA, partition_by=["p"], bucket_by=["id"],
                        buckets=buckets)
    meta = wh.metastore
    txn = meta.open_transaction(user="bench", host="bench")
    write_id = meta.allocate_write_id(txn.txn_id, t.name)
    delta = f"delta_{write_id:07d}_{write_id:07d}_0000"
    components = []
    for i in range(partitions):
        part = f"p={partition_name(i)}"
        files = tuple((f"{part}/{delta}/bucket_{b:05d}", SYNTHETIC_FILE_BYTES)
                      for b in range(buckets))
        components.append(WriteComponent(
            t.name, part, "insert", write_id, (f"{part}/{delta}",), rows_inserted=buckets,
            files=buckets, bytes=buckets * SYNTHETIC_FILE_BYTES, bucket_files=files))
    meta.commit(txn.txn_id, components)
    return t


@dataclass(frozen=True)
class SyntheticPoint:
    """Plan times of a synthetic table: a full read and a one-partition read."""

    partitions: int
    files: int
    full_seconds: float
    one_seconds: float
    one_files: int


def synthetic(partitions: Sequence[int], repeat: int, buckets: int = SYNTHETIC_BUCKETS
              ) -> list[SyntheticPoint]:
    """Plan times over synthetic records of ``partitions x buckets`` files, each table in a
    SQLite metastore of its own (as the real tables: no table's rows slow another's)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="acidstore-planning-records-") as tmp:
        for count in partitions:
            root = Path(tmp) / f"p{count}"
            with acidstore.connect(root / "wh", metastore=f"sqlite:///{root}.db") as wh:
                t = synthetic_table(wh, "bench.records", count, buckets)
                one = f"p = '{partition_name(min(7, count - 1))}'"
                planned = (len(plan(t).splits), len(plan(t, one).splits))
                if planned != (count * buckets, buckets):
                    raise RuntimeError(f"{count} synthetic partitions planned {planned} files")
                # a full plan of a million files takes a while: fewer repeats there
                full_repeat = repeat if count * buckets <= 100_000 else 1
                out.append(SyntheticPoint(
                    count, count * buckets,
                    full_seconds=median_seconds(full_repeat, functools.partial(plan, t)),
                    one_seconds=median_seconds(repeat, functools.partial(plan, t, one)),
                    one_files=planned[1]))
    return out


@dataclass(frozen=True)
class DmlPoint:
    """One-row DML latency (median) after ``deltas`` small writes since the load."""

    deltas: int
    directories: int
    update_seconds: float
    delete_seconds: float


def w12_against_deltas(deltas: Sequence[int], repeat: int) -> list[DmlPoint]:
    """W12's one-row UPDATE and DELETE on its 1,000-row table after ``deltas`` one-row
    INSERTs (cumulative; the measured statements' own deltas count too), no compaction."""
    from benchmarks.tasks_small import INSERT_BASE, ROWS, _acid_ops, _create
    from benchmarks.tasks_write import TABLE

    out = []
    with tempfile.TemporaryDirectory(prefix="acidstore-planning-w12-") as tmp:
        root = Path(tmp) / "t"
        _create("acid", root)
        run, _, _ = _acid_ops(root)
        with acidstore.connect(root) as wh:
            location = Path(wh.table(TABLE).location)
        written, key = 0, 0
        for target in sorted(deltas):
            while written < target:
                run("insert", INSERT_BASE + written)
                written += 1
            updates, removals = [], []
            for _ in range(repeat):
                # UPDATEs on even ids, DELETEs on odd ones: each finds its row
                updates.append(_timed(functools.partial(run, "update", (2 * key) % ROWS)))
                removals.append(_timed(functools.partial(run, "delete", (2 * key + 1) % ROWS)))
                key += 1
            dirs = sum(1 for p in location.iterdir()
                       if p.is_dir() and not p.name.startswith(("_", ".")))
            out.append(DmlPoint(target, dirs, statistics.median(updates),
                                statistics.median(removals)))
    return out


def _timed(step: Callable[[], object]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start
