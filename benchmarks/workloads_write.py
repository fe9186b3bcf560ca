"""Rows of W1-W4 and of W5/W6 after the real W2-W4 (acidstore beside limit and delta-rs).

Targets are wave 2's, as ratios acidstore / peer: W2 "at least 8x faster" than delta-rs is
``<= 0.125x``, W3 "10x" ``<= 0.10x``, W4 "4x" ``<= 0.25x``; W5 within 1.2x of the limit scan
and at most 0.8x delta-rs.
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness import Bench, Measurement
from benchmarks.report import Row


def w1(m: Bench, stripe_size: int, delta_files: int) -> list[Row]:
    ours, limit, delta = m.together(("load", {"engine": "acid"}),
                                    ("load", {"engine": "limit", "stripe_size": stripe_size}),
                                    ("load", {"engine": "delta"}))
    return [
        Row("W1", "load N rows, one transaction (10 buckets)", ours,
            "limit: pyarrow ORC, 10 files", limit, "<= 1.3x"),
        Row("W1", "load N rows, one transaction (10 buckets)", ours,
            f"delta-rs write_deltalake ({delta_files} files)", delta, "<= 1.0x"),
    ]


def _change(m: Bench, op: str) -> tuple[Measurement, Measurement]:
    """acidstore's and delta-rs's ``op``, measured together."""
    ours, peer = m.together(("change", {"engine": "acid", "op": op}),
                            ("change", {"engine": "delta", "op": op}))
    return ours, peer


def w2(m: Bench) -> list[Row]:
    """W2, and its floor: each of the ten UPDATEs decodes the whole table (its 0.1% of rows
    fall in every 10,000-row group of every stripe, and an insert event carries the whole
    row), so ten decodes of the loaded table's files bound the statements from below."""
    ours, peer, floor = m.together(
        ("change", {"engine": "acid", "op": "update"}),
        ("change", {"engine": "delta", "op": "update"}),
        ("acid_decode", {"decode": "acid_loaded", "keys": True, "times": 10, "threads": 2}))
    return [Row("W2", "10 x UPDATE v1 = v1 + 1 WHERE id % 1000 = r (rows: updated)", ours,
                "delta-rs update x 10", peer, "<= 0.125x"),
            Row("W2", "floor: pyarrow alone decoding the loaded table's files ten times (row "
                "fields and rowIds), 2 thr", floor, "delta-rs update x 10", peer, "-")]


def w3(m: Bench) -> list[Row]:
    ours, peer = _change(m, "delete")
    return [Row("W3", "DELETE WHERE id % 100 = 3 (rows: deleted)", ours, "delta-rs delete", peer,
                "<= 0.10x")]


def w4(m: Bench) -> list[Row]:
    """W4, and its variant with a WHEN NOT MATCHED BY SOURCE DELETE: that clause makes the
    MERGE read every row of the table (in both engines), so it is measured beside its own
    peer, informational."""
    ours, peer = _change(m, "merge")
    by_source, by_source_peer = _change(m, "merge_by_source")
    return [Row("W4", "MERGE 1% matched (update) + 1% new (insert) (rows: changed)", ours,
                "delta-rs merge", peer, "<= 0.25x"),
            Row("W4", "the same MERGE + WHEN NOT MATCHED BY SOURCE DELETE of 0.1% of the "
                "rest (rows: changed)", by_source, "delta-rs merge, the same clauses",
                by_source_peer, "-")]


def w5_after(m: Bench, limit: dict[str, Any]) -> list[Row]:
    """Full scan of the table left by W2-W4 (``Table.to_arrow``, default threads), beside the
    limit scan with arguments ``limit`` and delta-rs's scan."""
    ours, plain, delta, floor = m.together(
        ("table_scan", {"engine": "acid"}), ("limit_scan", limit),
        ("table_scan", {"engine": "delta"}),
        ("acid_decode", {"decode": "acid_after", "keys": True, "threads": 2}))
    what = "full scan after W2-W4 (Table.to_arrow)"
    return [Row("W5", what, ours, "limit scan, 2 thr", plain, "<= 1.2x"),
            Row("W5", what, ours, "delta-rs to_pyarrow_table", delta, "<= 0.8x"),
            Row("W5", "floor: pyarrow alone decoding the same ACID files after W2-W4, 2 thr "
                "(row fields and rowIds, delete events; nothing applied)", floor,
                "limit scan, 2 thr", plain, "-")]


def w6_after(m: Bench, limit: dict[str, Any]) -> list[Row]:
    args: dict[str, Any] = {"columns": ["id", "v1"], "filter_k_lt": 10}
    ours, plain, delta = m.together(("table_scan", {"engine": "acid", **args}),
                                    ("limit_scan", limit),
                                    ("table_scan", {"engine": "delta", **args}))
    what = "SELECT id, v1 WHERE k < 10 after W2-W4 (Table.to_arrow)"
    return [Row("W6", what, ours, "limit scan+filter, 2 thr", plain, "<= 1.25x"),
            Row("W6", what, ours, "delta-rs to_pyarrow_table", delta, "<= 1.0x")]
