"""Prepared states of the write workloads (built once per row count, then reused).

- ``source.arrow``: the N generated rows (W1's input); ``merge_source.arrow``: W4's source.
- ``acid_loaded`` / ``delta_loaded``: the table right after W1 (the start of W2, W3 and W4).
- ``acid_after`` / ``delta_after``: the loaded table after W2, W3 and W4 in that order (what
  W5/W6 scan against delta-rs).
- ``limit_loaded`` / ``limit_after`` (``prepare_spark``, for S1/S2): the rows of ``acid_loaded``
  / ``acid_after`` as ten plain ORC files (the limit layout: no ACID columns, same codec and
  stripe size as the insert deltas), for Spark's native reader and the Spark rewrite.
- ``acid_compacted`` (``prepare_compacted``, for W8): ``acid_after`` after a minor and a major
  compaction and a cleaner pass, so only the base is left.

delta-rs sizes files by bytes, not rows; its target file size is calibrated here so that W1
writes ten data files, like the ten bucket files of acidstore and the ten files of the limit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

import acidstore
from benchmarks import data
from benchmarks.tasks_write import (
    TABLE,
    acid_create,
    acid_delete,
    acid_load,
    acid_merge,
    acid_updates,
    copy_state,
    delta_delete,
    delta_load,
    delta_merge,
    delta_updates,
)
from compaction import Cleaner, compact


def write_arrow(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _delta_files(path: Path) -> int:
    return len(DeltaTable(path).file_uris())


def _calibrated_delta_load(rows: pa.Table, path: Path, attempts: int = 6) -> tuple[int, int]:
    """Load ``rows`` into a Delta table at ``path`` in one write whose target file size gives
    (as close as it gets to) ten files; returns (target file size, files)."""
    target = max(1 << 20, rows.nbytes // data.BUCKETS)
    best: tuple[int, int] | None = None
    for _ in range(attempts):
        if path.exists():
            shutil.rmtree(path)
        delta_load(path, rows, target)
        files = _delta_files(path)
        if best is None or abs(files - data.BUCKETS) < abs(best[1] - data.BUCKETS):
            best = (target, files)
        if files == data.BUCKETS:
            return target, files
        target = max(1 << 20, target * files // data.BUCKETS + (1 if files > data.BUCKETS
                                                               else -1) * (target >> 6))
    assert best is not None
    shutil.rmtree(path)
    delta_load(path, rows, best[0])
    return best


def prepare_write(root: Path, rows: int) -> dict[str, Any]:
    """Build (once) the write states for ``rows`` rows under ``root``; returns their paths
    and the calibrated delta-rs target file size."""
    done = root / "READY"
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        table = data.generate(rows)
        source = data.merge_source(table)
        write_arrow(table, root / "source.arrow")
        write_arrow(source, root / "merge_source.arrow")
        target, files = _calibrated_delta_load(table, root / "delta_loaded")
        with acidstore.connect(root / "acid_loaded") as wh:
            acid_load(acid_create(wh), table)
        copy_state(root / "acid_loaded", root / "acid_after", warehouse=True)
        with acidstore.connect(root / "acid_after") as wh:
            after = wh.table(TABLE)
            acid_updates(after)
            acid_delete(after)
            acid_merge(after, source)
        copy_state(root / "delta_loaded", root / "delta_after", warehouse=False)
        delta = DeltaTable(root / "delta_after")
        delta_updates(delta)
        delta_delete(delta)
        delta_merge(delta, source)
        done.write_text(json.dumps({"delta_target_file_size": target, "delta_files": files}))
    info = json.loads(done.read_text())
    paths = {name: str(root / name) for name in (
        "source.arrow", "merge_source.arrow", "acid_loaded", "delta_loaded", "acid_after",
        "delta_after")}
    return {"source": paths["source.arrow"], "merge_source": paths["merge_source.arrow"],
            **{k: v for k, v in paths.items() if not k.endswith(".arrow")},
            "scratch": str(root / "scratch"), **info}


def prepare_spark(root: Path, stripe_size: int) -> dict[str, Any]:
    """Build (once) the plain ORC copies of the write states for S1/S2 under ``root`` (after
    ``prepare_write``); returns their paths and row counts."""
    done = root / "SPARK-READY"
    if not done.exists():
        counts = {}
        for acid, plain in (("acid_loaded", "limit_loaded"), ("acid_after", "limit_after")):
            if (root / plain).exists():
                shutil.rmtree(root / plain)
            with acidstore.connect(root / acid) as wh:
                rows = wh.table(TABLE).to_arrow()
            data.write_limit(rows.sort_by("id"), root / plain, stripe_size=stripe_size)
            counts[f"{acid.split('_')[1]}_rows"] = rows.num_rows
        done.write_text(json.dumps(counts))
    return {"limit_loaded": str(root / "limit_loaded"), "limit_after": str(root / "limit_after"),
            **json.loads(done.read_text())}


def prepare_compacted(root: Path) -> dict[str, Any]:
    """Build (once) ``acid_compacted`` under ``root`` (after ``prepare_write``)."""
    target = root / "acid_compacted"
    done = root / "COMPACTED-READY"
    if not done.exists():
        if target.exists():
            shutil.rmtree(target)
        copy_state(root / "acid_after", target, warehouse=True)
        with acidstore.connect(target) as wh:
            table = wh.table(TABLE)
            for kind in ("minor", "major"):
                if not compact(table, kind).compacted:
                    raise RuntimeError(f"the {kind} compaction of {target} did nothing")
            Cleaner(wh, retention_seconds=0).run()
            left = sorted(p.name for p in Path(table.location).iterdir()
                          if not p.name.startswith(("_", ".")))
        if len(left) != 1 or not left[0].startswith("base_"):
            raise RuntimeError(f"{target} should hold one base after cleaning, not {left}")
        done.write_text("ok")
    return {"acid_compacted": str(target)}
