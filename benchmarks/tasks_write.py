"""Write workloads W1-W4 and the delta-rs scan peers of W5/W6, as harness tasks.

Each write task starts from identical state: it copies a prepared directory (see
``benchmarks.states``) into a fresh temporary directory and flushes it to disk (``os.sync``)
before the clock starts, and removes the copy after it stops; only the statement(s) are timed.
The same operation functions build the prepared "after W2-W4" states, so what is scanned there
is exactly what the timed tasks do.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, WriterProperties, write_deltalake

import acidstore
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.api.table import Table
from acidstore.api.warehouse import Warehouse
from benchmarks import data

TABLE = "bench.t"
UPDATES = 10  # W2: UPDATE ... SET v1 = v1 + 1 WHERE id % 1000 = r, for r in 0..9
DELETE_PREDICATE = "id % 100 = 3"  # W3
MERGE_CONDITION = "t.id = s.id"  # W4
#: W4's variant: WHEN NOT MATCHED BY SOURCE DELETE of 0.1% of the rows the source lacks, so
#: the MERGE reads every row of the table and writes few delete events
BY_SOURCE_CONDITION = "t.id % 1000 = 7"
#: W4's second shape: a MERGE that updates one column of the matched rows (``SET v1 = s.v1``)
ONE_COLUMN = {"v1": "s.v1"}

Task = Callable[[dict[str, Any]], dict[str, Any]]


def delta_writer() -> WriterProperties:
    """delta-rs writes Parquet with zstd, the codec of the ORC files of acidstore and limit."""
    return WriterProperties(compression="ZSTD")


def read_arrow(path: str) -> pa.Table:
    """An Arrow IPC file read into memory (not memory-mapped)."""
    with pa.OSFile(path) as source:
        table: pa.Table = pa.ipc.open_file(source).read_all()
    return table


def digest(table: pa.Table) -> dict[str, Any]:
    """Row count, id sum, a hash of the sorted ids and the exact (``math.fsum``) sum of ``v1``
    of ``table`` (columns ``id`` and ``v1``): equal for two results holding the same rows in
    any order and any file layout, so tests can compare acidstore's result with a peer's
    without shipping the rows out of a child process."""
    ids = np.sort(table.column("id").to_numpy())
    v1 = table.column("v1").drop_null().to_numpy()
    return {"table_rows": table.num_rows, "id_sum": int(ids.sum()),
            "ids_sha256": hashlib.sha256(ids.astype("<i8").tobytes()).hexdigest(),
            "v1_sum": math.fsum(v1.tolist())}


# --- the operations (shared by the timed tasks and the preparation of states) ---------------------

def acid_create(wh: Warehouse) -> Table:
    return wh.create_table(TABLE, data.SCHEMA, bucket_by=["id"], buckets=data.BUCKETS)


def acid_load(table: Table, rows: pa.Table) -> int:
    return table.insert(rows).rows_inserted


def delta_load(root: Path, rows: pa.Table, target_file_size: int) -> int:
    write_deltalake(root, rows, writer_properties=delta_writer(),
                    target_file_size=target_file_size)
    return int(rows.num_rows)


def acid_updates(table: Table) -> int:
    return sum(table.update(f"id % 1000 = {r}", {"v1": "v1 + 1"}).rows_updated
               for r in range(UPDATES))


def delta_updates(table: DeltaTable) -> int:
    return sum(int(table.update(updates={"v1": "v1 + 1"}, predicate=f"id % 1000 = {r}",
                                writer_properties=delta_writer())["num_updated_rows"])
               for r in range(UPDATES))


def acid_delete(table: Table) -> int:
    return table.delete(DELETE_PREDICATE).rows_deleted


def delta_delete(table: DeltaTable) -> int:
    return int(table.delete(DELETE_PREDICATE, writer_properties=delta_writer())
               ["num_deleted_rows"])


def acid_merge(table: Table, source: pa.Table, *, by_source: bool = False,
               one_column: bool = False) -> int:
    """W4's MERGE; ``one_column``: matched rows get ``SET v1 = s.v1`` instead of ``SET *``."""
    merge = table.merge(source, MERGE_CONDITION)
    builder = (merge.when_matched_update(ONE_COLUMN) if one_column
               else merge.when_matched_update_all()).when_not_matched_insert_all()
    if by_source:
        builder = builder.when_not_matched_by_source_delete(condition=BY_SOURCE_CONDITION)
    result = builder.execute()
    return result.rows_updated + result.rows_inserted + result.rows_deleted


def delta_merge(table: DeltaTable, source: pa.Table, *, by_source: bool = False,
                one_column: bool = False) -> int:
    merge = table.merge(source, MERGE_CONDITION, source_alias="s", target_alias="t",
                        writer_properties=delta_writer())
    merger = (merge.when_matched_update(ONE_COLUMN) if one_column
              else merge.when_matched_update_all()).when_not_matched_insert_all()
    if by_source:
        merger = merger.when_not_matched_by_source_delete(predicate=BY_SOURCE_CONDITION)
    metrics = merger.execute()
    return sum(int(metrics[f"num_target_rows_{kind}"])
               for kind in ("updated", "inserted", "deleted"))


