"""Rows of W7 (minor then major compaction after W2-W4), W8 (full scan after it) and S3
(major compaction on Spark), acidstore beside the peers of docs/benchmarks.md.

Targets as ratios acidstore / peer: W7 "major within 1.2x of limit read+write" is ``<= 1.2x``,
W8 within 1.05x of its floor (pyarrow alone decoding the compacted base's row fields,
measured in the same rounds; the limit scan's ratio is printed beside it).
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness import Bench
from benchmarks.report import Row
from benchmarks.workloads_spark import memory_note


def w7(m: Bench) -> list[Row]:
    limit, minor, major, both, delta = m.together(
        ("limit_rewrite", {}), ("acid_compact", {"kinds": ["minor"]}),
        ("acid_compact", {"kinds": ["minor", "major"], "timed": ["major"]}),
        ("acid_compact", {"kinds": ["minor", "major"]}), ("delta_optimize", {}))
    # the ratio against delta-rs is of two different amounts of work: say what delta-rs did
    files = (f"delta-rs optimize.compact considered {delta.extra.get('files_considered', 0)} "
             f"files and removed {delta.extra.get('files_removed', 0)} (its W2-W4 already "
             "rewrote every file they touched): the ratio compares unequal work")
    rss = {name: m.extra.get("compaction_rss_mb") for name, m in
           (("minor", minor), ("major", major), ("minor + major", both))}
    alone = ("peak RSS of the compactions alone (from the first timed one to the end of the "
             "last, without the task's warm-up run and read-back check): "
             + ", ".join(f"{name} {mb} MB" for name, mb in rss.items()))
    return [
        Row("W7", "minor compaction after W2-W4 (13 deltas + 12 delete deltas -> 2)", minor,
            "limit read+write, 10 files", limit, "-"),
        Row("W7", "major compaction after the minor (deletes applied, ROW__IDs kept)", major,
            "limit read+write, 10 files", limit, "<= 1.2x", note=alone),
        Row("W7", "minor + major", both, "limit read+write, 10 files", limit, "-"),
        Row("W7", "minor + major", both, "delta-rs optimize.compact (files already rewritten "
            "by W2-W4)", delta, "-", note=files),
    ]


def w8(m: Bench, limit: dict[str, Any]) -> list[Row]:
    """The scan of the compacted table beside the limit scan with arguments ``limit``."""
    ours, peer, floor = m.together(
        ("compacted_scan", {}), ("limit_scan", limit),
        ("acid_decode", {"decode": "acid_compacted", "threads": 2}))
    what = "full scan after minor + major + cleaning (Table.to_arrow)"
    return [Row("W8", what, ours, "floor: pyarrow alone decoding the compacted base's row "
                "fields, 2 thr", floor, "<= 1.05x"),
            Row("W8", what, ours, "limit scan, 2 thr", peer, "-"),
            Row("W8", "floor: the same decodes", floor, "limit scan, 2 thr", peer, "-")]


def s3(m: Bench) -> list[Row]:
    ours, peer = m.together(("spark_compact", {"engine": "acid"}),
                            ("spark_compact", {"engine": "rewrite"}))
    return [Row("S3", "Spark major compaction after W2-W4 (compact(engine='spark'))", ours,
                "Spark rewrite of the same rows", peer, "<= 1.2x",
                note=memory_note("major compaction", ours, peer))]
