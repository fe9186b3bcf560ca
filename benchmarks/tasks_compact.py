"""Compaction workloads W7 (minor, then major, after W2-W4) and W8 (scan after it), as tasks.

Each compaction task starts from a fresh copy of the prepared ``acid_after`` / ``delta_after``
state (``tasks_write.fresh``: copied and synced before the clock starts). The peers:

- limit read+write: the rows of ``acid_after`` as ten plain ORC files (``limit_after``) read
  with pyarrow and written again as ten files with the same codec and stripe size: what
  rewriting those rows costs with no ACID work at all (the floor for a major compaction);
- delta-rs ``optimize.compact()`` of ``delta_after``: what a Delta user runs instead. Its
  copy-on-write UPDATE/DELETE/MERGE already rewrote the files they touched (W2-W4 touch every
  file), so there is little or nothing left to compact: the figure is what the call costs.

The Spark side (S3) is in ``benchmarks.tasks_spark``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.orc as po
from deltalake import DeltaTable

import acidstore
from acidstore.orc.io import DEFAULT_COMPRESSION
from benchmarks.tasks_write import TABLE, Task, delta_writer, fresh
from compaction import compact


def acid_compact(args: dict[str, Any]) -> dict[str, Any]:
    """``kinds`` (e.g. ["minor", "major"]) run in order on a fresh copy of ``acid_after``;
    only those in ``timed`` count. Rows: the table's rows afterwards (checked unchanged)."""
    kinds, timed = list(args["kinds"]), set(args.get("timed", args["kinds"]))
    seconds = 0.0
    with fresh(args, "acid_after") as root:
        wh = acidstore.connect(root)
        table = wh.table(TABLE)
        for kind in kinds:
            start = time.perf_counter()
            result = compact(table, kind)
            if kind in timed:
                seconds += time.perf_counter() - start
            if not result.compacted:
                raise RuntimeError(f"{kind} compaction did nothing: {result.partitions}")
        rows = table.to_arrow(columns=["id"]).num_rows
        wh.close()
    if rows != int(args["after_rows"]):
        raise RuntimeError(f"compaction changed the row count: {rows} != {args['after_rows']}")
    return {"seconds": seconds, "rows": rows}


def limit_rewrite(args: dict[str, Any]) -> dict[str, Any]:
    """Read the ten plain ORC files of ``limit_after`` and write them again (same codec and
    stripe size), one after another as a compactor's buckets would be."""
    scratch = Path(args["scratch"])
    scratch.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
    rows = 0
    try:
        start = time.perf_counter()
        for path in sorted(Path(args["limit_after"]).glob("*.orc")):
            table = po.ORCFile(str(path)).read()
            po.write_table(table, str(out / path.name), compression=DEFAULT_COMPRESSION,
                           stripe_size=int(args["stripe_size"]))
            rows += table.num_rows
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"seconds": seconds, "rows": rows}


def delta_optimize(args: dict[str, Any]) -> dict[str, Any]:
    """delta-rs ``optimize.compact()`` on a fresh copy of ``delta_after``."""
    with fresh(args, "delta_after") as root:
        table = DeltaTable(root)
        start = time.perf_counter()
        metrics = table.optimize.compact(writer_properties=delta_writer())
        seconds = time.perf_counter() - start
        rows = DeltaTable(root).to_pyarrow_table(columns=["id"]).num_rows
    return {"seconds": seconds, "rows": rows,
            "files_considered": int(metrics.get("totalConsideredFiles", 0)),
            "files_removed": int(metrics.get("numFilesRemoved", 0))}


def compacted_scan(args: dict[str, Any]) -> dict[str, Any]:
    """W8: ``Table.to_arrow()`` of ``acid_compacted`` (one base per table, nothing to merge)."""
    wh = acidstore.connect(args["acid_compacted"])
    start = time.perf_counter()
    rows = wh.table(TABLE).to_arrow().num_rows
    seconds = time.perf_counter() - start
    wh.close()
    return {"seconds": seconds, "rows": rows}


COMPACT_TASKS: dict[str, Task] = {
    "acid_compact": acid_compact, "limit_rewrite": limit_rewrite,
    "delta_optimize": delta_optimize, "compacted_scan": compacted_scan,
}
