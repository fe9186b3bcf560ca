"""Run the benchmark suite and print a table of medians and ratios measured in one run.

    python -m benchmarks.run --rows 1000000      # quick
    python -m benchmarks.run --rows 10000000     # full

Ratios are acidstore time / peer time (below 1.0 means acidstore is faster); the targets are
those of ../shared/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.harness import Measurement, measure

ALL_TIME = "bench.t:9223372036854775807:9223372036854775807::"


@dataclass
class Row:
    """One line of the results table."""

    workload: str
    what: str
    ours: Measurement
    peer_name: str
    peer: Measurement | None
    target: str

    def ratio(self) -> str:
        if self.peer is None or self.peer.seconds <= 0:
            return "-"
        return f"{self.ours.seconds / self.peer.seconds:.2f}x"


def prepare(workdir: Path, rows: int, stripe_size: int) -> dict[str, Any]:
    """Generate (once) the ACID and limit layouts for ``rows`` rows."""
    root = workdir / f"rows-{rows}-stripe-{stripe_size >> 20}m"
    done = root / "READY"
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        table = data.generate(rows)
        data.write_limit(table, root / "limit", stripe_size=stripe_size)
        deleted = data.write_acid(table, root / "acid", stripe_size=stripe_size)
        done.write_text(str(deleted))
    return {"acid_dir": str(root / "acid"), "limit_dir": str(root / "limit"),
            "deleted": int(done.read_text())}


def run(rows: int, workdir: Path, repeat: int, stripe_mb: int, only: set[str] | None
        ) -> tuple[list[Row], dict[str, Any]]:
    paths = prepare(workdir, rows, stripe_mb << 20)
    baseline = measure("noop", {}, repeat=1, warmup=0)
    results: list[Row] = []

    def want(w: str) -> bool:
        return only is None or w in only

    def m(task: str, **args: Any) -> Measurement:
        return measure(task, {**paths, **args}, repeat=repeat)

    cases: list[tuple[str, Callable[[], None]]] = []

    def w5() -> None:
        for threads in (1, 2):
            results.append(Row("W5", f"full scan, vectorized, {threads} thread(s)",
                               m("acid_scan", threads=threads), f"limit scan, {threads} thr",
                               m("limit_scan", threads=threads), "<= 1.25x"))

    def w6() -> None:
        results.append(Row("W6", "SELECT id, v1 WHERE k < 10",
                           m("acid_scan", columns=["id", "v1"], filter="k < 10"),
                           "limit scan+filter",
                           m("limit_scan", columns=["id", "v1", "k"], filter_k_lt=10,
                             output=["id", "v1"]), "<= 1.25x"))

    def w9() -> None:
        results.append(Row("W9", "time travel to write id 1 (no deletes visible)",
                           m("acid_scan", write_ids="bench.t:1:9223372036854775807::"),
                           "limit scan", m("limit_scan"), "-"))

    def w10() -> None:
        merge = m("acid_scan", reader="merge", stream=True)
        vec = m("acid_scan", reader="vectorized", stream=True)
        fallback = m("acid_scan", reader="vectorized", stream=True, delete_event_limit=1000)
        # flatness: the merge holds one decoded stripe per open file, so with files of several
        # stripes its memory must not grow with the table (1 MiB stripes at N/4 and N rows)
        flat = {r: prepare(workdir, r, 1 << 20) for r in (max(1, rows // 4), rows)}
        merge_quarter, merge_full = (
            measure("acid_scan", {**flat[r], "reader": "merge", "stream": True}, repeat=repeat)
            for r in (max(1, rows // 4), rows))
        reg = m("registry_bytes")
        results.append(Row("W10", "heap merge (streaming) vs vectorized", merge,
                           "vectorized", vec, ">= 2M rows/s"))
        results.append(Row("W10", "vectorized, registry cap 1000 -> merge fallback", fallback,
                           "vectorized", vec, "-"))
        results.append(Row("W10", f"heap merge, 1 MiB stripes, {rows // 4:,} rows",
                           merge_quarter, f"same at {rows:,} rows", merge_full, "flat RSS"))
        results.append(Row("W10", "delete registry bytes/event "
                           f"({reg.extra['bytes_per_event']:.1f} B/event)", reg, "", None,
                           "<= 24 B"))

    cases += [("W5", w5), ("W6", w6), ("W9", w9), ("W10", w10)]
    for name, fn in cases:
        if want(name):
            fn()
    return results, {"baseline_rss_mb": baseline.peak_rss_mb, **paths}


def render(rows: int, results: list[Row], info: dict[str, Any], elapsed: float) -> str:
    lines = [
        f"Rows: {rows:,}; cores: {os.cpu_count()}; deleted rows: {info['deleted']:,}; "
        f"interpreter+imports baseline RSS {info['baseline_rss_mb']:.0f} MB; "
        f"suite wall time {elapsed:.0f} s",
        "",
        "| id | acidstore | s | rows/s | peak RSS MB | peer | peer s | peer RSS MB | ratio | "
        "target |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        peer_s = f"{r.peer.seconds:.3f}" if r.peer else "-"
        peer_rss = f"{r.peer.peak_rss_mb:.0f}" if r.peer else "-"
        lines.append(
            f"| {r.workload} | {r.what} | {r.ours.seconds:.3f} | {r.ours.rows_per_s / 1e6:.1f}M | "
            f"{r.ours.peak_rss_mb:.0f} | {r.peer_name} | {peer_s} | {peer_rss} | {r.ratio()} | "
            f"{r.target} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/acidstore-bench"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stripe-mb", type=int, default=8,
                        help="ORC stripe size of the generated files (Hive deltas: 8)")
    parser.add_argument("--workloads", default="", help="comma-separated ids, e.g. W5,W10")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out"))
    args = parser.parse_args(argv)
    only = {w.strip().upper() for w in args.workloads.split(",") if w.strip()} or None
    start = time.perf_counter()
    results, info = run(args.rows, args.workdir, args.repeat, args.stripe_mb, only)
    text = render(args.rows, results, info, time.perf_counter() - start)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"results-{args.rows}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
