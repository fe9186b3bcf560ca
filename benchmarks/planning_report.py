"""The planning benchmark's table and figure (``benchmarks.planning``).

The table puts each store's plan times and call counts side by side per number of
partitions, so the acceptance reads off it: a one-partition read's plan time flat across
partitions, no listing at any size, and on S3 a read's requests against the files it opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.planning import Calls, Point, Results


def _fs(calls: Calls) -> str:
    return f"{calls.fs['list']}/{calls.fs['stat']}/{calls.fs['open']}"


def _requests(calls: Calls) -> str:
    if calls.requests is None:
        return "-"
    kinds = "+".join(f"{calls.requests[k]}{k[0]}" for k in ("list", "head", "get", "other")
                     if calls.requests[k])
    return f"{calls.sent} ({kinds})" if kinds else "0"


def points_table(points: Sequence[Point]) -> list[str]:
    """Markdown rows: plan times, the plans' filesystem calls (list/stat/open) and S3
    requests, and the reads' files opened and S3 requests."""
    lines = ["| store | partitions | full read: plan ms | one partition: plan ms "
             "| plans: list/stat/open | plans: S3 requests | full read: files opened "
             "| full read: S3 requests | one partition: files opened "
             "| one partition: S3 requests |",
             "|---|---:|---:|---:|---|---:|---:|---|---:|---|"]
    for p in points:
        plans = f"{_fs(p.full_plan)}, {_fs(p.one_plan)}"
        sent = "-" if p.full_plan.sent is None else f"{p.full_plan.sent}, {p.one_plan.sent}"
        lines.append(
            f"| {p.store} | {p.partitions:,} | {p.full_plan_seconds * 1e3:,.1f} "
            f"| {p.one_plan_seconds * 1e3:.2f} | {plans} | {sent} | {p.full_read.files:,} "
            f"| {_requests(p.full_read)} | {p.one_read.files} | {_requests(p.one_read)} |")
    return lines


def report(results: Results) -> str:
    """The tables (Markdown) and the acceptance's ratios."""
    lines = ["Real tables (a delta per partition, one delete delta; plans through "
             "`scan_at`, reads through `Table.to_arrow`):", "", *points_table(results.points),
             ""]
    for store in dict.fromkeys(p.store for p in results.points):
        mine = [p for p in results.points if p.store == store]
        # the acceptance compares 20 partitions with the largest table
        high = mine[-1]
        low = next((p for p in mine[:-1] if p.partitions == 20), mine[0])
        lines.append(f"{store}: one-partition plan at {high.partitions:,} partitions / at "
                     f"{low.partitions:,}: {high.one_plan_seconds / low.one_plan_seconds:.2f}x")
        listed = sum(p.full_plan.fs["list"] + p.one_plan.fs["list"] + p.full_read.fs["list"]
                     + p.one_read.fs["list"] for p in mine)
        lines.append(f"{store}: listings in all plans and reads: {listed}")
        lines += _request_fit(store, mine)
    lines += ["", "Synthetic records (100 bucket files per partition, none written; "
              "plans only):", "",
              "| partitions | files | full read: plan s | one partition: plan ms |",
              "|---:|---:|---:|---:|"]
    for r in results.records:
        lines.append(f"| {r.partitions:,} | {r.files:,} | {r.full_seconds:,.2f} "
                     f"| {r.one_seconds * 1e3:.2f} |")
    lines += ["", "W12 against deltas (1,000 rows, ten buckets, no compaction; median ms):",
              "", "| one-row INSERTs since the load | directories | UPDATE ms | DELETE ms |",
              "|---:|---:|---:|---:|"]
    for d in results.dml:
        lines.append(f"| {d.deltas} | {d.directories} | {d.update_seconds * 1e3:.1f} "
                     f"| {d.delete_seconds * 1e3:.1f} |")
    return "\n".join(lines)


def _request_fit(store: str, points: Sequence[Point]) -> list[str]:
    """S3 requests of a read as ``per_file x files + constant``, fitted on the smallest and
    the largest full read, and each read's residue from the fit."""
    reads = [r for p in points for r in (p.full_read, p.one_read) if r.sent is not None]
    if len(points) < 2 or not reads:
        return []
    first, last = points[0].full_read, points[-1].full_read
    per_file = ((last.sent or 0) - (first.sent or 0)) / (last.files - first.files)
    constant = (first.sent or 0) - per_file * first.files
    residues = sorted({round((r.sent or 0) - per_file * r.files - constant, 1) for r in reads})
    return [f"{store}: requests of a read = {per_file:.2f} x files read + {constant:.1f} "
            f"(residues over {len(reads)} reads: {residues})"]


def plot(results: Results, path: Path) -> None:
    """Left: plan time against partitions (log-log), a full and a one-partition read per
    store, and the synthetic tables' plans; right: W12 latency against the table's
    directories (the measured statements add theirs too, so not the INSERTs alone)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4), dpi=110)
    for store, marker in (("local", "o"), ("s3", "s")):
        mine = [p for p in results.points if p.store == store]
        if not mine:
            continue
        x = [p.partitions for p in mine]
        left.plot(x, [p.full_plan_seconds * 1e3 for p in mine], f"{marker}-",
                  label=f"{store}: full read")
        left.plot(x, [p.one_plan_seconds * 1e3 for p in mine], f"{marker}--",
                  label=f"{store}: one partition")
    if results.records:
        x = [r.partitions for r in results.records]
        left.plot(x, [r.full_seconds * 1e3 for r in results.records], "^:",
                  label="records, 100 files/partition: full read")
        left.plot(x, [r.one_seconds * 1e3 for r in results.records], "v:",
                  label="records, 100 files/partition: one partition")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("partitions")
    left.set_ylabel("plan time, ms (median)")
    left.set_title("Planning a read from the record")
    x = [d.directories for d in results.dml]
    right.plot(x, [d.update_seconds * 1e3 for d in results.dml], "o-", label="UPDATE")
    right.plot(x, [d.delete_seconds * 1e3 for d in results.dml], "s-", label="DELETE")
    right.set_xlabel("directories in the table (no compaction)")
    right.set_ylabel("latency, ms (median)")
    right.set_ylim(bottom=0)
    right.set_title("W12: one-row DML against deltas")
    for axes in (left, right):
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
