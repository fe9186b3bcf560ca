"""Rows of W11, the streaming-ingest shape: ``txns`` transactions of ``ROWS_PER_TXN`` rows
each through ``Warehouse.streaming_connection`` beside delta-rs appends (commits/s), then a
full scan before the scheduled compaction, the compaction (``run_once``), and a full scan
after it, beside the limit scan of the same rows as plain ORC files: one file read by one
thread (the layout the compaction leaves in the unbucketed table: one bucket file), and ten
files read by two threads (the suite's usual limit, for reference).

Targets as ratios acidstore / peer: "commits/s at least delta-rs's appends" is ``<= 1.0x``
(time for the same transactions), "scan after compaction within 1.2x of the limit" is
``<= 1.2x``. The full definition is 1,000 transactions of 1,000 rows (``--rows 1000000``);
smaller ``--rows`` keeps 1,000-row transactions and runs fewer of them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.orc as po

import acidstore
from acidstore.config import ORC_COMPRESSION
from benchmarks import data
from benchmarks.harness import Bench
from benchmarks.report import Row
from benchmarks.states import write_arrow
from benchmarks.tasks_ingest import acid_ingest, slices
from benchmarks.tasks_write import copy_state
from compaction import run_once

ROWS_PER_TXN = 1000
MAX_TXNS = 1000


def transactions(rows: int) -> int:
    """How many transactions W11 runs for ``--rows``: the definition's 1,000 at a million
    rows, fewer (at least 10) below."""
    return max(10, min(MAX_TXNS, rows // ROWS_PER_TXN))


def prepare_ingest(root: Path, txns: int, stripe_size: int) -> dict[str, Any]:
    """Build (once) under ``root``: the rows (``ingest_source``), their limit layout (ten
    plain ORC files), the table right after the streamed transactions (``acid_ingested``,
    written exactly as the timed task writes it) and a copy after one scheduled compaction
    pass (``acid_ingest_compacted``)."""
    done = root / "READY"
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        rows = data.generate(txns * ROWS_PER_TXN)
        write_arrow(rows, root / "source.arrow")
        data.write_limit(rows, root / "limit", stripe_size=stripe_size)
        (root / "limit_one").mkdir()
        po.write_table(rows, str(root / "limit_one" / "part-00000.orc"),
                       compression=ORC_COMPRESSION, stripe_size=stripe_size)
        acid_ingest(root / "acid_ingested", slices(rows, ROWS_PER_TXN))
        copy_state(root / "acid_ingested", root / "acid_ingest_compacted", warehouse=True)
        with acidstore.connect(root / "acid_ingest_compacted") as wh:
            run_once(wh, retention_seconds=0)
        done.write_text(json.dumps({"ingest_rows": rows.num_rows}))
    return {"ingest_source": str(root / "source.arrow"), "limit_dir": str(root / "limit"),
            "limit_one": str(root / "limit_one"),
            "acid_ingested": str(root / "acid_ingested"),
            "acid_ingest_compacted": str(root / "acid_ingest_compacted"),
            "scratch": str(root / "scratch"), "rows_per_txn": ROWS_PER_TXN,
            **json.loads(done.read_text())}


def w11(m: Bench, txns: int, paths: dict[str, Any]) -> list[Row]:
    ours, delta = m.together(("ingest", {"engine": "acid"}), ("ingest", {"engine": "delta"}))
    compacted = m("ingest_compact")
    before, after, one, limit = m.together(
        ("table_scan", {"engine": "acid", "acid_after": paths["acid_ingested"]}),
        ("table_scan", {"engine": "acid", "acid_after": paths["acid_ingest_compacted"]}),
        ("limit_scan", {"limit_dir": paths["limit_one"], "threads": 1}),
        ("limit_scan", {"threads": 2}))
    rates = (f"commits/s: acidstore {ours.extra['commits_per_s']:.0f}, delta-rs "
             f"{delta.extra['commits_per_s']:.0f} ({txns} transactions of {ROWS_PER_TXN} "
             f"rows; streaming_connection batch_size=10, every commit exactly-once with its "
             f"version); the compaction pass left "
             f"{compacted.extra.get('directories_after')} directories")
    return [
        Row("W11", f"{txns} streaming txns x {ROWS_PER_TXN} rows (streaming_connection)",
            ours, "delta-rs write_deltalake append per txn", delta, "<= 1.0x", note=rates),
        Row("W11", f"full scan before compaction ({txns} deltas)", before,
            "limit scan, 1 file, 1 thr", one, "-"),
        Row("W11", "scheduled compaction pass (run_once: initiator, worker, cleaner)",
            compacted, "", None, "-"),
        Row("W11", "full scan after the compaction (one base, one bucket file)", after,
            "limit scan, 1 file, 1 thr", one, "<= 1.2x"),
        Row("W11", "full scan after the compaction", after, "limit scan, 10 files, 2 thr",
            limit, "-"),
    ]
