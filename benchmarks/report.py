"""The results table: one ``Row`` per acidstore figure beside its peer, rendered as Markdown."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import Measurement


@dataclass
class Row:
    """One line of the results table."""

    workload: str
    what: str
    ours: Measurement
    peer_name: str
    peer: Measurement | None
    target: str
    #: a footnote under the table (e.g. memory the driver's peak RSS does not include)
    note: str = ""

    def ratio(self) -> str:
        """Measured together (``harness.measure_together``): the median of the rounds' ratios
        and, over several rounds, their range; else the ratio of the two medians."""
        if self.peer is None or self.peer.seconds <= 0:
            return "-"
        rounds = self.ours.paired_ratios(self.peer)
        if rounds is None:
            return f"{self.ours.seconds / self.peer.seconds:.2f}x"
        median = statistics.median(rounds)
        if len(rounds) == 1:
            return f"{median:.2f}x"
        return f"{median:.2f}x ({min(rounds):.2f}-{max(rounds):.2f})"


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
        speed = r.ours.rows_per_s
        rate = (f"{speed / 1e6:.1f}M" if speed >= 1e6 else f"{speed / 1e3:.0f}k"
                if speed >= 1e4 else f"{speed:.0f}")
        peer_s = f"{r.peer.seconds:.3f}" if r.peer else "-"
        peer_rss = f"{r.peer.peak_rss_mb:.0f}" if r.peer else "-"
        lines.append(
            f"| {r.workload} | {r.what} | {r.ours.seconds:.3f} | {rate} | "
            f"{r.ours.peak_rss_mb:.0f} | {r.peer_name} | {peer_s} | {peer_rss} | {r.ratio()} | "
            f"{r.target} |")
    notes = [*info.get("notes", []), *(f"- {r.workload} {r.note}" for r in results if r.note)]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)
