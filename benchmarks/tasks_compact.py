"""Compaction workloads W7 (minor, then major, after W2-W4) and W8 (scan after it), as tasks.

Each compaction task starts from a fresh copy of the prepared ``acid_after`` / ``delta_after``
state (``tasks_write.fresh``: copied and synced before the clock starts). The peers:

- limit read+write: the rows of ``acid_after`` as ten plain ORC files (``limit_after``) read
  with pyarrow and written again as ten files with the same codec and stripe size: what
  rewriting those rows costs with no ACID work at all (the floor for a major compaction);
- delta-rs ``optimize.compact()`` of ``delta_after``: what a Delta user runs instead. Its
  copy-on-write UPDATE/DELETE/MERGE already rewrote the files they touched (W2-W4 touch every
  file), so there is little or nothing left to compact: the figure is what the call costs.

Every task reads its result back afterwards (not timed) and checks it holds the rows of
``acid_after`` (``after_rows``); with arg ``digest`` it also returns a digest of them, which the
smoke test compares across acidstore and the peers. The Spark side (S3) is in
``benchmarks.tasks_spark``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as po
from deltalake import DeltaTable

import acidstore
from acidstore.config import ORC_COMPRESSION
from benchmarks.tasks_write import TABLE, Task, delta_writer, digest, fresh
from compaction import compact


def _checked(args: dict[str, Any], what: str, after: pa.Table) -> dict[str, Any]:
    """Rows of a task's resulting table, checked against ``after_rows`` (every compaction and
    rewrite keeps exactly the rows of ``acid_after``); with arg ``digest`` also its digest."""
    if after.num_rows != int(args["after_rows"]):
        raise RuntimeError(f"{what}: {after.num_rows} rows, not {args['after_rows']}")
    return {"rows": after.num_rows, **(digest(after) if args.get("digest") else {})}


def _columns(args: dict[str, Any]) -> list[str]:
    """What a task reads back (not timed) to check its result: ``id`` for the row count, and
    ``v1`` too for a digest (only in tests: it would add to a measured run's peak RSS)."""
    return ["id", "v1"] if args.get("digest") else ["id"]


def _hwm_mb() -> float:
    """This process's peak resident set since start or the last ``_reset_hwm``."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def _reset_hwm() -> None:
    """Restart the peak resident set from the current one (Linux: clear_refs 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def acid_compact(args: dict[str, Any]) -> dict[str, Any]:
    """``kinds`` (e.g. ["minor", "major"]) run in order on a fresh copy of ``acid_after``;
    only those in ``timed`` count. Rows: the table's rows afterwards (checked unchanged).
    ``compaction_rss_mb``: the peak resident set from the first timed compaction to the end
    of the last, which the task's own peak (warm-up run and read-back check included) hides."""
    kinds, timed = list(args["kinds"]), set(args.get("timed", args["kinds"]))
    seconds, compaction_rss = 0.0, 0.0
    with fresh(args, "acid_after") as root, acidstore.connect(root) as wh:
        table = wh.table(TABLE)
        for kind in kinds:
            if kind in timed and not seconds:
                _reset_hwm()
            start = time.perf_counter()
            result = compact(table, kind)
            if kind in timed:
                seconds += time.perf_counter() - start
                compaction_rss = _hwm_mb()
            if not result.compacted:
                raise RuntimeError(f"{kind} compaction did nothing: {result.partitions}")
        after = table.to_arrow(columns=_columns(args))
    return {"seconds": seconds, "compaction_rss_mb": round(compaction_rss),
            **_checked(args, f"{'+'.join(kinds)} compaction", after)}


def limit_rewrite(args: dict[str, Any]) -> dict[str, Any]:
    """Read the ten plain ORC files of ``limit_after`` and write them again (same codec and
    stripe size as ``data.write_limit``), one after another as a compactor's buckets are."""
    scratch = Path(args["scratch"])
    scratch.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
    try:
        start = time.perf_counter()
        for path in sorted(Path(args["limit_after"]).glob("*.orc")):
            table = po.ORCFile(str(path)).read()
            po.write_table(table, str(out / path.name), compression=ORC_COMPRESSION,
                           stripe_size=int(args["stripe_size"]))
        seconds = time.perf_counter() - start
        after = pa.concat_tables(po.ORCFile(str(p)).read(columns=_columns(args))
                                 for p in sorted(out.glob("*.orc")))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"seconds": seconds, **_checked(args, "limit read+write", after)}


def delta_optimize(args: dict[str, Any]) -> dict[str, Any]:
    """delta-rs ``optimize.compact()`` on a fresh copy of ``delta_after``."""
    with fresh(args, "delta_after") as root:
        table = DeltaTable(root)
        start = time.perf_counter()
        metrics = table.optimize.compact(writer_properties=delta_writer())
        seconds = time.perf_counter() - start
        after = DeltaTable(root).to_pyarrow_table(columns=_columns(args))
    return {"seconds": seconds, **_checked(args, "delta-rs optimize", after),
            "files_considered": int(metrics.get("totalConsideredFiles", 0)),
            "files_removed": int(metrics.get("numFilesRemoved", 0))}


def compacted_scan(args: dict[str, Any]) -> dict[str, Any]:
    """W8: ``Table.to_arrow()`` of ``acid_compacted`` (one base per table, nothing to merge;
    default threads, as ``table_scan`` of W5)."""
    with acidstore.connect(args["acid_compacted"]) as wh:
        start = time.perf_counter()
        rows = wh.table(TABLE).to_arrow()
        seconds = time.perf_counter() - start
    return {"seconds": seconds, **_checked(args, "scan after compaction",
                                           rows.select(_columns(args)))}


COMPACT_TASKS: dict[str, Task] = {
    "acid_compact": acid_compact, "limit_rewrite": limit_rewrite,
    "delta_optimize": delta_optimize, "compacted_scan": compacted_scan,
}
