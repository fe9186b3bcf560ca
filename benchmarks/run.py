"""Run the benchmark suite and print a table of medians and ratios measured in one run.

    python -m benchmarks.run --rows 1000000      # quick
    python -m benchmarks.run --rows 10000000     # full

Ratios are acidstore time / peer time (below 1.0 means acidstore is faster); the targets are
those of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import (
    data,
    workloads_compact,
    workloads_import,
    workloads_ingest,
    workloads_small,
    workloads_spark,
    workloads_write,
)
from benchmarks.deltas import measure_points, plot_points, prepare_deltas, rows_of
from benchmarks.harness import Bench, measure, measure_together
from benchmarks.report import Row, render
from benchmarks.states import prepare_compacted, prepare_spark, prepare_write

ALL_TIME = "bench.t:9223372036854775807:9223372036854775807::"


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


def run(rows: int, workdir: Path, repeat: int, stripe_mb: int, only: set[str] | None,
        out: Path = Path("benchmarks/out")) -> tuple[list[Row], dict[str, Any]]:
    paths = prepare(workdir, rows, stripe_mb << 20)
    baseline = measure("noop", {}, repeat=1, warmup=0)
    results: list[Row] = []

    def want(w: str) -> bool:
        return only is None or w in only

    m = Bench.children(lambda: paths, repeat=repeat)
    write: dict[str, Any] = {}

    def write_states() -> dict[str, Any]:
        """The write states (built on first use: only W1-W6 need them)."""
        if not write:
            write.update(prepare_write(workdir / f"rows-{rows}-write", rows))
        return write

    def write_info(key: str) -> Any:
        return write_states()[key]

    mw = Bench.children(write_states, repeat=repeat)
    # a W12 task builds its own 1,000-row table: no warm-up child
    w12 = Bench.children(lambda: {"scratch": str(workdir / "w12")}, repeat=repeat, warmup=0)

    cases: list[tuple[str, Callable[[], None]]] = [
        ("W1", lambda: results.extend(workloads_write.w1(mw, stripe_mb << 20,
                                                         write_info("delta_files")))),
        ("W2", lambda: results.extend(workloads_write.w2(mw))),
        ("W3", lambda: results.extend(workloads_write.w3(mw))),
        ("W4", lambda: results.extend(workloads_write.w4(mw))),
        ("W12", lambda: results.extend(workloads_small.w12(w12) + workloads_small.w12_pile_up(
            w12))),
    ]

    limit = {"limit_dir": paths["limit_dir"]}  # the synthetic layout's rows as plain files

    def w5() -> None:
        for threads in (1, 2):
            ours, peer = m.together(("acid_scan", {"threads": threads}),
                                    ("limit_scan", {"threads": threads}))
            results.append(Row("W5", f"full scan, 10 delete deltas (synthetic), {threads} thr",
                               ours, f"limit scan, {threads} thr", peer, "<= 1.2x"))
        results.extend(workloads_write.w5_after(mw, {**limit, "threads": 2}))

    def w6() -> None:
        scan = {"columns": ["id", "v1", "k"], "filter_k_lt": 10, "output": ["id", "v1"]}
        ours, peer = m.together(("acid_scan", {"columns": ["id", "v1"], "filter": "k < 10"}),
                                ("limit_scan", scan))
        results.append(Row("W6", "SELECT id, v1 WHERE k < 10, 10 delete deltas, 1 thr", ours,
                           "limit scan+filter", peer, "<= 1.25x"))
        results.extend(workloads_write.w6_after(mw, {**limit, **scan, "threads": 2}))

    def w9() -> None:
        ours, peer = m.together(
            ("acid_scan", {"write_ids": "bench.t:1:9223372036854775807::"}), ("limit_scan", {}))
        results.append(Row("W9", "time travel to write id 1 (no deletes visible)", ours,
                           "limit scan", peer, "-"))

    def w10() -> None:
        merge, vec, fallback = m.together(
            ("acid_scan", {"reader": "merge", "stream": True}),
            ("acid_scan", {"reader": "vectorized", "stream": True}),
            ("acid_scan", {"reader": "vectorized", "stream": True,
                           "delete_event_limit": 1000}))
        # flatness: the merge holds one decoded stripe per open file, so with files of several
        # stripes its memory must not grow with the table (1 MiB stripes at N/4 and N rows)
        flat = {r: prepare(workdir, r, 1 << 20) for r in (max(1, rows // 4), rows)}
        merge_quarter, merge_full = measure_together(
            [("acid_scan", {**flat[r], "reader": "merge", "stream": True})
             for r in (max(1, rows // 4), rows)], repeat=repeat)
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

    spark: dict[str, Any] = {}

    def plain_states() -> dict[str, Any]:
        """The plain ORC copies of the write states (S1-S3, W7, W8), built on first use."""
        if not spark:
            spark.update(prepare_spark(Path(write_info("scratch")).parent, stripe_mb << 20))
        return spark

    def spark_states() -> dict[str, Any]:
        states = plain_states()  # first: it builds ``write`` when S1-S3 run alone
        return {**write, **states}

    # a Spark task: no warm-up child, as each child already runs the task once before the
    # timed run in the same JVM (JIT, Python workers, page cache)
    ms = Bench.children(spark_states, repeat=repeat, warmup=0)

    def compact_states() -> dict[str, Any]:
        """A compaction task (W7, W8): the write states, their plain copies, the stripe size."""
        states = {**plain_states(), "stripe_size": stripe_mb << 20,
                  **prepare_compacted(Path(write_info("scratch")).parent)}
        return {**write, **states}

    mc = Bench.children(compact_states, repeat=repeat)

    def plot() -> None:
        """PLOT: scan time against 1..100 deltas, compacted or not (``benchmarks.deltas``)."""
        states = prepare_deltas(workdir / f"rows-{rows}-deltas", rows, stripe_mb << 20)
        points = measure_points(Bench.children(dict, repeat=repeat), Path(states["root"]))
        results.extend(rows_of(points))
        plot_points(points, rows, out / "scan-vs-deltas.png")

    cases += [("W5", w5), ("W6", w6), ("W9", w9), ("W10", w10), ("PLOT", plot),
              ("S1", lambda: results.extend(workloads_spark.s1(ms))),
              ("S2", lambda: results.extend(workloads_spark.s2(ms))),
              ("W7", lambda: results.extend(workloads_compact.w7(mc))),
              ("W8", lambda: results.extend(workloads_compact.w8(mc, {
                  "limit_dir": plain_states()["limit_after"], "threads": 2}))),
              ("S3", lambda: results.extend(workloads_compact.s3(ms)))]

    def w11() -> None:
        txns = workloads_ingest.transactions(rows)
        ingest = workloads_ingest.prepare_ingest(workdir / f"ingest-{txns}", txns,
                                                 stripe_mb << 20)
        results.extend(workloads_ingest.w11(Bench.children(lambda: ingest, repeat=repeat), txns,
                                            ingest))

    cases.append(("W11", w11))
    cases.append(("W13", lambda: results.extend(workloads_import.w13(
        Bench.children(dict, repeat=repeat)))))
    notes = [workloads_spark.RSS_NOTE] if want("S1") or want("S2") or want("S3") else []
    info = {"baseline_rss_mb": baseline.peak_rss_mb, "notes": notes, **paths}
    started = time.perf_counter()
    for name, fn in cases:
        if want(name):
            fn()
            # the rows so far, kept after each workload: a long run that fails later (a
            # child's error, the host) still leaves what it measured
            out.mkdir(parents=True, exist_ok=True)
            (out / f"results-{rows}-partial.md").write_text(
                render(rows, results, info, time.perf_counter() - started) + "\n")
    return results, info


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
    results, info = run(args.rows, args.workdir, args.repeat, args.stripe_mb, only, args.out)
    text = render(args.rows, results, info, time.perf_counter() - start)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"results-{args.rows}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