# --- fresh copies ---------------------------------------------------------------------------------

def relocate_warehouse(root: Path) -> None:
    """A copied warehouse finds its own tables (locations are relative to its root); its
    reader leases are dropped: they belong to readers of the original (Spark reads of S1
    leave leases that expire only after an hour), and would keep a cleaner from removing
    anything in the copy."""
    with sqlite3.connect(root / DEFAULT_METASTORE_FILE) as con:
        con.execute("DELETE FROM leases")
    con.close()


def copy_state(src: Path, dst: Path, *, warehouse: bool) -> None:
    shutil.copytree(src, dst)
    if warehouse:
        relocate_warehouse(dst)


@contextmanager
def fresh(args: dict[str, Any], key: str) -> Iterator[Path]:
    """A private copy of the prepared state ``args[key]`` (``None`` key: an empty directory),
    flushed to disk, removed afterwards."""
    scratch = Path(args["scratch"])
    scratch.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
    target = base / "t"
    try:
        if key:
            copy_state(Path(args[key]), target, warehouse=key.startswith("acid"))
        os.sync()
        yield target
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- timed tasks -------------------------------------------------------------------------------

def load(args: dict[str, Any]) -> dict[str, Any]:
    """W1: write the N source rows in one transaction (``engine``: acid, delta, limit: ten
    plain ORC files on every core, or floor: the rows as Hive's insert events, the same
    way)."""
    rows = read_arrow(args["source"])
    engine = args["engine"]
    with fresh(args, "") as root:
        table = acid_create(acidstore.connect(root)) if engine == "acid" else None
        start = time.perf_counter()
        if table is not None:
            acid_load(table, rows)
        elif engine == "limit":
            data.write_limit(rows, root, stripe_size=args["stripe_size"], bucketed=False)
        elif engine == "floor":
            data.write_events(rows, root, stripe_size=args["stripe_size"])
        else:
            delta_load(root, rows, args["delta_target_file_size"])
        seconds = time.perf_counter() - start
        files = sum(1 for p in root.rglob("*") if p.is_file() and (
            p.suffix in (".orc", ".parquet") or p.name.startswith("bucket_")))
    return {"seconds": seconds, "rows": rows.num_rows, "files": files}


ACID_OPS: dict[str, Callable[[Table, pa.Table | None], int]] = {
    "update": lambda t, _: acid_updates(t), "delete": lambda t, _: acid_delete(t),
    "merge": lambda t, source: acid_merge(t, _given(source)),
    "merge_by_source": lambda t, source: acid_merge(t, _given(source), by_source=True),
    "merge_one_column": lambda t, source: acid_merge(t, _given(source), one_column=True),
}
DELTA_OPS: dict[str, Callable[[DeltaTable, pa.Table | None], int]] = {
    "update": lambda t, _: delta_updates(t), "delete": lambda t, _: delta_delete(t),
    "merge": lambda t, source: delta_merge(t, _given(source)),
    "merge_by_source": lambda t, source: delta_merge(t, _given(source), by_source=True),
    "merge_one_column": lambda t, source: delta_merge(t, _given(source), one_column=True),
}


def _given(source: pa.Table | None) -> pa.Table:
    assert source is not None
    return source


def change(args: dict[str, Any]) -> dict[str, Any]:
    """W2 (``op`` update), W3 (delete), W4 (merge) on a fresh copy of the loaded table; opening
    the table (warehouse + catalog lookup, or the Delta log) is not timed, for either engine."""
    engine, op = args["engine"], args["op"]
    source = read_arrow(args["merge_source"]) if op.startswith("merge") else None
    with fresh(args, f"{engine}_loaded") as root:
        if engine == "acid":
            acid = acidstore.connect(root).table(TABLE)
            start = time.perf_counter()
            rows = ACID_OPS[op](acid, source)
        else:
            delta = DeltaTable(root)
            start = time.perf_counter()
            rows = DELTA_OPS[op](delta, source)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": rows}


def table_scan(args: dict[str, Any]) -> dict[str, Any]:
    """W5/W6 after W2-W4: acidstore ``Table.to_arrow`` or delta-rs ``to_pyarrow_table``
    (``columns``, and ``filter_k_lt`` for ``k < n``). Opening the table is timed on both
    sides (``acidstore.connect`` and the catalog lookup; ``DeltaTable()``, which reads the
    log): a user opens it before the first read either way."""
    columns, k_lt = args.get("columns"), args.get("filter_k_lt")
    if args["engine"] == "acid":
        start = time.perf_counter()
        with acidstore.connect(args["acid_after"]) as wh:
            table = wh.table(TABLE).to_arrow(
                columns=columns, filter=f"k < {k_lt}" if k_lt is not None else None)
            seconds = time.perf_counter() - start
    else:
        start = time.perf_counter()
        table = DeltaTable(args["delta_after"]).to_pyarrow_table(
            columns=columns, filters=pc.field("k") < k_lt if k_lt is not None else None)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": table.num_rows}


WRITE_TASKS: dict[str, Task] = {"load": load, "change": change, "table_scan": table_scan}
