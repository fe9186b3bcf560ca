"""Measured tasks, each run in a fresh child process by the harness.

A task prints one JSON object: the seconds of the measured part (imports and setup excluded),
the rows it produced, and any extra figures, plus its own peak RSS (VmHWM), so every peer is
measured the same way. The write workloads (W1-W4) and the delta-rs scans are in
``benchmarks.tasks_write``, the Spark ones (S1, S2) in ``benchmarks.tasks_spark`` (imported only
by their own children, so PySpark is not in every other task's RSS).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po

import acidstore
from acidstore.config import FLUSH_THREADS
from acidstore.format.layout import BUCKET_PREFIX, DELETE_DELTA_PREFIX, is_bucket_file, is_hidden
from acidstore.format.orc.schema import BUCKET, ORIGINAL_TRANSACTION, ROW, ROW_ID
from acidstore.format.writeids import ValidWriteIdList
from acidstore.io.immutable import set_cache_bytes
from acidstore.read.registry import load_registry
from acidstore.read.splits import Split
from benchmarks import data
from benchmarks.tasks_compact import COMPACT_TASKS
from benchmarks.tasks_import import IMPORT_TASKS
from benchmarks.tasks_ingest import INGEST_TASKS
from benchmarks.tasks_small import SMALL_TASKS
from benchmarks.tasks_write import WRITE_TASKS, Task


def _limit_files(args: dict[str, Any]) -> list[Path]:
    return sorted(Path(args["limit_dir"]).glob("*.orc"))


def noop(args: dict[str, Any]) -> dict[str, Any]:
    """Baseline: the interpreter with every library the other tasks import."""
    return {"seconds": 0.0, "rows": 0}


def limit_scan(args: dict[str, Any]) -> dict[str, Any]:
    """Plain pyarrow ORC scan of the same rows (the floor)."""
    columns = args.get("columns")
    threads = args.get("threads", 1)
    start = time.perf_counter()

    def read(path: Path) -> pa.Table:
        return po.ORCFile(str(path)).read(columns=columns)

    if threads > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            tables = list(pool.map(read, _limit_files(args)))
    else:
        tables = [read(p) for p in _limit_files(args)]
    table = pa.concat_tables(tables)
    if args.get("filter_k_lt") is not None:
        table = table.filter(pc.less(table.column("k"), args["filter_k_lt"]))
        table = table.select(args["output"])
    return {"seconds": time.perf_counter() - start, "rows": table.num_rows}


def acid_scan(args: dict[str, Any]) -> dict[str, Any]:
    """acidstore merge-on-read scan (``reader``, ``threads``, projection, filter, snapshot)."""
    start = time.perf_counter()
    scan = acidstore.scan_directory(
        args["acid_dir"], write_ids=args.get("write_ids"), columns=args.get("columns"),
        filter=args.get("filter"), reader=args.get("reader", "vectorized"),
        delete_event_limit=args.get("delete_event_limit", 10_000_000))
    scan._threads = args.get("threads", 1)
    if args.get("stream"):
        rows = sum(b.num_rows for b in scan.to_batches())
    else:
        rows = scan.to_table().num_rows
    return {"seconds": time.perf_counter() - start, "rows": rows}


#: the user fields of Hive's ``row`` struct in the generated table, and the ROW__ID columns
_ROW_FIELDS = [f"{ROW}.{name}" for name in data.SCHEMA.names]
_KEY_COLUMNS = [ORIGINAL_TRANSACTION, BUCKET, ROW_ID]


def acid_decode(args: dict[str, Any]) -> dict[str, Any]:
    """The floor of a scan of the ACID table at ``args[args["decode"]]``: pyarrow decoding
    every bucket file's bytes a reader of the table must decode, on ``threads`` threads,
    ``times`` times over (W2: ten UPDATEs each read the whole table), and nothing else (no
    directory choice, no delete applied, no ROW__ID check, no cast): the ``row`` struct's
    fields of each insert file, with its rowIds when ``keys`` (a reader needs them to apply
    deletes), and the ROW__IDs of each delete file. Beside the limit scan of the same rows in
    flat files it says what the ACID layout alone costs pyarrow."""
    root = Path(args[args["decode"]])
    files = sorted(p for p in root.rglob(f"{BUCKET_PREFIX}*") if is_bucket_file(p.name)
                   and not any(is_hidden(part) for part in p.relative_to(root).parts))
    inserts = _ROW_FIELDS + ([ROW_ID] if args.get("keys") else [])

    out = Path(args["scratch"]) / f"statement-floor-{os.getpid()}" \
        if args.get("statement") else None

    def read(path: Path, round_: int = 0) -> tuple[bool, pa.Table]:
        deletes = path.parent.name.startswith(DELETE_DELTA_PREFIX)
        table = po.ORCFile(str(path)).read(columns=_KEY_COLUMNS if deletes else inserts)
        if out is not None and not deletes:
            _statement_work(table, path, out / f"{round_}", round_)
        return deletes, table

    def flush(round_: int) -> None:
        """A round's written files flushed together, on as many threads as a commit's."""
        if out is not None:
            with ThreadPoolExecutor(max_workers=FLUSH_THREADS) as flushing:
                written = out / f"{round_}"
                list(flushing.map(_flush, [*sorted(written.iterdir()), written]))

    rows = 0
    tables: list[tuple[bool, pa.Table]] = []
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.get("threads", 2)) as pool:
        for round_ in range(args.get("times", 1)):  # W2's floor: one decode per UPDATE
            tables = []  # the previous round's tables are freed first, as a statement's are
            # a round's tables are all held to its end, as the limit scan and a reader's
            # result hold theirs (memory freed along the way is reused without faulting pages
            # in); the last round's are freed after the clock stops, as the limit scan's are
            tables = list(pool.map(read, files, [round_] * len(files)))
            flush(round_)
            rows += sum(t.num_rows for deletes, t in tables if not deletes)
    seconds = time.perf_counter() - start
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
    return {"seconds": seconds, "rows": rows, "files": len(files)}


def _statement_work(table: pa.Table, path: Path, out: Path, round_: int) -> None:
    """What W2's UPDATE must do beyond decoding, done by numpy and pyarrow alone for one
    decoded bucket file: the filter (``id % 1000 = round``, by floor division: the ids are not
    negative), then the matched rows written back as two ORC files (their ROW__IDs, and the
    rows with ``v1 + 1`` under new ROW__IDs), flushed to disk with the round's other files
    (``flush``), as a commit flushes a statement's. No directory choice, no delete applied, no
    ACID metadata, no metastore."""
    row = table.column(ROW).combine_chunks()
    ids = row.field("id").to_numpy()
    matched = np.flatnonzero(ids - (ids // 1000) * 1000 == round_)
    taken = table.take(pa.array(matched))
    new_row = taken.column(ROW).combine_chunks()
    v1 = pc.add(new_row.field("v1"), 1.0)
    fields = [new_row.field(i) for i in range(new_row.type.num_fields)]
    fields[new_row.type.get_field_index("v1")] = v1
    count = len(matched)
    keys = {"originalTransaction": pa.array(np.ones(count, np.int64)),
            "bucket": pa.array(np.zeros(count, np.int32)), ROW_ID: taken.column(ROW_ID)}
    deleted = pa.table(keys)
    inserted = pa.table({**keys, ROW_ID: pa.array(np.arange(count, dtype=np.int64)),
                         ROW: pa.StructArray.from_arrays(fields, fields=list(new_row.type))})
    out.mkdir(parents=True, exist_ok=True)
    for kind, events in (("delete", deleted), ("insert", inserted)):
        target = out / f"{kind}_{path.parent.name}_{path.name}"
        po.write_table(events, str(target))


def _flush(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def registry_bytes(args: dict[str, Any]) -> dict[str, Any]:
    """Resident bytes per delete event of the registry of the largest split."""
    scan = acidstore.scan_directory(args["acid_dir"])
    split: Split = max(scan.splits, key=lambda s: len(s.deletes))
    start = time.perf_counter()
    registry = load_registry(scan._fs, split, ValidWriteIdList.all_valid())
    assert registry is not None
    return {"seconds": time.perf_counter() - start, "rows": len(registry),
            "bytes_per_event": registry.nbytes / max(1, len(registry))}


def _spark_task(name: str) -> Task:
    def run(args: dict[str, Any]) -> dict[str, Any]:
        from benchmarks.tasks_spark import SPARK_TASKS

        return SPARK_TASKS[name](args)
    return run


TASKS: dict[str, Task] = {
    "noop": noop, "limit_scan": limit_scan, "acid_scan": acid_scan,
    "acid_decode": acid_decode, "registry_bytes": registry_bytes, **WRITE_TASKS,
    **{name: _spark_task(name) for name in ("spark_scan", "spark_change", "spark_compact")},
    **COMPACT_TASKS, **INGEST_TASKS, **SMALL_TASKS, **IMPORT_TASKS,
}


def forget_caches() -> None:
    """Empty acidstore's per-process memory (listings, small files and what was decoded from
    them, parsed names and predicates) before the measured run, so no run starts with what
    its in-process warm-up left: a user's first read of a table in a process finds nothing
    remembered, and delta-rs keeps nothing between reads to compare with. Setting the
    bound to 0 and back empties the byte-bounded caches (and, with them, the facts derived
    from their listings); the memoised functions of acidstore's modules are cleared one by
    one."""
    set_cache_bytes(set_cache_bytes(0))
    for name, module in list(sys.modules.items()):
        if name == "acidstore" or name.startswith("acidstore."):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    clear()


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM). Unlike ``ru_maxrss`` it starts afresh at
    exec, so a child does not report the memory of the parent it was forked from."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


if __name__ == "__main__":
    name, raw = sys.argv[1], sys.argv[2]
    task, params = TASKS[name], json.loads(raw)
    task(params)  # in-process warm-up: lazy imports and first-call setup are not measured
    forget_caches()
    result = task(params)
    result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result), flush=True)
    # skip interpreter teardown: delta-rs reads through a Python filesystem handler
    # (pyarrow PyFileSystem(DeltaStorageHandler), pre_buffer=True), and Arrow IO threads still
    # calling into it when the interpreter finalizes abort the process ("terminate called
    # without an active exception": ~1 run in 6 of a delta table_scan, none of acidstore's)
    os._exit(0)
