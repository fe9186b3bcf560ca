"""PLOT: full-scan time against the number of deltas, with and without compaction.

One table (``bench.t``, ten buckets by ``id``) is loaded with N rows and then changed by
100 small statements in turn: an UPDATE of 0.01% of the rows (``v1 = v1 + 1`` on a range of
ids, so every bucket gets a delete event file and an insert file), a DELETE of as many, an
INSERT of as many new rows. After 1, 10, 25, 50 and 100 of them the state is copied; each copy
is scanned as it is (``Table.to_arrow``: the base delta, the small deltas and delete deltas
merged on read) and after a major compaction and a cleaner pass (one base). Beside them, on
the same rows: the limit (pyarrow reading ten plain ORC files, 2 threads) and delta-rs
(``to_pyarrow_table`` of a table written once with those rows; its copy-on-write updates
would rewrite the files and leave it as many, so this is what it scans after any number of
changes, less its log).

``python -m benchmarks.run --workloads PLOT`` prints the figures and writes
``<out>/scan-vs-deltas.png`` (matplotlib, from the ``bench`` extra).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

import acidstore
from acidstore.api.table import Table
from benchmarks import data
from benchmarks.harness import Bench, Measurement
from benchmarks.report import Row
from benchmarks.tasks_write import TABLE, acid_create, acid_load, copy_state, delta_load
from compaction import Cleaner, compact

DELTAS = (1, 10, 25, 50, 100)
#: each statement changes this fraction of the rows
CHANGE_FRACTION = 1e-4


def change(table: Table, step: int, rows: int) -> None:
    """Statement ``step`` (0-based): an UPDATE, a DELETE, an INSERT in turn, each of about
    ``CHANGE_FRACTION`` of ``rows`` rows, on ids spread over the table."""
    span = max(1, round(rows * CHANGE_FRACTION))
    start = (step * 7919 * span) % max(1, rows - span)
    where = f"id BETWEEN {start} AND {start + span - 1}"
    kind = step % 3
    if kind == 0:
        table.update(where, {"v1": "v1 + 1"})
    elif kind == 1:
        table.delete(where)
    else:
        new = data.generate(span, seed=1000 + step)
        ids = pa.array(range(rows + step * span, rows + (step + 1) * span), pa.int64())
        table.insert(new.set_column(0, data.SCHEMA.field("id"), ids))


def prepare_deltas(root: Path, rows: int, stripe_size: int,
                   deltas: Sequence[int] = DELTAS) -> dict[str, Any]:
    """Build (once) under ``root`` the states of every point: ``acid_<d>`` (d statements
    after the load), ``major_<d>`` (the same, major-compacted and cleaned), ``limit_<d>``
    and ``delta_<d>`` (its rows as ten plain ORC files, and as a delta-rs table)."""
    done = root / "READY"
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        work = root / "work"
        counts: dict[str, int] = {}
        with acidstore.connect(work) as wh:
            table = acid_create(wh)
            acid_load(table, data.generate(rows))
            step = 0
            for d in sorted(deltas):
                while step < d:
                    change(table, step, rows)
                    step += 1
                copy_state(work, root / f"acid_{d}", warehouse=True)
                current = table.to_arrow().sort_by("id")
                counts[str(d)] = current.num_rows
                data.write_limit(current, root / f"limit_{d}", stripe_size=stripe_size)
                delta_load(root / f"delta_{d}", current,
                           max(1 << 20, current.nbytes // data.BUCKETS))
        shutil.rmtree(work)
        for d in deltas:
            copy_state(root / f"acid_{d}", root / f"major_{d}", warehouse=True)
            with acidstore.connect(root / f"major_{d}") as wh:
                if not compact(wh.table(TABLE), "major").compacted:
                    raise RuntimeError(f"the major compaction of {root}/major_{d} did nothing")
                Cleaner(wh, retention_seconds=0).run()
        done.write_text(json.dumps(counts))
    return {"root": str(root), "rows": json.loads(done.read_text())}


@dataclass
class Point:
    """The four scans of one number of deltas."""

    deltas: int
    merged: Measurement
    compacted: Measurement
    limit: Measurement
    delta_rs: Measurement


def measure_points(m: Bench, root: Path, deltas: Sequence[int] = DELTAS) -> list[Point]:
    """The four scans of each number of deltas, measured together (their ratios pair up)."""
    return [Point(d, *m.together(
        ("table_scan", {"engine": "acid", "acid_after": str(root / f"acid_{d}")}),
        ("table_scan", {"engine": "acid", "acid_after": str(root / f"major_{d}")}),
        ("limit_scan", {"limit_dir": str(root / f"limit_{d}"), "threads": 2}),
        ("table_scan", {"engine": "delta", "delta_after": str(root / f"delta_{d}")})))
        for d in deltas]


def rows_of(points: Sequence[Point]) -> list[Row]:
    out = []
    for p in points:
        what = f"full scan, {p.deltas} deltas after the load"
        out += [Row("PLOT", what, p.merged, "limit scan, 2 thr", p.limit, "-"),
                Row("PLOT", what, p.merged, "delta-rs", p.delta_rs, "-"),
                Row("PLOT", f"{what}, major-compacted", p.compacted, "limit scan, 2 thr",
                    p.limit, "-")]
    return out


def plot_points(points: Sequence[Point], rows: int, path: Path) -> None:
    """Scan seconds against deltas: acidstore as is and compacted, the limit, delta-rs."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    import matplotlib.pyplot as plt

    x = [p.deltas for p in points]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    series = [("acidstore, merge on read", [p.merged for p in points], "o-"),
              ("acidstore after major compaction", [p.compacted for p in points], "s-"),
              ("limit (plain ORC, pyarrow)", [p.limit for p in points], "--"),
              ("delta-rs (same rows)", [p.delta_rs for p in points], ":")]
    for label, measured, style in series:
        ax.plot(x, [s.seconds for s in measured], style, label=label)
    ax.set_xscale("log")
    ax.set_xticks(x, [str(v) for v in x])
    ax.set_xlabel("statements after the load (each an UPDATE, DELETE or INSERT of 0.01%)")
    ax.set_ylabel("full scan, seconds (median)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Full scan of {rows:,} rows against the number of deltas")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)

